package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/bench/core"
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
func measureFanout(ctx context.Context, env *core.Env, p fanoutParams) (*fanoutRun, error) {
	// The heap split reads the heap profile; a finer sampling than the
	// default 512 KiB resolves etcd's heap per watching agent (tens of KiB). It
	// applies to what is allocated from here on, etcd and W(N) included.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = fanoutProfileRate
	m, cli, w, closeEtcd, err := core.EtcdHolding(ctx, p.fast, p.n)
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	defer closeEtcd()
	seq, table := changeSeq(w), env.PodTable(w)
	w = nil // W(N)'s objects go before the heap is split
	out := &fanoutRun{}
	if st, err := cli.Status(ctx, "http://"+m.Endpoint()); err == nil {
		out.dbBytes = st.DbSize
	}
	etcd0, other0 := heapSplit()
	out.etcdHeap0 = etcd0
	next := 0

	set := newFanoutSet(env, m, table, slices.Max(p.ks))
	defer set.close()
	// All agents share one process: without a limit its heap would grow
	// to twice the live heap between collections. The limit makes the
	// collector run as the heap nears what the machine can give; the
	// growth stops before the live heap would pass 90% of it.
	limit := int64(min(runtimeSys()+availableMemory()-min(availableMemory(), fanoutReserve), math.MaxInt64))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	fits := func(more int) bool {
		live := core.LiveHeap()
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
			if err := core.Sleep(ctx, 20*time.Millisecond); err != nil {
				return nil, err
			}
		}
		lv.cpu = cpu / time.Duration(max(p.changes, 1))
		out.levels = append(out.levels, lv)
	}
	return out, nil
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

// RunFanout measures the fan-out figure into res.
func RunFanout(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, res *Results) error {
	o.Log.Info("fan-out: K agents against one etcd", "ks", o.FanoutKs, "n", o.FanoutSize, "changes", o.FanoutChanges)
	r, err := measureFanout(ctx, env, fanoutParams{n: o.FanoutSize, ks: o.FanoutKs, changes: o.FanoutChanges, fast: o.FastEtcd, log: o.Log})
	if err != nil {
		return err
	}
	res.Fanout = map[string]*FanoutResult{}
	for _, lv := range r.levels {
		res.Fanout[strconv.Itoa(lv.k)] = &FanoutResult{
			P50MS: core.MS(core.Percentile(lv.lat, 0.50)), P99MS: core.MS(core.Percentile(lv.lat, 0.99)),
			AgentHeapMiB: lv.agentHeap / (1 << 20), EtcdHeapMiB: lv.etcdHeap / (1 << 20),
			AllP99MS: core.MS(core.Percentile(lv.all, 0.99)), CPUPerChangeMS: core.MS(lv.cpu), Changes: len(lv.all),
			N: o.FanoutSize, EtcdHeapIdleMiB: r.etcdHeap0 / (1 << 20), DBMiB: float64(r.dbBytes) / (1 << 20),
		}
	}
	res.FanoutStopped = r.stopped
	return nil
}

// FanoutRows are the fan-out figure's rows, by K.
func FanoutRows(_ *core.Results, r *Results, t *core.Rows) {
	for _, k := range core.SortedNumeric(r.Fanout) {
		f := r.Fanout[k]
		t.AddSingle(fmt.Sprintf("fan-out, %s agents on one etcd with W(%d): change put to applied at each agent p50 / p99 (ms; %d changes)", k, f.N, f.Changes),
			fmt.Sprintf("%.2f / %.2f", f.P50MS, f.P99MS), "", "")
		t.AddSingle("… until the last agent, p99 (ms)", fmt.Sprintf("%.2f", f.AllP99MS), "", "")
		t.AddSingle("… heap per agent / etcd's heap (MiB)", fmt.Sprintf("%.1f / %.1f", f.AgentHeapMiB, f.EtcdHeapMiB), "", "")
		t.AddSingle("… process CPU per change, etcd and all agents (ms)", fmt.Sprintf("%.2f", f.CPUPerChangeMS), "", "")
	}
	for _, f := range r.Fanout {
		t.AddSingle("fan-out: etcd's heap with no agent / its backend file (MiB)", fmt.Sprintf("%.1f / %.1f", f.EtcdHeapIdleMiB, f.DBMiB), "", "")
		break
	}
	if r.FanoutStopped != "" {
		t.AddSingle("fan-out: stopped early", r.FanoutStopped, "", "")
	}
}
