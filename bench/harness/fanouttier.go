package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// tierParams configure the proxy-tier figure: K agents against one etcd
// holding W(n), directly and through a tier of gRPC proxies.
type tierParams struct {
	n int
	// ks are the numbers of real agents; light the totals reached beyond
	// the largest of ks with lightweight watchers (each a client watching
	// what an agent watches and decoding nothing) beside the real agents.
	ks, light []int
	proxies   int
	changes   int // per K
	fast      bool
	log       *slog.Logger
}

// tierLevel is the figure at one K in one mode.
type tierLevel struct {
	k, real int // watchers in all; how many of them are real agents
	// lat is every real agent's time from just before a put to the end
	// of its apply (its VPP calls issued); last is, per change, the time
	// until the last of all K had it (a real agent's apply or a
	// lightweight watcher's receipt).
	lat, last []time.Duration
	// etcdCPU and proxyCPU are each process's CPU per change; etcdTx the
	// bytes etcd sent per change to its clients (agents, or proxies).
	etcdCPU  time.Duration
	proxyCPU []time.Duration
	etcdTx   float64
	// etcdHeap and proxyHeap are live heaps after two collections;
	// watchings the watches etcd holds.
	etcdHeap  uint64
	proxyHeap []uint64
	watchings int64
	// missed counts the receipts lightweight watchers had not made a
	// minute after a put (the change's wait then ends).
	missed int
}

// tierRun is one run of the figure.
type tierRun struct {
	direct, proxied []tierLevel
	// putCPU is etcd's CPU per change with nobody watching.
	putCPU time.Duration
	// stopped tells why a larger K was not measured ("" when all were).
	stopped string
}

// measureTier starts etcd in a process of its own, loads W(n), measures
// the puts with nobody watching, then grows agents (and lightweight
// watchers) to each K connected to etcd directly, and again connected to
// p.proxies proxies (each its own process; agent i uses proxy i mod P).
func measureTier(ctx context.Context, env *nodeEnv, p tierParams) (*tierRun, error) {
	dir, err := os.MkdirTemp("", "contiv-bench-tier-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fast := "0"
	if p.fast {
		fast = "1"
	}
	ec, err := startChild(roleEtcd, childDirEnv+"="+dir, childFastEnv+"="+fast)
	if err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	defer ec.close()
	cli, err := etcd.NewClient(ctx, etcd.ClientParams{Endpoints: []string{ec.endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	defer cli.Close()
	w := workload.New(p.n)
	if err := load(ctx, cli, w); err != nil {
		return nil, fmt.Errorf("tier: loading W(%d) into etcd: %w", p.n, err)
	}
	t := &tier{p: p, env: env, etcd: ec, cli: cli, seq: changeSeq(w), table: env.podTable(w)}
	w = nil
	out := &tierRun{}
	// The puts' own cost, and etcd's background, with nobody watching.
	if _, err := ec.stats("heap"); err != nil {
		return nil, err
	}
	c0, err := ec.stats("cpu")
	if err != nil {
		return nil, err
	}
	for range p.changes {
		if err := t.put(ctx); err != nil {
			return nil, err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	c1, err := ec.stats("cpu")
	if err != nil {
		return nil, err
	}
	out.putCPU = time.Duration(c1.CPUNS-c0.CPUNS) / time.Duration(max(p.changes, 1))

	p.log.Info("tier: direct", "ks", p.ks, "light", p.light)
	if out.direct, out.stopped, err = t.mode(ctx, []string{ec.endpoint}); err != nil {
		return nil, fmt.Errorf("tier, direct: %w", err)
	}
	eps := make([]string, 0, p.proxies)
	for range p.proxies {
		pc, err := startChild(roleProxy, childEtcdEnv+"="+ec.endpoint)
		if err != nil {
			return nil, fmt.Errorf("tier: %w", err)
		}
		defer pc.close()
		t.proxies = append(t.proxies, pc)
		eps = append(eps, pc.endpoint)
	}
	p.log.Info("tier: through proxies", "p", p.proxies, "ks", p.ks, "light", p.light)
	var stopped string
	if out.proxied, stopped, err = t.mode(ctx, eps); err != nil {
		return nil, fmt.Errorf("tier, %d proxies: %w", p.proxies, err)
	}
	if out.stopped == "" {
		out.stopped = stopped
	}
	return out, nil
}

// tier is one run's etcd, proxies and change sequence.
type tier struct {
	p       tierParams
	env     *nodeEnv
	etcd    *child
	proxies []*child
	cli     *clientv3.Client
	seq     []*kubestate.EndpointSlice
	next    int
	table   tagTable
}

// put writes the next change, waiting for nobody.
func (t *tier) put(ctx context.Context) error {
	s := t.seq[t.next%len(t.seq)]
	t.next++
	val, err := kubestate.Encode(s)
	if err != nil {
		return err
	}
	if _, err := t.cli.Put(ctx, s.Key().String(), string(val)); err != nil {
		return fmt.Errorf("etcd put: %w", err)
	}
	return nil
}

// mode grows agents connected to endpoints (agent i to endpoint i mod
// len) to each K, then lightweight watchers beside them, measuring each K.
// It returns the levels measured and, when it stopped early for memory,
// why.
func (t *tier) mode(ctx context.Context, endpoints []string) ([]tierLevel, string, error) {
	var rx atomic.Int64 // what the agents' and watchers' connections read
	dial := func(ctx context.Context, i int) (*clientv3.Client, error) {
		return countingClient(ctx, endpoints[i%len(endpoints)], &rx)
	}
	maxReal := slices.Max(t.p.ks)
	set := &fanoutSet{env: t.env, dial: dial, table: t.table, out: make(chan time.Time, maxReal)}
	defer set.close()
	light := &lightSet{
		dial: func(ctx context.Context, i int) (*clientv3.Client, error) { return dial(ctx, maxReal+i) },
		got:  make(chan receipt, slices.Max(append(t.p.light, maxReal))),
	}
	defer light.close()

	limit := int64(min(runtimeSys()+availableMemory()-min(availableMemory(), fanoutReserve), math.MaxInt64))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	// The growth per agent is measured from what the process held before
	// the first (a previous figure's agents collected).
	runtime.GC()
	base := liveHeap()
	fits := func(more int) bool {
		n := len(set.agents)
		if n == 0 {
			return true
		}
		live := liveHeap()
		per := float64(live-min(live, base)) / float64(n)
		return float64(live)+per*float64(more) < 0.9*float64(limit)
	}
	var levels []tierLevel
	for _, k := range slices.Sorted(slices.Values(t.p.ks)) {
		t.p.log.Info("tier: starting agents", "k", k, "endpoints", len(endpoints))
		if err := set.grow(ctx, k, fits); err != nil {
			if errors.Is(err, errFanoutMemory) {
				t.p.log.Warn("tier: stopping early", "err", err)
				return levels, err.Error(), nil
			}
			return nil, "", err
		}
		lv, err := t.level(ctx, set, light, &rx, len(endpoints) == 1)
		if err != nil {
			return nil, "", fmt.Errorf("k=%d: %w", k, err)
		}
		levels = append(levels, lv)
	}
	for _, k := range slices.Sorted(slices.Values(t.p.light)) {
		if k <= len(set.agents) {
			continue
		}
		t.p.log.Info("tier: lightweight watchers", "k", k, "real", len(set.agents))
		rev, err := t.cli.Get(ctx, "health")
		if err != nil {
			return nil, "", err
		}
		if err := light.grow(ctx, k-len(set.agents)-len(light.clis), rev.Header.Revision+1); err != nil {
			return nil, "", err
		}
		lv, err := t.level(ctx, set, light, &rx, len(endpoints) == 1)
		if err != nil {
			return nil, "", fmt.Errorf("k=%d: %w", k, err)
		}
		levels = append(levels, lv)
	}
	return levels, "", nil
}

// level measures the current K: heaps, then t.p.changes changes written
// one at a time, each waited for at every agent and watcher. Two changes
// before, not measured, let every watch be set up (and a proxy coalesce
// its watches). direct tells that the clients' reads are etcd's sends.
func (t *tier) level(ctx context.Context, set *fanoutSet, light *lightSet, rx *atomic.Int64, direct bool) (tierLevel, error) {
	lv := tierLevel{k: len(set.agents) + len(light.clis), real: len(set.agents)}
	for range 2 {
		_, _, missed, err := t.change(ctx, set, light)
		if err != nil {
			return lv, err
		}
		lv.missed += missed
	}
	if direct {
		// An agent creates its watches one after another and applies a
		// change once the slices' watch runs: wait until etcd holds
		// every agent's and watcher's (10 s at most).
		want := int64(len(kubestate.Resources) * lv.k)
		for deadline := time.Now().Add(10 * time.Second); ; {
			es, err := t.etcd.stats("watchings")
			if err != nil {
				return lv, err
			}
			if es.Watchings >= want || time.Now().After(deadline) {
				break
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return lv, err
			}
		}
	}
	es, err := t.etcd.stats("heap")
	if err != nil {
		return lv, err
	}
	lv.etcdHeap, lv.watchings = es.HeapBytes, es.Watchings
	for _, pc := range t.proxies {
		ps, err := pc.stats("heap")
		if err != nil {
			return lv, err
		}
		lv.proxyHeap = append(lv.proxyHeap, ps.HeapBytes)
	}
	e0, p0, err := t.cpu()
	if err != nil {
		return lv, err
	}
	rx0 := rx.Load()
	for range t.p.changes {
		lat, last, missed, err := t.change(ctx, set, light)
		if err != nil {
			return lv, err
		}
		lv.missed += missed
		lv.lat = append(lv.lat, lat...)
		lv.last = append(lv.last, last)
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return lv, err
		}
	}
	e1, p1, err := t.cpu()
	if err != nil {
		return lv, err
	}
	n := time.Duration(max(t.p.changes, 1))
	lv.etcdCPU = time.Duration(e1.CPUNS-e0.CPUNS) / n
	var tx int64
	for i := range p1 {
		lv.proxyCPU = append(lv.proxyCPU, time.Duration(p1[i].CPUNS-p0[i].CPUNS)/n)
		tx += p1[i].RxBytes - p0[i].RxBytes
	}
	if direct {
		tx = rx.Load() - rx0
	}
	lv.etcdTx = float64(tx) / float64(n)
	t.p.log.Info("tier: level", "k", lv.k, "agents", lv.real, "proxies", len(t.proxies),
		"p99", percentile(lv.lat, 0.99), "lastP99", percentile(lv.last, 0.99), "etcdCPU", lv.etcdCPU, "proxyCPU", lv.proxyCPU,
		"etcdSentKiB", lv.etcdTx/(1<<10), "etcdHeapMiB", lv.etcdHeap>>20, "watchings", lv.watchings, "missed", lv.missed)
	return lv, nil
}

// cpu reads etcd's and every proxy's CPU.
func (t *tier) cpu() (childStats, []childStats, error) {
	es, err := t.etcd.stats("cpu")
	if err != nil {
		return es, nil, err
	}
	ps := make([]childStats, 0, len(t.proxies))
	for _, pc := range t.proxies {
		s, err := pc.stats("cpu")
		if err != nil {
			return es, nil, err
		}
		ps = append(ps, s)
	}
	return es, ps, nil
}

// change writes the next change and waits until every agent applied it
// and every lightweight watcher received it. It returns each agent's time
// from just before the put to its apply, and the time until the last of
// all had it. Lightweight watchers that have not received it a minute
// after the put are counted as missed (a receipt that comes later is
// ignored); an agent that has not applied it fails the change.
func (t *tier) change(ctx context.Context, set *fanoutSet, light *lightSet) (lat []time.Duration, last time.Duration, missed int, err error) {
	s := t.seq[t.next%len(t.seq)]
	t.next++
	val, err := kubestate.Encode(s)
	if err != nil {
		return nil, 0, 0, err
	}
	k := s.Key()
	set.key.Store(&k)
	defer set.key.Store(nil)
	t0 := time.Now()
	resp, err := t.cli.Put(ctx, k.String(), string(val))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("etcd put: %w", err)
	}
	rev := resp.Header.Revision
	lat = make([]time.Duration, 0, len(set.agents))
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	received := 0
	for len(lat) < len(set.agents) || received < len(light.clis) {
		select {
		case at := <-set.out:
			lat = append(lat, at.Sub(t0))
			last = max(last, at.Sub(t0))
		case r := <-light.got:
			if r.rev == rev {
				received++
				last = max(last, r.at.Sub(t0))
			}
		case <-timeout.C:
			if len(lat) < len(set.agents) {
				return nil, 0, 0, fmt.Errorf("%s: %d of %d agents applied it within a minute", k, len(lat), len(set.agents))
			}
			t.p.log.Warn("tier: lightweight watchers did not receive a change within a minute", "key", k.String(), "rev", rev, "missed", len(light.clis)-received, "of", len(light.clis))
			return lat, last, len(light.clis) - received, nil
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		}
	}
	return lat, last, 0, nil
}

// lightSet is lightweight watch-only agents: each a client of its own
// watching what an agent watches (one watch per resource prefix, from a
// revision, as an agent after its listing) and decoding nothing; every
// event received is reported on got.
type lightSet struct {
	dial func(ctx context.Context, i int) (*clientv3.Client, error)
	clis []*clientv3.Client
	got  chan receipt
	stop []context.CancelFunc
	wg   sync.WaitGroup
}

// receipt is one event a lightweight watcher received: its revision, and
// when.
type receipt struct {
	rev int64
	at  time.Time
}

// grow adds n watchers watching from revision rev.
func (l *lightSet) grow(ctx context.Context, n int, rev int64) error {
	wctx, stop := context.WithCancel(ctx)
	l.stop = append(l.stop, stop)
	for range n {
		c, err := l.dial(wctx, len(l.clis))
		if err != nil {
			return err
		}
		l.clis = append(l.clis, c)
		for _, r := range kubestate.Resources {
			wch := c.Watch(wctx, r.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev))
			l.wg.Go(func() {
				for resp := range wch {
					now := time.Now()
					for _, ev := range resp.Events {
						select {
						case l.got <- receipt{rev: ev.Kv.ModRevision, at: now}:
						case <-wctx.Done():
							return
						}
					}
				}
			})
		}
	}
	return nil
}

// close stops every watcher and closes its client.
func (l *lightSet) close() {
	for _, s := range l.stop {
		s()
	}
	l.wg.Wait()
	for _, c := range l.clis {
		_ = c.Close()
	}
	l.clis, l.stop = nil, nil
}

// defaultProxies is P by default. Four proxies split the benchmark's
// largest K (200 agents) into groups of 50, the direct figure's smallest
// K, so that each proxy's fan-out is the one already measured against
// etcd; and they stay few enough that, on the benchmark's two cores, the
// proxies' processes do not crowd out the agents. In a cluster P follows
// the nodes (one per zone, or per ~100-250 nodes; docs/large-cluster.md).
const defaultProxies = 4
