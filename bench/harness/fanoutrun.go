package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/bench/workload"
	"contiv.dev/vpp/kubestate"
)

// fanoutParams configure the fan-out figure.
type fanoutParams struct {
	n       int
	ks      []int
	changes int // per K
	fast    bool
	log     *slog.Logger
}

// fanoutLevel is the fan-out figure at one K.
type fanoutLevel struct {
	k int
	// lat is every agent's time from just before a put to the end of its
	// apply, over all changes; all is, per change, the slowest agent's.
	lat, all []time.Duration
	// agentHeap is the live heap outside etcd's server per agent, etcdHeap
	// etcd's server's live heap, both after a full collection.
	agentHeap, etcdHeap float64
	// cpu is the process CPU per change (etcd, K streams, K agents).
	cpu time.Duration
}

// fanoutRun is the fan-out figure at every K reached.
type fanoutRun struct {
	levels []fanoutLevel
	// etcdHeap0 is etcd's server heap holding W(N) with no agent
	// watching; dbBytes the size of its backend file (mapped, not heap).
	etcdHeap0 float64
	dbBytes   int64
	// stopped tells why a larger K was not measured ("" when all were).
	stopped string
}

// measureFanout loads W(n) into one embedded etcd, then grows a set of
// agents to each K in turn (fanoutWave at a time) and, at each K, measures
// the heap split and p.changes EndpointSlice changes written one at a
// time, each waited for at every agent. The growth stops early when the
// next K would not fit in the machine's available memory.
func measureFanout(ctx context.Context, env *nodeEnv, p fanoutParams) (*fanoutRun, error) {
	m, cli, closeEtcd, err := embeddedEtcd(ctx, p.fast)
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	defer closeEtcd()
	w := workload.New(p.n)
	if err := load(ctx, cli, w); err != nil {
		return nil, fmt.Errorf("fanout: loading W(%d) into etcd: %w", p.n, err)
	}
	seq, table := changeSeq(w), env.podTable(w)
	w = nil // W(N)'s objects go before the heap is split
	out := &fanoutRun{}
	if st, err := cli.Status(ctx, "http://"+m.Endpoint()); err == nil {
		out.dbBytes = st.DbSize
	}
	etcd0, other0 := heapSplit()
	out.etcdHeap0 = etcd0

	set := newFanoutSet(env, m, table, slices.Max(p.ks))
	defer set.close()
	// All agents share one process: without a limit its heap would grow
	// to twice the live heap between collections. The limit makes the
	// collector run as the heap nears what the machine can give; the
	// growth stops before the live heap would pass 90% of it.
	limit := int64(min(runtimeSys()+availableMemory()-min(availableMemory(), fanoutReserve), math.MaxInt64))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	fits := func(more int) bool {
		live := liveHeap()
		per := float64(live) / float64(max(len(set.agents), 1))
		return float64(live)+per*float64(more) < 0.9*float64(limit)
	}
	next := 0
	for _, k := range slices.Sorted(slices.Values(p.ks)) {
		p.log.Info("fanout: starting agents", "k", k, "n", p.n)
		if err := set.grow(ctx, k, fits); err != nil {
			if errors.Is(err, errFanoutMemory) {
				out.stopped = err.Error()
				p.log.Warn("fanout: stopping early", "err", err)
				break
			}
			return nil, err
		}
		lv := fanoutLevel{k: k}
		eb, ob := heapSplit()
		lv.etcdHeap, lv.agentHeap = eb, (ob-other0)/float64(k)
		p.log.Info("fanout: heap", "k", k, "agentMiB", lv.agentHeap/(1<<20), "etcdMiB", eb/(1<<20))
		var cpu time.Duration
		for range p.changes {
			lat, c, err := set.change(ctx, cli, seq[next%len(seq)])
			if err != nil {
				return nil, fmt.Errorf("fanout: K=%d: %w", k, err)
			}
			next++
			cpu += c
			lv.lat = append(lv.lat, lat...)
			lv.all = append(lv.all, slices.Max(lat))
			// Let the agents' and etcd's goroutines settle between changes.
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return nil, err
			}
		}
		lv.cpu = cpu / time.Duration(max(p.changes, 1))
		out.levels = append(out.levels, lv)
	}
	return out, nil
}

// liveHeap is the live heap the last collection marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// runtimeSys is the memory the Go runtime holds from the system.
func runtimeSys() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Sys
}

// availableMemory is the kernel's MemAvailable, in bytes; when it cannot
// be read, a figure large enough never to stop the growth.
func availableMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 1 << 62
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 1 << 62
}

// agentChangeRun is the agent's CPU per change, from the etcd watch
// event to the VPP calls issued.
type agentChangeRun struct {
	// perChange is the agent's CPU per change: the process CPU of changes
	// watched by the agent, less that of the same puts watched by a bare
	// etcd watch that decodes nothing.
	perChange time.Duration
	// withAgent and baseline are the two per-change CPU figures it is
	// the difference of.
	withAgent, baseline time.Duration
	changes             int
	// profiled is the number of changes in the CPU profile.
	profiled int
}

// agentChangeBlock is the number of changes of one block; the agent's and
// the baseline's blocks alternate, so that the machine's drift weighs on
// both alike.
const agentChangeBlock = 100

// measureAgentChange loads W(n) into an embedded etcd and starts one agent
// (controller with its etcd watcher, processor, NAT44 renderer over a
// counting VPP). It then writes changes, each waited for until the agent
// has applied it, in blocks that alternate with blocks of the same values
// put under a key only a bare watcher (its own client, no decoding)
// watches, and waited for until that watcher has received them. The
// difference of the two per-change CPU figures is the agent's work from
// the watch event on: decoding, the controller's queue and batch, the
// processor, the renderer and the VPP calls; etcd's commit and watch send
// and the gRPC receive are in both. With dir set, a CPU profile of the
// agent's changes alone is written to dir/agent-change.pprof.
func measureAgentChange(ctx context.Context, env *nodeEnv, n, changes int, fast bool, dir string, profileTime time.Duration) (*agentChangeRun, error) {
	m, cli, closeEtcd, err := embeddedEtcd(ctx, fast)
	if err != nil {
		return nil, fmt.Errorf("agent-change: %w", err)
	}
	defer closeEtcd()
	w := workload.New(n)
	if err := load(ctx, cli, w); err != nil {
		return nil, fmt.Errorf("agent-change: loading W(%d) into etcd: %w", n, err)
	}
	seq := changeSeq(w)
	set := newFanoutSet(env, m, env.podTable(w), 1)
	defer set.close()
	if err := set.grow(ctx, 1, func(int) bool { return true }); err != nil {
		return nil, err
	}

	if dir != "" {
		if err := writeHeapProfile(filepath.Join(dir, "agent-heap.pprof")); err != nil {
			return nil, err
		}
	}
	bare, err := etcdClient(ctx, m)
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	const basePrefix = "/contiv-bench-baseline/"
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wch := bare.Watch(wctx, basePrefix, clientv3.WithPrefix())
	got := make(chan struct{}, 1)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for resp := range wch {
			for range resp.Events {
				got <- struct{}{}
			}
		}
	}()
	defer func() { stopWatch(); <-watchDone }()

	// Each path has its own cursor: the agent must see every change of
	// the sequence, or a change back to a value it holds is no change.
	next, bnext := 0, 0
	agentOne := func() error {
		_, _, err := set.change(ctx, cli, seq[next%len(seq)])
		next++
		return err
	}
	baseOne := func() error {
		s := seq[bnext%len(seq)]
		bnext++
		val, err := kubestate.Encode(s)
		if err != nil {
			return err
		}
		if _, err := cli.Put(ctx, basePrefix+s.Name, string(val)); err != nil {
			return err
		}
		select {
		case <-got:
			return nil
		case <-time.After(time.Minute):
			return errors.New("agent-change: the bare watch received nothing within a minute")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Warm up both paths (connections, the runtime's caches).
	for range agentChangeBlock / 2 {
		if err := errors.Join(agentOne(), baseOne()); err != nil {
			return nil, err
		}
	}
	block := func(one func() error) (time.Duration, error) {
		runtime.GC()
		c0 := cpuTime()
		for range agentChangeBlock {
			if err := one(); err != nil {
				return 0, err
			}
		}
		return cpuTime() - c0, nil
	}
	out := &agentChangeRun{}
	var agentCPU, baseCPU time.Duration
	for out.changes < changes {
		a, err := block(agentOne)
		if err != nil {
			return nil, err
		}
		b, err := block(baseOne)
		if err != nil {
			return nil, err
		}
		agentCPU, baseCPU = agentCPU+a, baseCPU+b
		out.changes += agentChangeBlock
	}
	out.withAgent = agentCPU / time.Duration(out.changes)
	out.baseline = baseCPU / time.Duration(out.changes)
	out.perChange = max(out.withAgent-out.baseline, 0)
	if dir == "" {
		return out, nil
	}
	f, err := os.Create(filepath.Join(dir, "agent-change.pprof"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	defer pprof.StopCPUProfile()
	for end := time.Now().Add(profileTime); time.Now().Before(end); {
		if err := agentOne(); err != nil {
			return nil, err
		}
		out.profiled++
	}
	return out, nil
}

// writeHeapProfile writes the live heap after a full collection (the
// profile lags one cycle, hence two).
func writeHeapProfile(path string) error {
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fanoutFigure measures the fan-out figure into res.
func fanoutFigure(ctx context.Context, env *nodeEnv, o Options, res *Results) error {
	o.Log.Info("fan-out: K agents against one etcd", "ks", o.FanoutKs, "n", o.FanoutSize, "changes", o.FanoutChanges)
	r, err := measureFanout(ctx, env, fanoutParams{n: o.FanoutSize, ks: o.FanoutKs, changes: o.FanoutChanges, fast: o.FastEtcd, log: o.Log})
	if err != nil {
		return err
	}
	res.Fanout = map[string]*FanoutResult{}
	for _, lv := range r.levels {
		res.Fanout[strconv.Itoa(lv.k)] = &FanoutResult{
			P50MS: ms(percentile(lv.lat, 0.50)), P99MS: ms(percentile(lv.lat, 0.99)),
			AgentHeapMiB: lv.agentHeap / (1 << 20), EtcdHeapMiB: lv.etcdHeap / (1 << 20),
			AllP99MS: ms(percentile(lv.all, 0.99)), CPUPerChangeMS: ms(lv.cpu), Changes: len(lv.all),
			N: o.FanoutSize, EtcdHeapIdleMiB: r.etcdHeap0 / (1 << 20), DBMiB: float64(r.dbBytes) / (1 << 20),
		}
	}
	res.FanoutStopped = r.stopped
	return nil
}
