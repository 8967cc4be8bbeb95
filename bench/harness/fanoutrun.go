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
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd/embedded"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// fanoutProfileRate is the heap profile's sampling interval during the
// fan-out figure, in bytes.
const fanoutProfileRate = 64 << 10

// fanoutParams configure the fan-out figure.
type fanoutParams struct {
	n       int
	ks      []int
	changes int // per K
	fast    bool
	// profileDir, when set, receives fanout-bare.pprof: a CPU profile of
	// the bare watchers' fan-out, labelled side=etcd or side=watchers.
	profileDir string
	log        *slog.Logger
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
	// bare is the fan-out to watchers that decode nothing.
	bare *bareRun
}

// measureFanout loads W(n) into one embedded etcd, then grows a set of
// agents to each K in turn (fanoutWave at a time) and, at each K, measures
// the heap split and p.changes EndpointSlice changes written one at a
// time, each waited for at every agent. The growth stops early when the
// next K would not fit in the machine's available memory.
func measureFanout(ctx context.Context, env *nodeEnv, p fanoutParams) (*fanoutRun, error) {
	// The heap split reads the heap profile; a finer sampling than the
	// default 512 KiB resolves the per-watcher heap (tens of KiB). It
	// applies to what is allocated from here on, etcd and W(N) included.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = fanoutProfileRate
	// etcd's goroutines, and those they start, carry the profile label
	// side=etcd; the bare watchers' side=watchers: a CPU profile of the
	// bare fan-out (profileDir) splits by them.
	var (
		m         *embedded.Member
		cli       *clientv3.Client
		w         *workload.Workload
		closeEtcd func()
		err       error
	)
	pprof.Do(ctx, pprof.Labels("side", "etcd"), func(ctx context.Context) {
		m, cli, w, closeEtcd, err = etcdHolding(ctx, p.fast, p.n)
	})
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	defer closeEtcd()
	seq, table := changeSeq(w), env.podTable(w)
	w = nil // W(N)'s objects go before the heap is split
	out := &fanoutRun{}
	if st, err := cli.Status(ctx, "http://"+m.Endpoint()); err == nil {
		out.dbBytes = st.DbSize
	}
	etcd0, _ := heapSplit()
	out.etcdHeap0 = etcd0
	next := 0
	p.log.Info("fanout: bare watchers", "b", slices.Max(p.ks))
	if out.bare, err = bareFanout(ctx, m, cli, seq, &next, slices.Max(p.ks), p.changes, p.profileDir); err != nil {
		return nil, err
	}
	_, other0 := heapSplit()

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

// runFanout measures the fan-out figure into res.
func runFanout(ctx context.Context, env *nodeEnv, o Options, res *Results) error {
	o.Log.Info("fan-out: K agents against one etcd", "ks", o.FanoutKs, "n", o.FanoutSize, "changes", o.FanoutChanges)
	r, err := measureFanout(ctx, env, fanoutParams{n: o.FanoutSize, ks: o.FanoutKs, changes: o.FanoutChanges, fast: o.FastEtcd, log: o.Log, profileDir: o.ProfileDir})
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
	if b := r.bare; b != nil {
		res.FanoutBare = &FanoutBareResult{
			Watchers: b.watchers, P50MS: ms(percentile(b.lat, 0.50)), P99MS: ms(percentile(b.lat, 0.99)),
			CPUUS: us(b.cpu), EtcdHeapKiB: b.etcdHeap / (1 << 10), ClientHeapKiB: b.clientHeap / (1 << 10),
		}
	}
	return nil
}

// bareRun is the fan-out of changes to b watchers that only receive: the
// part of the fan-out that is etcd's and the gRPC stack's.
type bareRun struct {
	watchers int
	// lat is every watcher's time from just before a put to its receipt.
	lat []time.Duration
	// cpu is the process CPU per change and watcher (the put's own cost,
	// measured with nobody watching, taken out); etcdHeap and
	// clientHeap the heap per watcher on etcd's side and on the client's.
	cpu                  time.Duration
	etcdHeap, clientHeap float64
}

// bareFanout opens b clients that watch what an agent watches (one watch
// per resource prefix, on one client each), writes the next changes of
// seq one at a time, each waited for until every client received it,
// then closes them.
func bareFanout(ctx context.Context, m *embedded.Member, cli *clientv3.Client, seq []*kubestate.EndpointSlice, next *int, b, changes int, profileDir string) (*bareRun, error) {
	// The same puts with nobody watching: their cost is taken out.
	c0 := cpuTime()
	for range changes {
		if _, err := bareChange(ctx, cli, seq, next, nil, 0); err != nil {
			return nil, err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	unwatched := cpuTime() - c0
	e0, o0 := heapSplit()
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	got := make(chan time.Time, b)
	clis := make([]*clientv3.Client, 0, b)
	defer func() {
		stop()
		wg.Wait()
		for _, c := range clis {
			_ = c.Close()
		}
	}()
	var err error
	pprof.Do(wctx, pprof.Labels("side", "watchers"), func(wctx context.Context) {
		for range b {
			var c *clientv3.Client
			if c, err = etcdClient(wctx, m); err != nil {
				return
			}
			clis = append(clis, c)
			for _, r := range kubestate.Resources {
				wch := c.Watch(wctx, r.KeyPrefix(), clientv3.WithPrefix())
				wg.Go(func() {
					for resp := range wch {
						now := time.Now()
						for range resp.Events {
							got <- now
						}
					}
				})
			}
		}
	})
	if err != nil {
		return nil, err
	}
	// A watch is set up once etcd has acknowledged it: the first change
	// reaches every client before anything is measured.
	if _, err := bareChange(ctx, cli, seq, next, got, b); err != nil {
		return nil, err
	}
	e1, o1 := heapSplit()
	out := &bareRun{watchers: b, etcdHeap: (e1 - e0) / float64(b), clientHeap: (o1 - o0) / float64(b)}
	if profileDir != "" {
		stop, err := startCPUProfile(filepath.Join(profileDir, "fanout-bare.pprof"))
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	c0 = cpuTime()
	for range changes {
		lat, err := bareChange(ctx, cli, seq, next, got, b)
		if err != nil {
			return nil, err
		}
		out.lat = append(out.lat, lat...)
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	out.cpu = max(cpuTime()-c0-unwatched, 0) / time.Duration(max(changes*b, 1))
	return out, nil
}

// bareChange puts the next slice of seq and waits for b receipts on got.
func bareChange(ctx context.Context, cli *clientv3.Client, seq []*kubestate.EndpointSlice, next *int, got <-chan time.Time, b int) ([]time.Duration, error) {
	s := seq[*next%len(seq)]
	*next++
	val, err := kubestate.Encode(s)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if _, err := cli.Put(ctx, s.Key().String(), string(val)); err != nil {
		return nil, fmt.Errorf("fanout: etcd put: %w", err)
	}
	lat := make([]time.Duration, 0, b)
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for range b {
		select {
		case t := <-got:
			lat = append(lat, t.Sub(t0))
		case <-timeout.C:
			return nil, fmt.Errorf("fanout: %d of %d bare watchers received %s within a minute", len(lat), b, s.Key())
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return lat, nil
}

// fanoutRows are the fan-out figure's rows: by K, and the bare watchers.
func fanoutRows(r *Results, t *rows) {
	for _, k := range sortedNumeric(r.Fanout) {
		f := r.Fanout[k]
		t.addSingle(fmt.Sprintf("fan-out, %s agents on one etcd with W(%d): change put to applied at each agent p50 / p99 (ms; %d changes)", k, f.N, f.Changes),
			fmt.Sprintf("%.2f / %.2f", f.P50MS, f.P99MS), "", "")
		t.addSingle("… until the last agent, p99 (ms)", fmt.Sprintf("%.2f", f.AllP99MS), "", "")
		t.addSingle("… heap per agent / etcd's heap (MiB)", fmt.Sprintf("%.1f / %.1f", f.AgentHeapMiB, f.EtcdHeapMiB), "", "")
		t.addSingle("… process CPU per change, etcd and all agents (ms)", fmt.Sprintf("%.2f", f.CPUPerChangeMS), "", "")
	}
	for _, f := range r.Fanout {
		t.addSingle("fan-out: etcd's heap with no agent / its backend file (MiB)", fmt.Sprintf("%.1f / %.1f", f.EtcdHeapIdleMiB, f.DBMiB), "", "")
		break
	}
	if b := r.FanoutBare; b != nil {
		t.addSingle(fmt.Sprintf("fan-out to %d bare watchers (no decoding): put to receipt p50 / p99 (ms)", b.Watchers),
			fmt.Sprintf("%.2f / %.2f", b.P50MS, b.P99MS), "", "")
		t.addSingle("… CPU per change and watcher (µs); heap per watcher, etcd's / the client's (KiB)",
			fmt.Sprintf("%.1f; %.0f / %.0f", b.CPUUS, b.EtcdHeapKiB, b.ClientHeapKiB), "", "")
	}
	if r.FanoutStopped != "" {
		t.addSingle("fan-out: stopped early", r.FanoutStopped, "", "")
	}
}
