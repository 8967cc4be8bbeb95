package ipam

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"contiv.dev/vpp/addrplan"
)

// persister is the allocator's store as the agent runs it: write-behind.
// Put and Delete record the wanted record of the pod (latest wins: one
// entry per pod, whatever the number of changes) and return at once; the
// handler's background writer writes them with flush. List reads etcd (only
// the writer calls it).
type persister struct {
	st      *Store
	timeout time.Duration
	kick    func()

	mu  sync.Mutex
	ops map[addrplan.PodID]pendingOp
	seq uint64
}

// pendingOp is a pod's wanted record: ip, or none when ip is invalid.
type pendingOp struct {
	ip  netip.Addr
	seq uint64
}

var _ addrplan.Store = (*persister)(nil)

func newPersister(st *Store, timeout time.Duration, kick func()) *persister {
	return &persister{st: st, timeout: timeout, kick: kick, ops: map[addrplan.PodID]pendingOp{}}
}

// List implements addrplan.Store: it reads etcd.
func (p *persister) List(ctx context.Context) (map[addrplan.PodID]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.st.List(ctx)
}

// Put implements addrplan.Store: it records the write; it never fails.
func (p *persister) Put(_ context.Context, pod addrplan.PodID, ip netip.Addr) error {
	p.record(pod, ip)
	return nil
}

// Delete implements addrplan.Store: it records the deletion; it never fails.
func (p *persister) Delete(_ context.Context, pod addrplan.PodID) error {
	p.record(pod, netip.Addr{})
	return nil
}

func (p *persister) record(pod addrplan.PodID, ip netip.Addr) {
	p.mu.Lock()
	p.seq++
	p.ops[pod] = pendingOp{ip: ip, seq: p.seq}
	p.mu.Unlock()
	p.kick()
}

// pending is the number of pods whose record waits to be written.
func (p *persister) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ops)
}

// flush writes the pending records in pod order; it stops at the first
// failure. A record changed while being written stays pending.
func (p *persister) flush(ctx context.Context) error {
	p.mu.Lock()
	ops := maps.Clone(p.ops)
	p.mu.Unlock()
	for _, pod := range slices.SortedFunc(maps.Keys(ops), addrplan.PodID.Compare) {
		op := ops[pod]
		wctx, cancel := context.WithTimeout(ctx, p.timeout)
		var err error
		if op.ip.IsValid() {
			err = p.st.Put(wctx, pod, op.ip)
		} else {
			err = p.st.Delete(wctx, pod)
		}
		cancel()
		if err != nil {
			return err
		}
		p.mu.Lock()
		if p.ops[pod].seq == op.seq {
			delete(p.ops, pod)
		}
		p.mu.Unlock()
	}
	return nil
}

// reconcile makes etcd hold exactly want (the allocator's allocations, read
// after stored): a pod whose stored record differs gets a pending write,
// unless it has one already (then a change came after want was read, and
// the pending write is the newer truth). It returns whether anything was
// added.
func (p *persister) reconcile(stored map[addrplan.PodID]string, want map[addrplan.PodID]netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	added := false
	add := func(pod addrplan.PodID, ip netip.Addr) {
		if _, ok := p.ops[pod]; ok {
			return
		}
		p.seq++
		p.ops[pod] = pendingOp{ip: ip, seq: p.seq}
		added = true
	}
	for pod, ip := range want {
		if stored[pod] != ip.String() {
			add(pod, ip)
		}
	}
	for pod := range stored {
		if _, ok := want[pod]; !ok {
			add(pod, netip.Addr{})
		}
	}
	return added
}
