package live

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

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
	// allocs and bytes are the agent's heap allocations per change (with
	// the agent less the bare watch).
	allocs, bytes float64
	// paced is the agent's CPU per change when the changes come at
	// pacedRate a second, each written without waiting for the one
	// before; pacedChanges were written, at pacedAchieved a second, in
	// pacedBatches applied batches.
	paced                      time.Duration
	pacedChanges, pacedBatches int
	pacedAchieved              float64
	pacedWithAgent, pacedBase  time.Duration
	// profiled is the number of changes in the CPU profile.
	profiled int
}

// writeCounts writes what the profiles of dir hold, for their per-change
// figures: the changes of agent-change.pprof, and the changes and batches
// of agent-change-paced.pprof.
func writeCounts(dir string, profiled, pacedChanges, pacedBatches int) error {
	return os.WriteFile(filepath.Join(dir, "agent-change.txt"), fmt.Appendf(nil,
		"agent-change.pprof: %d changes, one at a time\nagent-change-paced.pprof: %d changes at %d a second, %d batches\n",
		profiled, pacedChanges, pacedRate, pacedBatches), 0o644)
}

// pacedRate is the rate of the paced blocks, changes a second, and
// pacedInFlight the most puts of them in flight at once.
const (
	pacedRate     = 1000
	pacedInFlight = 64
	// pacedBlock is the most changes of one paced block.
	pacedBlock = 250
)

// agentChangeBlock is the number of changes of one block; the agent's and
// the baseline's blocks alternate, so that the machine's drift weighs on
// both alike.
const agentChangeBlock = 100

// measureAgentChange loads W(n) into an embedded etcd and starts one agent
// (controller with its etcd watcher, processor, NAT44 renderer over a
// counting VPP). It then writes changes, each waited for until the agent
// has applied it, in blocks that alternate with blocks of the same values
// put under their mirror keys (mirrorKey), which only a bare watcher (its
// own client, no decoding) watches, and waited for until that watcher has
// received them. The
// difference of the two per-change CPU figures is the agent's work from
// the watch event on: decoding, the controller's queue and batch, the
// processor, the renderer and the VPP calls; etcd's commit and watch send
// and the gRPC receive are in both. With dir set, a CPU profile of the
// agent's changes alone is written to dir/agent-change.pprof.
func measureAgentChange(ctx context.Context, env *core.Env, n, changes int, fast bool, dir string, profileTime time.Duration) (*agentChangeRun, error) {
	m, cli, w, closeEtcd, err := core.EtcdHolding(ctx, fast, n)
	if err != nil {
		return nil, fmt.Errorf("agent-change: %w", err)
	}
	defer closeEtcd()
	// The baseline's keys are a mirror of W(n)'s EndpointSlices, loaded
	// beside them (as many keys, in the same part of etcd's key index)
	// under a prefix the agent does not watch, and the baseline puts to
	// the mirror of the slice the agent's put would change: etcd's work
	// for a put (finding the key in its index, the write, the watch
	// match) is then the same on both paths and only the agent's work is
	// left in the difference. A baseline of keys of their own, outside
	// W(n)'s key space, cost etcd ~30 µs less per put (docs/PERFORMANCE.md).
	if err := loadMirror(ctx, cli, w); err != nil {
		return nil, fmt.Errorf("agent-change: loading the baseline's mirror of W(%d): %w", n, err)
	}
	seq := changeSeq(w)
	set := newFanoutSet(env, m, env.PodTable(w), 1)
	defer set.close()
	// The agent's goroutines, and the ones they start (its etcd client's
	// included), carry the profile label part=agent: its own CPU shows in
	// agent-change.pprof with -tagfocus part=agent, etcd's and the
	// writer's left out.
	var err2 error
	pprof.Do(ctx, pprof.Labels("part", "agent"), func(ctx context.Context) {
		err2 = set.grow(ctx, 1, func(int) bool { return true })
	})
	if err2 != nil {
		return nil, err2
	}

	if dir != "" {
		if err := core.WriteHeapProfile(filepath.Join(dir, "agent-heap.pprof")); err != nil {
			return nil, err
		}
	}
	bare, err := core.EtcdClient(ctx, m)
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wch := bare.Watch(wctx, basePrefix, clientv3.WithPrefix())
	// The bare watch counts the events it receives and says so on got.
	var received atomic.Int64
	got := make(chan struct{}, 1)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for resp := range wch {
			received.Add(int64(len(resp.Events)))
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	baseWritten := int64(0)
	// baseWait waits until the bare watch has received every put written.
	baseWait := func() error {
		timeout := time.After(time.Minute)
		for received.Load() < baseWritten {
			select {
			case <-got:
			case <-timeout:
				return errors.New("agent-change: the bare watch received nothing within a minute")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
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
		if _, err := cli.Put(ctx, mirrorKey(s), string(val)); err != nil {
			return err
		}
		baseWritten++
		return baseWait()
	}
	// Warm up both paths (connections, the runtime's caches).
	for range agentChangeBlock / 2 {
		if err := errors.Join(agentOne(), baseOne()); err != nil {
			return nil, err
		}
	}
	var ms runtime.MemStats
	// measured runs f and returns its process CPU and heap allocations.
	measured := func(f func() error) (changeCost, error) {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		c := changeCost{cpu: -core.CPUTime(), allocs: -int64(ms.Mallocs), bytes: -int64(ms.TotalAlloc)}
		if err := f(); err != nil {
			return changeCost{}, err
		}
		c.cpu += core.CPUTime()
		runtime.ReadMemStats(&ms)
		c.allocs, c.bytes = c.allocs+int64(ms.Mallocs), c.bytes+int64(ms.TotalAlloc)
		return c, nil
	}
	block := func(one func() error) (changeCost, error) {
		return measured(func() error {
			for range agentChangeBlock {
				if err := one(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	out := &agentChangeRun{}
	var agentCost, baseCost changeCost
	for out.changes < changes {
		a, err := block(agentOne)
		if err != nil {
			return nil, err
		}
		b, err := block(baseOne)
		if err != nil {
			return nil, err
		}
		agentCost, baseCost = agentCost.add(a), baseCost.add(b)
		out.changes += agentChangeBlock
	}
	out.withAgent = agentCost.cpu / time.Duration(out.changes)
	out.baseline = baseCost.cpu / time.Duration(out.changes)
	out.perChange = out.withAgent - out.baseline // ≤ 0: within the noise (rows)
	out.allocs = float64(agentCost.allocs-baseCost.allocs) / float64(out.changes)
	out.bytes = float64(agentCost.bytes-baseCost.bytes) / float64(out.changes)

	// The paced blocks: pacedRate changes a second, each put without
	// waiting for the one before, the agent's and the bare watch's in
	// turn as above. The agent's block ends with one change waited for
	// (the watch delivers and the loop applies in order, so every change
	// before it is applied then); the bare watch's once it received all.
	vals := make([][]byte, len(seq))
	for i, sl := range seq {
		if vals[i], err = kubestate.Encode(sl); err != nil {
			return nil, err
		}
	}
	agentKey := func(i int) string { return seq[(next+i)%len(seq)].Key().String() }
	agentPut := func(i int) error {
		_, err := cli.Put(ctx, agentKey(i), string(vals[(next+i)%len(seq)]))
		return err
	}
	baseKey := func(i int) string { return mirrorKey(seq[(bnext+i)%len(seq)]) }
	basePut := func(i int) error {
		_, err := cli.Put(ctx, baseKey(i), string(vals[(bnext+i)%len(seq)]))
		return err
	}
	ctl := set.agents[0].ctl
	var agentPaced, basePaced changeCost
	var pacedWall time.Duration
	batches0 := ctl.Status().Batches
	pb := min(pacedBlock, changes)
	for out.pacedChanges < changes {
		a, err := measured(func() error {
			t0 := time.Now() // after measured's collection
			if err := paced(ctx, pb-1, agentKey, agentPut); err != nil {
				return err
			}
			next += pb - 1
			err := agentOne()
			pacedWall += time.Since(t0)
			return err
		})
		if err != nil {
			return nil, err
		}
		b, err := measured(func() error {
			baseWritten += int64(pb - 1)
			if err := paced(ctx, pb-1, baseKey, basePut); err != nil {
				return err
			}
			bnext += pb - 1
			if err := baseWait(); err != nil {
				return err
			}
			return baseOne()
		})
		if err != nil {
			return nil, err
		}
		agentPaced, basePaced = agentPaced.add(a), basePaced.add(b)
		out.pacedChanges += pb
	}
	out.pacedBatches = int(ctl.Status().Batches - batches0)
	out.pacedAchieved = float64(out.pacedChanges) / pacedWall.Seconds()
	out.pacedWithAgent = agentPaced.cpu / time.Duration(out.pacedChanges)
	out.pacedBase = basePaced.cpu / time.Duration(out.pacedChanges)
	out.paced = out.pacedWithAgent - out.pacedBase
	if dir == "" {
		return out, nil
	}
	if out.profiled, err = core.ProfileFor(filepath.Join(dir, "agent-change.pprof"), profileTime, agentOne); err != nil {
		return nil, err
	}
	// As many changes watched by the bare watch alone: the base that
	// go tool pprof -diff_base agent-change-base.pprof agent-change.pprof
	// takes out, leaving the agent's own work.
	if err := core.CPUProfile(filepath.Join(dir, "agent-change-base.pprof"), func() error {
		for range out.profiled {
			if err := baseOne(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// The allocations of the agent's changes: every 4 KiB allocated is
	// sampled from here on, and the heap profile written before them is
	// the base to take out (go tool pprof -sample_index=alloc_space
	// -diff_base agent-allocs-base.pprof agent-allocs.pprof).
	runtime.MemProfileRate = 4096
	if err := core.WriteHeapProfile(filepath.Join(dir, "agent-allocs-base.pprof")); err != nil {
		return nil, err
	}
	for range agentChangeBlock * 10 {
		if err := agentOne(); err != nil {
			return nil, err
		}
	}
	if err := core.WriteHeapProfile(filepath.Join(dir, "agent-allocs.pprof")); err != nil {
		return nil, err
	}
	runtime.MemProfileRate = 512 * 1024 // the runtime's default
	// The paced changes, pacedRate a second, in blocks as above, for as
	// long: what the agent does per batch and per change when changes
	// queue up (label part=agent as before).
	batches0 = ctl.Status().Batches
	pacedBlocks, err := core.ProfileFor(filepath.Join(dir, "agent-change-paced.pprof"), profileTime, func() error {
		if err := paced(ctx, pb-1, agentKey, agentPut); err != nil {
			return err
		}
		next += pb - 1
		return agentOne()
	})
	if err != nil {
		return nil, err
	}
	pacedProfiled := pacedBlocks * pb
	return out, writeCounts(dir, out.profiled, pacedProfiled, int(ctl.Status().Batches-batches0))
}

// basePrefix holds the baseline's mirror of W(N)'s EndpointSlices: next
// to theirs in etcd's key order (under kubestate.Prefix), and not under
// any prefix the agent watches (those end with '/').
var basePrefix = strings.TrimSuffix(kubestate.ResEndpointSlice.KeyPrefix(), "/") + "-baseline/"

// mirrorKey is the baseline's key of sl.
func mirrorKey(sl *kubestate.EndpointSlice) string {
	return basePrefix + sl.Namespace + "/" + sl.Name
}

// loadMirror puts every EndpointSlice of w under its mirrorKey, in
// transactions of up to 128 puts.
func loadMirror(ctx context.Context, cli *clientv3.Client, w *workload.Workload) error {
	ops := make([]clientv3.Op, 0, 128)
	for i, sl := range w.Slices {
		val, err := kubestate.Encode(sl)
		if err != nil {
			return err
		}
		ops = append(ops, clientv3.OpPut(mirrorKey(sl), string(val)))
		if len(ops) == cap(ops) || i == len(w.Slices)-1 {
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				return err
			}
			ops = ops[:0]
		}
	}
	return nil
}

// changeCost is the process CPU and the heap allocations of a section.
type changeCost struct {
	cpu           time.Duration
	allocs, bytes int64
}

func (c changeCost) add(d changeCost) changeCost {
	return changeCost{cpu: c.cpu + d.cpu, allocs: c.allocs + d.allocs, bytes: c.bytes + d.bytes}
}

// paced calls put count times (with 0, 1, …), pacedRate times a second, without waiting
// for a call to return before making the next (up to pacedInFlight at
// once; when they fall behind, the calls go as fast as they can until they
// are back on time). Calls with the same key (the etcd key put) go in
// order, one after the other: the sequence puts a slice and, further on,
// puts it back, and two puts of one key in flight at once could commit in
// either order (then a later put of the sequence would be no change, and
// the agent rightly apply nothing). It returns once every call returned.
func paced(ctx context.Context, count int, key func(i int) string, put func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	workers := make([]chan int, pacedInFlight)
	for w := range workers {
		calls := make(chan int, 1)
		workers[w] = calls
		wg.Go(func() {
			for i := range calls {
				if err := put(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for i := range count {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / pacedRate)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		h := fnv.New32a()
		h.Write([]byte(key(i)))
		workers[h.Sum32()%pacedInFlight] <- i
	}
	for _, calls := range workers {
		close(calls)
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// RunAgentChange measures the agent-change figure min(Runs, 3) times
// (medians); profiles are taken in the last run only.
func RunAgentChange(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, res *Results) error {
	runs := min(o.Runs, 3)
	o.Log.Info("agent CPU per change, watch event to VPP call", "n", o.FanoutSize, "changes", o.AgentChanges, "runs", runs)
	var per, with, base, allocs, bytes, paced, rate, batches []float64
	var changes int
	for i := range runs {
		dir := ""
		if i == runs-1 {
			dir = o.ProfileDir
		}
		r, err := measureAgentChange(ctx, env, o.FanoutSize, o.AgentChanges, o.FastEtcd, dir, o.ProfileTime)
		if err != nil {
			return err
		}
		o.Log.Info("agent-change run", "run", i+1, "perChange", r.perChange, "profiled", r.profiled)
		per, with, base = append(per, core.US(r.perChange)), append(with, core.US(r.withAgent)), append(base, core.US(r.baseline))
		allocs, bytes = append(allocs, r.allocs), append(bytes, r.bytes)
		paced, rate = append(paced, core.US(r.paced)), append(rate, r.pacedAchieved)
		batches = append(batches, float64(r.pacedBatches)/float64(max(r.pacedChanges, 1)))
		changes = r.changes
	}
	res.AgentChangeCPUUS = core.Median(per)
	res.AgentChange = &AgentChangeResult{N: o.FanoutSize, Changes: changes, Runs: runs, PerRunUS: per, WithAgentUS: core.Median(with), BaselineUS: core.Median(base),
		AllocsPerChange: core.Median(allocs), BytesPerChange: core.Median(bytes),
		CPUUSPerChange1000ps: core.Median(paced), PacedPerRunUS: paced, PacedRate: core.Median(rate), BatchesPerChange: core.Median(batches)}
	return nil
}

// AgentChangeRows are the agent-change figure's rows.
func AgentChangeRows(_ *core.Results, r *Results, t *core.Rows) {
	a := r.AgentChange
	if a == nil {
		return
	}
	t.AddSingle(fmt.Sprintf("agent CPU per change, watch event to VPP call, W(%d) (µs; median of %d runs of %d changes: %s)", a.N, a.Runs, a.Changes, core.FmtList(a.PerRunUS, "%.0f")),
		difference(r.AgentChangeCPUUS), "≤ 30", core.Verdict(a.N == core.TargetSize && r.AgentChangeCPUUS > 0, func() bool { return r.AgentChangeCPUUS <= targetAgentChangeCPUUS }))
	t.AddSingle("… process CPU per change with the agent / with a bare watch (µs)", fmt.Sprintf("%.1f / %.1f", a.WithAgentUS, a.BaselineUS), "", "")
	t.AddSingle("… agent's heap allocations per change (objects; bytes)", fmt.Sprintf("%.1f; %.0f", a.AllocsPerChange, a.BytesPerChange), "", "")
	t.AddSingle(fmt.Sprintf("agent CPU per change at 1000 changes/s, W(%d) (µs; runs: %s; %.0f/s achieved; batches per change %.2f)", a.N, core.FmtList(a.PacedPerRunUS, "%.1f"), a.PacedRate, a.BatchesPerChange),
		difference(a.CPUUSPerChange1000ps), "≤ 10", core.Verdict(a.N == core.TargetSize && a.CPUUSPerChange1000ps > 0, func() bool { return a.CPUUSPerChange1000ps <= targetAgentPacedCPUUS }))
}

// difference prints an agent's share of the process's CPU, the process's
// CPU with the agent less without it: a median not above zero says that
// the two runs' noise was larger than the agent's cost, which is then not
// measured (n/a), never met.
func difference(us float64) string {
	if us <= 0 {
		return fmt.Sprintf("%.1f (within the noise)", us)
	}
	return fmt.Sprintf("%.1f", us)
}

// Issue 25's targets for the agent's CPU per isolated change and per
// change at 1000 changes/s, µs.
const (
	targetAgentChangeCPUUS = 30
	targetAgentPacedCPUUS  = 10
)
