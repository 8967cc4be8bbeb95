package addrplan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrExhausted: every pod address of the subnet is in use.
var ErrExhausted = errors.New("pod subnet exhausted")

// PodID identifies a pod.
type PodID struct {
	Namespace string
	Name      string
}

// String is "namespace/name".
func (p PodID) String() string { return p.Namespace + "/" + p.Name }

// Compare orders pod IDs by namespace, then name.
func (p PodID) Compare(q PodID) int {
	if c := strings.Compare(p.Namespace, q.Namespace); c != 0 {
		return c
	}
	return strings.Compare(p.Name, q.Name)
}

// Store keeps a node's allocations across restarts. Values are addresses in
// text form; the Allocator checks them.
type Store interface {
	// List returns every stored allocation.
	List(ctx context.Context) (map[PodID]string, error)
	// Put stores (or replaces) the allocation of pod.
	Put(ctx context.Context, pod PodID, ip netip.Addr) error
	// Delete removes the allocation of pod; a missing one is no error.
	Delete(ctx context.Context, pod PodID) error
}

// AllocatorParams configures an Allocator.
type AllocatorParams struct {
	// Subnet is this node's pod subnet (Plan.PodSubnet).
	Subnet netip.Prefix
	// Store persists allocations; required.
	Store Store
	// Grace keeps a fresh allocation from being released by Sync before
	// the reflector had time to mirror its pod (the CNI allocates first).
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Allocator assigns pod IPs from one subnet. Addresses are handed out
// round-robin (a released address is reused only after the search wraps),
// skipping the network address, the gateway (host 1), the NAT loopback and
// the last address. It is safe for concurrent use.
type Allocator struct {
	subnet      netip.Prefix
	first, last netip.Addr // the pod range
	capacity    uint64
	store       Store
	grace       time.Duration
	now         func() time.Time
	log         *slog.Logger

	mu     sync.Mutex
	byPod  map[PodID]allocation
	byIP   map[netip.Addr]PodID
	cursor netip.Addr // the last address handed out
}

type allocation struct {
	ip    netip.Addr
	since time.Time
}

// NewAllocator returns an allocator holding the allocations in p.Store.
// Stored values that are not an address of the pod range, or that repeat
// another pod's address, are left out (logged); Sync removes them from the
// store.
func NewAllocator(ctx context.Context, p AllocatorParams) (*Allocator, error) {
	if !p.Subnet.IsValid() || p.Subnet != p.Subnet.Masked() {
		return nil, fmt.Errorf("pod subnet %s: not a network: %w", p.Subnet, ErrInvalidConfig)
	}
	if hostBits := p.Subnet.Addr().BitLen() - p.Subnet.Bits(); hostBits < minPodHostBits {
		return nil, fmt.Errorf("pod subnet %s: fewer than %d host bits: %w", p.Subnet, minPodHostBits, ErrInvalidConfig)
	}
	if p.Store == nil {
		return nil, errors.New("ipam: allocator needs a store")
	}
	a := &Allocator{
		subnet:   p.Subnet,
		first:    p.Subnet.Addr().Next().Next(),
		last:     lastAddr(p.Subnet).Prev().Prev(),
		capacity: hostCount(p.Subnet, math.MaxUint64) - 4,
		store:    p.Store,
		grace:    p.Grace,
		now:      p.Now,
		log:      p.Logger,
		byPod:    map[PodID]allocation{},
		byIP:     map[netip.Addr]PodID{},
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.cursor = a.first.Prev()
	stored, err := a.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("ipam: load allocations: %w", err)
	}
	now := a.now()
	pods := slices.SortedFunc(maps.Keys(stored), PodID.Compare)
	for _, pod := range pods {
		ip, err := a.check(stored[pod])
		if err == nil {
			if other, dup := a.byIP[ip]; dup {
				err = fmt.Errorf("address %s already belongs to pod %s", ip, other)
			}
		}
		if err != nil {
			a.log.Warn("ipam: stored allocation ignored", "pod", pod.String(), "err", err)
			continue
		}
		a.byPod[pod] = allocation{ip: ip, since: now}
		a.byIP[ip] = pod
		if ip.Compare(a.cursor) > 0 {
			a.cursor = ip
		}
	}
	return a, nil
}

// check parses a stored address and checks it belongs to the pod range.
func (a *Allocator) check(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("stored value %q: %w", s, err)
	}
	if !a.subnet.Contains(ip) || ip.Compare(a.first) < 0 || ip.Compare(a.last) > 0 {
		return netip.Addr{}, fmt.Errorf("address %s is not a pod address of %s", ip, a.subnet)
	}
	return ip, nil
}

// Subnet is the subnet addresses come from.
func (a *Allocator) Subnet() netip.Prefix { return a.subnet }

// Allocate returns pod's address, assigning and storing one if the pod has
// none. It wraps ErrExhausted when no address is free.
func (a *Allocator) Allocate(ctx context.Context, pod PodID) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al, ok := a.byPod[pod]; ok {
		return al.ip, nil
	}
	if uint64(len(a.byIP)) >= a.capacity {
		return netip.Addr{}, fmt.Errorf("pod %s: all %d pod addresses of %s in use: %w", pod, a.capacity, a.subnet, ErrExhausted)
	}
	ip := a.cursor
	for {
		ip = ip.Next()
		if ip.Compare(a.last) > 0 {
			ip = a.first
		}
		if _, used := a.byIP[ip]; !used {
			break
		}
	}
	if err := a.store.Put(ctx, pod, ip); err != nil {
		return netip.Addr{}, fmt.Errorf("pod %s: store address %s: %w", pod, ip, err)
	}
	a.byPod[pod] = allocation{ip: ip, since: a.now()}
	a.byIP[ip] = pod
	a.cursor = ip
	a.log.Debug("ipam: allocated", "pod", pod.String(), "ip", ip)
	return ip, nil
}

// Lookup returns pod's address, if it has one.
func (a *Allocator) Lookup(pod PodID) (netip.Addr, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	al, ok := a.byPod[pod]
	return al.ip, ok
}

// Allocations returns a copy of every allocation.
func (a *Allocator) Allocations() map[PodID]netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[PodID]netip.Addr, len(a.byPod))
	for pod, al := range a.byPod {
		out[pod] = al.ip
	}
	return out
}

// Release frees pod's address. A pod without one is no error. If the store
// refuses, the allocation is kept (Sync retries).
func (a *Allocator) Release(ctx context.Context, pod PodID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.release(ctx, pod)
}

func (a *Allocator) release(ctx context.Context, pod PodID) error {
	al, ok := a.byPod[pod]
	if !ok {
		return nil
	}
	if err := a.store.Delete(ctx, pod); err != nil {
		return fmt.Errorf("pod %s: release %s: %w", pod, al.ip, err)
	}
	delete(a.byPod, pod)
	delete(a.byIP, al.ip)
	a.log.Debug("ipam: released", "pod", pod.String(), "ip", al.ip)
	return nil
}

// Sync releases the addresses of pods for which live is false (unless they
// were allocated less than the grace period ago) and makes the store equal
// to the allocations: missing or different records are written, foreign
// ones deleted. It returns every failure; what succeeded stays done.
func (a *Allocator) Sync(ctx context.Context, live func(PodID) bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	errs := a.prune(ctx, live)
	stored, err := a.store.List(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("ipam: list allocations: %w", err))...)
	}
	for pod, al := range a.byPod {
		if stored[pod] != al.ip.String() {
			if err := a.store.Put(ctx, pod, al.ip); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: restore address %s: %w", pod, al.ip, err))
			}
		}
	}
	for pod := range stored {
		if _, ok := a.byPod[pod]; !ok {
			if err := a.store.Delete(ctx, pod); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: delete stale record: %w", pod, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Prune releases the addresses of pods for which live is false, unless they
// were allocated less than the grace period ago: Sync without the store's
// repair (it reads nothing from the store). It returns every failure.
func (a *Allocator) Prune(ctx context.Context, live func(PodID) bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.prune(ctx, live)...)
}

func (a *Allocator) prune(ctx context.Context, live func(PodID) bool) []error {
	var errs []error
	now := a.now()
	for _, pod := range slices.SortedFunc(maps.Keys(a.byPod), PodID.Compare) {
		if !live(pod) && now.Sub(a.byPod[pod].since) >= a.grace {
			if err := a.release(ctx, pod); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
