package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/bench/workload"
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
