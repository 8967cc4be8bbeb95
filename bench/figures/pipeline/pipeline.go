package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
)

// sizeRun is one run of the in-process figures at one N.
type sizeRun struct {
	resync     core.Cost
	heap       uint64 // bytes retained by processor and renderer
	snapHeap   uint64 // bytes of the decoded snapshot
	resyncOps  int    // VPP operations of the full apply
	changeCPU  time.Duration
	changeWall []time.Duration
	changeMall uint64
	changeByte uint64
	changeOps  int
	joinCPU    time.Duration
	joinWall   time.Duration
	joinOps    int
}

// runSize measures, on a fresh pipeline over W(n): the full resync, the
// 1000 churn changes one at a time, then node 101 joining. The workload and
// its decoded events are built before anything is measured.
func runSize(ctx context.Context, env *core.Env, n int) (*sizeRun, error) {
	return runSizeOf(ctx, env, n, func(v *core.CountingVPP, t core.TagTable) (*core.Pipeline, error) { return env.NewPipeline(v, t) })
}

// runSizeOf is runSize on the pipelines newP makes (NAT44 or cnat).
func runSizeOf(ctx context.Context, env *core.Env, n int, newP func(*core.CountingVPP, core.TagTable) (*core.Pipeline, error)) (*sizeRun, error) {
	base := core.HeapAfterGC()
	w := workload.New(n)
	evs, err := core.NewEvents(w)
	if err != nil {
		return nil, err
	}
	table := env.PodTable(w)
	withSnap := core.HeapAfterGC()

	vpp := &core.CountingVPP{}
	p, err := newP(vpp, table)
	if err != nil {
		return nil, err
	}
	out := &sizeRun{snapHeap: withSnap - min(base, withSnap)}
	runtime.GC()
	m := core.StartMark()
	if err := p.Resync(ctx, evs.Snap); err != nil {
		return nil, fmt.Errorf("n=%d: resync: %w", n, err)
	}
	out.resync = m.Since()
	out.resyncOps = vpp.Calls
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("n=%d: resync: %w", n, err)
	}
	if heap := core.HeapAfterGC(); heap > withSnap {
		out.heap = heap - withSnap
	}

	// The changes are decoded now, as the watcher would just before
	// handing each over: fresh objects, not ones built before the resync.
	if err := evs.DecodeChurn(w); err != nil {
		return nil, err
	}
	vpp.Calls = 0
	out.changeWall = make([]time.Duration, 0, len(evs.Churn))
	runtime.GC()
	m = core.StartMark()
	for _, ev := range evs.Churn {
		t0 := time.Now()
		if err := p.Batch(ctx, ev); err != nil {
			return nil, fmt.Errorf("n=%d: change %s: %w", n, ev.Key, err)
		}
		out.changeWall = append(out.changeWall, time.Since(t0))
	}
	c := m.Since()
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("n=%d: churn: %w", n, err)
	}
	out.changeCPU = c.CPU / time.Duration(len(evs.Churn))
	out.changeMall, out.changeByte = c.Mallocs, c.Bytes
	out.changeOps = vpp.Calls

	vpp.Calls = 0
	cpu0, wall0 := core.CPUTime(), time.Now()
	if err := p.Batch(ctx, evs.Join...); err != nil {
		return nil, fmt.Errorf("n=%d: node join: %w", n, err)
	}
	out.joinWall, out.joinCPU = time.Since(wall0), core.CPUTime()-cpu0
	out.joinOps = vpp.Calls
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("n=%d: node join: %w", n, err)
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(evs)
	return out, nil
}

// profile writes CPU profiles of W(n)'s resync (resyncs of fresh
// pipelines, as the figure measures) and of its per-change path (the churn
// and its undoing, cycled) to dir/resync.pprof and dir/change.pprof. Each
// runs for about d.
func profile(ctx context.Context, env *core.Env, n int, dir string, d time.Duration) error {
	w := workload.New(n)
	evs, err := core.AllEvents(w)
	if err != nil {
		return err
	}
	table := env.PodTable(w)
	var p *core.Pipeline
	fresh := func() (err error) {
		p = nil // the last one is garbage before the next is built
		p, err = env.NewPipeline(&core.CountingVPP{}, table)
		return err
	}
	run := func(name string, step func() error) error {
		_, err := core.ProfileFor(filepath.Join(dir, name), d, step)
		return err
	}
	if err := run("resync.pprof", func() error {
		if err := fresh(); err != nil {
			return err
		}
		return p.Resync(ctx, evs.Snap)
	}); err != nil {
		return fmt.Errorf("profile resync: %w", err)
	}
	cycle := append(evs.Churn[:len(evs.Churn):len(evs.Churn)], evs.Undo...)
	if err := run("change.pprof", func() error {
		for _, ev := range cycle {
			if err := p.Batch(ctx, ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("profile changes: %w", err)
	}
	return nil
}

// RunPipeline measures the pipeline figure (pipelineFigures) and, with
// Options.ProfileDir, profiles the largest N.
func RunPipeline(ctx context.Context, env *core.Env, o core.Options, res *core.Results, into *Results) error {
	sizes := res.Sizes
	if err := pipelineFigures(ctx, env, sizes, o, into); err != nil {
		return err
	}
	if o.ProfileDir != "" {
		n := sizes[len(sizes)-1]
		o.Log.Info("profiling", "n", n, "dir", o.ProfileDir)
		if err := profile(ctx, env, n, o.ProfileDir, o.ProfileTime); err != nil {
			return err
		}
	}
	return nil
}

// PipelineRows are the pipeline figure's rows: per N, then the growth.
func PipelineRows(r *core.Results, from *Results, t *core.Rows) {
	if !r.Has(FigPipeline) {
		return
	}
	at := from.at
	perN(t, from, "resync CPU (ms)", "%.1f", func(s *SizeResult) float64 { return s.ResyncCPUMS }, "≤ 150",
		func(s *SizeResult) bool { return s.ResyncCPUMS <= targetResyncCPUMS })
	perN(t, from, "resync wall (ms)", "%.1f", func(s *SizeResult) float64 { return s.ResyncWallMS }, "", nil)
	perN(t, from, "resync allocations", "%.0f", func(s *SizeResult) float64 { return s.ResyncAllocs }, "", nil)
	perN(t, from, "resync VPP operations", "%.0f", func(s *SizeResult) float64 { return float64(s.ResyncOps) }, "", nil)
	perN(t, from, "heap retained after resync (MiB)", "%.1f", func(s *SizeResult) float64 { return s.HeapMiB }, "≤ 40",
		func(s *SizeResult) bool { return s.HeapMiB <= targetHeapMiB })
	perN(t, from, "decoded snapshot, not in the above (MiB)", "%.1f", func(s *SizeResult) float64 { return s.SnapshotMiB }, "", nil)
	perN(t, from, "per-change CPU (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeCPUUS }, "≤ 10",
		func(s *SizeResult) bool { return s.ChangeCPUUS <= targetChangeCPUUS })
	perN(t, from, "per-change wall p50 (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeP50US }, "", nil)
	perN(t, from, "per-change wall p99 (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeP99US }, "", nil)
	allAllocsOK := true
	for _, n := range t.Sizes() {
		allAllocsOK = allAllocsOK && at(n).ChangeAllocs <= targetChangeAllocs
	}
	perN(t, from, "allocations per change", "%.1f", func(s *SizeResult) float64 { return s.ChangeAllocs }, "≤ 60 (every N)",
		func(*SizeResult) bool { return allAllocsOK })
	perN(t, from, "bytes allocated per change", "%.0f", func(s *SizeResult) float64 { return s.ChangeBytes }, "", nil)
	perN(t, from, "VPP operations per change (pipeline)", "%.3f", func(s *SizeResult) float64 { return s.ChangeOps }, "", nil)
	perN(t, from, "node-join CPU (µs)", "%.1f", func(s *SizeResult) float64 { return s.NodeJoinCPUUS }, "≤ 1000",
		func(s *SizeResult) bool { return s.NodeJoinCPUUS <= targetJoinCPUUS })
	perN(t, from, "node-join wall (µs; getrusage counts whole µs)", "%.1f", func(s *SizeResult) float64 { return s.NodeJoinWallUS }, "", nil)

	small, large := at(targetGrowthFrom), at(core.TargetSize)
	if small != nil && large != nil && small.ChangeCPUUS > 0 {
		g := large.ChangeCPUUS / small.ChangeCPUUS
		t.AddSingle("growth: per-change CPU N=10000 / N=1000", fmt.Sprintf("%.2f", g), "≤ 1.5", core.Verdict(true, func() bool { return g <= targetGrowth }))
	} else {
		t.AddSingle("growth: per-change CPU N=10000 / N=1000", "n/a", "≤ 1.5", "n/a")
	}
	if l := at(core.LargeSize); l != nil && small != nil && small.ChangeCPUUS > 0 {
		g := l.ChangeCPUUS / small.ChangeCPUUS
		t.AddSingle("growth: per-change CPU N=50000 / N=1000", fmt.Sprintf("%.2f", g), "≤ 1.5", core.Verdict(true, func() bool { return g <= targetGrowth }))
	}
}

// pipelineFigures runs the in-process figures o.Runs times at every size
// and keeps the medians. The sizes take turns, run after run, so that a
// change in the machine's load weighs on all of them alike (the growth
// figure compares two sizes).
func pipelineFigures(ctx context.Context, env *core.Env, sizes []int, o core.Options, into *Results) error {
	runs := make(map[int][]*sizeRun, len(sizes))
	for run := range o.Runs {
		for _, n := range sizes {
			r, err := runSize(ctx, env, n)
			if err != nil {
				return err
			}
			o.Log.Info("pipeline run", "n", n, "run", run+1, "resyncCPU", r.resync.CPU, "changeCPU", r.changeCPU, "joinCPU", r.joinCPU)
			runs[n] = append(runs[n], r)
		}
	}
	for _, n := range sizes {
		summarize(runs[n], into.at(n))
	}
	return nil
}

// summarize keeps the median of each figure over the runs.
func summarize(runs []*sizeRun, out *SizeResult) {
	med := func(f func(r *sizeRun) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return core.Median(xs)
	}
	out.ResyncCPUMS = med(func(r *sizeRun) float64 { return core.MS(r.resync.CPU) })
	out.ResyncWallMS = med(func(r *sizeRun) float64 { return core.MS(r.resync.Wall) })
	out.ResyncAllocs = med(func(r *sizeRun) float64 { return float64(r.resync.Mallocs) })
	out.HeapMiB = med(func(r *sizeRun) float64 { return float64(r.heap) / (1 << 20) })
	out.SnapshotMiB = med(func(r *sizeRun) float64 { return float64(r.snapHeap) / (1 << 20) })
	out.ChangeCPUUS = med(func(r *sizeRun) float64 { return core.US(r.changeCPU) })
	out.ChangeP50US = med(func(r *sizeRun) float64 { return core.US(core.Percentile(r.changeWall, 0.50)) })
	out.ChangeP99US = med(func(r *sizeRun) float64 { return core.US(core.Percentile(r.changeWall, 0.99)) })
	out.ChangeAllocs = med(func(r *sizeRun) float64 { return float64(r.changeMall) / float64(len(r.changeWall)) })
	out.ChangeBytes = med(func(r *sizeRun) float64 { return float64(r.changeByte) / float64(len(r.changeWall)) })
	out.NodeJoinCPUUS = med(func(r *sizeRun) float64 { return core.US(r.joinCPU) })
	out.NodeJoinWallUS = med(func(r *sizeRun) float64 { return core.US(r.joinWall) })
	out.ResyncOps = med2int(runs, func(r *sizeRun) int { return r.resyncOps })
	out.ChangeOps = med(func(r *sizeRun) float64 { return float64(r.changeOps) / float64(len(r.changeWall)) })
	out.JoinOps = med2int(runs, func(r *sizeRun) int { return r.joinOps })
}

// med2int is the median of an integer figure (the runs agree on it: the
// operations of a run do not depend on timing).
func med2int(runs []*sizeRun, f func(r *sizeRun) int) int {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = float64(f(r))
	}
	return int(core.Median(xs))
}
