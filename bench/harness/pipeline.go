package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"contiv.dev/vpp/internal/workload"
)

// sizeRun is one run of the in-process figures at one N.
type sizeRun struct {
	resync     cost
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
func runSize(ctx context.Context, env *nodeEnv, n int) (*sizeRun, error) {
	return runSizeOf(ctx, env, n, func(v *countingVPP, t tagTable) (*pipeline, error) { return env.newPipeline(v, t) })
}

// runSizeOf is runSize on the pipelines newP makes (NAT44 or cnat).
func runSizeOf(ctx context.Context, env *nodeEnv, n int, newP func(*countingVPP, tagTable) (*pipeline, error)) (*sizeRun, error) {
	base := heapAfterGC()
	w := workload.New(n)
	evs, err := newEvents(w)
	if err != nil {
		return nil, err
	}
	table := env.podTable(w)
	withSnap := heapAfterGC()

	vpp := &countingVPP{}
	p, err := newP(vpp, table)
	if err != nil {
		return nil, err
	}
	out := &sizeRun{snapHeap: withSnap - min(base, withSnap)}
	runtime.GC()
	m := startMark()
	if err := p.resync(ctx, evs.snap); err != nil {
		return nil, fmt.Errorf("n=%d: resync: %w", n, err)
	}
	out.resync = m.since()
	out.resyncOps = vpp.calls
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("n=%d: resync: %w", n, err)
	}
	if heap := heapAfterGC(); heap > withSnap {
		out.heap = heap - withSnap
	}

	// The changes are decoded now, as the watcher would just before
	// handing each over: fresh objects, not ones built before the resync.
	if err := evs.decodeChurn(w); err != nil {
		return nil, err
	}
	vpp.calls = 0
	out.changeWall = make([]time.Duration, 0, len(evs.churn))
	runtime.GC()
	m = startMark()
	for _, ev := range evs.churn {
		t0 := time.Now()
		if err := p.batch(ctx, ev); err != nil {
			return nil, fmt.Errorf("n=%d: change %s: %w", n, ev.Key, err)
		}
		out.changeWall = append(out.changeWall, time.Since(t0))
	}
	c := m.since()
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("n=%d: churn: %w", n, err)
	}
	out.changeCPU = c.cpu / time.Duration(len(evs.churn))
	out.changeMall, out.changeByte = c.mallocs, c.bytes
	out.changeOps = vpp.calls

	vpp.calls = 0
	cpu0, wall0 := cpuTime(), time.Now()
	if err := p.batch(ctx, evs.join...); err != nil {
		return nil, fmt.Errorf("n=%d: node join: %w", n, err)
	}
	out.joinWall, out.joinCPU = time.Since(wall0), cpuTime()-cpu0
	out.joinOps = vpp.calls
	if err := p.check(); err != nil {
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
func profile(ctx context.Context, env *nodeEnv, n int, dir string, d time.Duration) error {
	w := workload.New(n)
	evs, err := allEvents(w)
	if err != nil {
		return err
	}
	table := env.podTable(w)
	var p *pipeline
	fresh := func() (err error) {
		p = nil // the last one is garbage before the next is built
		p, err = env.newPipeline(&countingVPP{}, table)
		return err
	}
	run := func(name string, step func() error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
		for end := time.Now().Add(d); time.Now().Before(end); {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := run("resync.pprof", func() error {
		if err := fresh(); err != nil {
			return err
		}
		return p.resync(ctx, evs.snap)
	}); err != nil {
		return fmt.Errorf("profile resync: %w", err)
	}
	cycle := append(evs.churn[:len(evs.churn):len(evs.churn)], evs.undo...)
	if err := run("change.pprof", func() error {
		for _, ev := range cycle {
			if err := p.batch(ctx, ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("profile changes: %w", err)
	}
	return nil
}
