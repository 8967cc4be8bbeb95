package startup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.fd.io/govpp/adapter"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// startupRun is the agent's start to ready with W(N) in etcd, medians.
type startupRun struct {
	// emptyMS: against an empty VPP (everything written); programmedMS:
	// against a VPP that holds W(N) already (nothing written).
	emptyMS, programmedMS         float64
	emptyWrites, programmedWrites int
	// heapMiB is the agent's live heap once ready against the programmed
	// VPP (median; measured only when asked).
	heapMiB float64
	// emptyCPUMS and programmedCPUMS: the process's CPU time from the
	// start to ready (the agent's and the simulated VPP's, and etcd's when
	// it runs in the benchmark's process).
	emptyCPUMS, programmedCPUMS float64
	// programmedMem is the agent's process's memory over the last
	// programmed start (vppApart only).
	programmedMem startMem
	// programmedEtcdCPUMS and programmedVPPCPUMS: the etcd and VPP
	// children's CPU over a programmed start (vppApart only).
	programmedEtcdCPUMS, programmedVPPCPUMS float64
}

// socketServed is the simulated dataplane reached through VPP's socket:
// the agent's real socket client connects to the simulated VPP's Server,
// everything else is agent.Simulated's (its CNI among them).
type socketServed struct{ agent.Dataplane }

// Adapter is nil: the agent dials its configured socket.
func (socketServed) Adapter() adapter.VppAPI { return nil }

// measureStartup starts the real agent with W(n) in an embedded etcd
// against a socket-served simulated VPP with core.ServiceTime per request:
// first empty, then, after stopping it, again against the VPP it
// programmed; runs times, each with a new VPP, keeping the medians.
func measureStartup(ctx context.Context, env *core.Env, n, runs int, fastEtcd bool, logOut io.Writer, log *slog.Logger) (*startupRun, error) {
	return measureStartupOf(ctx, env, n, runs, startupOpts{fastEtcd: fastEtcd}, logOut, log)
}

// heapProbe asks startTwice for the agent's live heap (measure) and, when
// profile is set, for a heap profile written there while it runs.
type heapProbe struct {
	measure bool
	profile string
}

// startupOpts are how measureStartupOf runs etcd and what it measures
// besides the time to ready.
type startupOpts struct {
	fastEtcd bool
	heap     heapProbe
	// etcdApart runs etcd in a process of its own (a child: core.RunChild), as
	// it is deployed (a StatefulSet), instead of in the benchmark's: its
	// CPU and garbage are then not on the agent's clock.
	etcdApart bool
	// vppApart (with etcdApart) runs the simulated VPP in a process of its
	// own too, and the agent as against a real VPP (startTwiceApart).
	vppApart bool
	// agentApart (with vppApart) runs the agent in a process of its own
	// too (startAgentApart).
	agentApart bool
	// profile (with vppApart): the programmed start's CPU profile's file.
	profile string
	// etcdCPU (set by measureStartupOf with etcdApart) is the etcd child's
	// CPU so far.
	etcdCPU func() (time.Duration, error)
}

// measureStartupOf is measureStartup with opts; with opts.heap.measure it
// also measures the agent's live heap after its second start of each run.
func measureStartupOf(ctx context.Context, env *core.Env, n, runs int, opts startupOpts, logOut io.Writer, log *slog.Logger) (*startupRun, error) {
	endpoint, cli, etcdCPU, closeEtcd, err := startupEtcd(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("startup: %w", err)
	}
	opts.etcdCPU = etcdCPU
	defer closeEtcd()
	w, err := core.LoadW(ctx, cli, n)
	if err != nil {
		return nil, fmt.Errorf("startup: %w", err)
	}
	cfg, dir, removeDir, err := env.AgentConfig(endpoint, "startup")
	if err != nil {
		return nil, err
	}
	defer removeDir()
	cfg.VPP.Socket = filepath.Join(dir, "api.sock")
	out := &startupRun{}
	var empty, programmed, heaps, emptyCPU, programmedCPU, progEtcd, progVPP []float64
	for run := range runs {
		var e, p started
		if opts.vppApart {
			e, p, err = startTwiceApart(ctx, cfg, vppSpec(env, cfg, w), opts, logOut)
		} else {
			e, p, err = startTwice(ctx, cfg, opts.heap, logOut)
		}
		if err != nil {
			return nil, err
		}
		log.Info("agent start to ready over the socket", "n", n, "run", run+1, "etcdApart", opts.etcdApart, "vppApart", opts.vppApart, "empty", e.took, "programmed", p.took,
			"emptyCPU", e.cpu, "programmedCPU", p.cpu, "heapMiB", p.heapMiB, "programmedMem", p.mem,
			"programmedEtcdCPU", p.etcdCPU, "programmedVPPCPU", p.vppCPU)
		empty, programmed = append(empty, core.MS(e.took)), append(programmed, core.MS(p.took))
		emptyCPU, programmedCPU = append(emptyCPU, core.MS(e.cpu)), append(programmedCPU, core.MS(p.cpu))
		heaps = append(heaps, p.heapMiB)
		out.programmedMem = p.mem
		progEtcd, progVPP = append(progEtcd, core.MS(p.etcdCPU)), append(progVPP, core.MS(p.vppCPU))
		out.emptyWrites, out.programmedWrites = e.writes, p.writes
	}
	out.emptyMS, out.programmedMS, out.heapMiB = core.Median(empty), core.Median(programmed), core.Median(heaps)
	out.emptyCPUMS, out.programmedCPUMS = core.Median(emptyCPU), core.Median(programmedCPU)
	out.programmedEtcdCPUMS, out.programmedVPPCPUMS = core.Median(progEtcd), core.Median(progVPP)
	return out, nil
}

// startupEtcd starts the etcd of measureStartupOf: embedded in this
// process, or (opts.etcdApart) a child; endpoint is its host:port.
// With etcd apart, cpu is its process's CPU so far (nil in process).
func startupEtcd(ctx context.Context, opts startupOpts) (endpoint string, cli *clientv3.Client, cpu func() (time.Duration, error), closeEtcd func(), err error) {
	if !opts.etcdApart {
		m, cli, closeEtcd, err := core.EmbeddedEtcd(ctx, opts.fastEtcd)
		if err != nil {
			return "", nil, nil, nil, err
		}
		return m.Endpoint(), cli, nil, closeEtcd, nil
	}
	dir, err := os.MkdirTemp("", "contiv-bench-etcd-")
	if err != nil {
		return "", nil, nil, nil, err
	}
	c, err := core.StartEtcdChild(dir, opts.fastEtcd)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, nil, nil, err
	}
	closeAll := func() {
		c.Close()
		_ = os.RemoveAll(dir)
	}
	cli, err = etcd.NewClient(ctx, etcd.ClientParams{Endpoints: []string{c.Endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		closeAll()
		return "", nil, nil, nil, err
	}
	cpu = func() (time.Duration, error) {
		st, err := c.Stats("cpu")
		return time.Duration(st.CPUNS), err
	}
	return strings.TrimPrefix(c.Endpoint, "http://"), cli, cpu, func() {
		_ = cli.Close()
		closeAll()
	}, nil
}

// settledHeap is the live heap once what a stopped agent held is freed:
// some of its goroutines (its etcd client's among them) end after Run
// returns and hold its state until then. It waits (up to 3 s) for the
// goroutines to be back to at most before, then collects until the heap
// stops falling.
func settledHeap(ctx context.Context, before int) (uint64, error) {
	if err := core.WaitUntil(ctx, 3*time.Second, func() bool { return runtime.NumGoroutine() <= before }); err != nil && ctx.Err() != nil {
		return 0, err
	}
	h := core.HeapAfterGC()
	for range 30 {
		if err := core.Sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
		next := core.HeapAfterGC()
		if next+(1<<20) > h {
			return min(h, next), nil
		}
		h = next
	}
	return h, nil
}

// started is one agent start: to ready, and the VPP writes until then;
// heapMiB the agent's live heap once quiesced, when measured.
type started struct {
	took time.Duration
	// cpu is the process's CPU time from the start to ready: the agent's,
	// etcd's and the simulated VPP's (all in this process).
	cpu     time.Duration
	writes  int
	heapMiB float64
	// mem is the agent's process's memory over the start (vppApart only).
	mem startMem
	// etcdCPU and vppCPU: the etcd and VPP children's CPU over the start
	// (vppApart only).
	etcdCPU, vppCPU time.Duration
}

// runUntilReady starts an agent with opts and waits until it is ready:
// the time and this process's CPU that took, and stop, which stops it
// (the first call; later ones do nothing). On error nothing runs.
func runUntilReady(ctx context.Context, opts agent.Options) (a *agent.Agent, took, cpu time.Duration, stop func(), err error) {
	t0, cpu0 := time.Now(), core.CPUTime()
	if a, err = agent.New(ctx, opts); err != nil {
		return nil, 0, 0, nil, fmt.Errorf("startup: agent: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	if err := core.WaitUntil(ctx, 5*time.Minute, a.Ready); err != nil {
		stop()
		return nil, 0, 0, nil, fmt.Errorf("startup: agent not ready: %w", err)
	}
	return a, time.Since(t0), core.CPUTime() - cpu0, stop, nil
}

// startTwice starts the agent against a new, empty socket-served VPP,
// stops it, and starts it again against the VPP it programmed. With heap,
// the second start also measures the agent's live heap: the heap after a
// full collection with the agent running less the same once it stopped
// (etcd and the simulated VPP hold the same in both).
func startTwice(ctx context.Context, cfg contivconf.Config, heap heapProbe, logOut io.Writer) (empty, programmed started, err error) {
	v := sim.New(sim.Options{ServiceTime: core.ServiceTime})
	defer v.Close()
	srv, err := v.Serve(cfg.VPP.Socket)
	if err != nil {
		return empty, programmed, err
	}
	defer srv.Close()
	start := func(heap heapProbe) (s started, err error) {
		v.ResetCalls()
		goroutines := runtime.NumGoroutine()
		a, took, cpu, stop, err := runUntilReady(ctx, agent.Options{Config: cfg, Dataplane: socketServed{agent.Simulated(v)}, LogOutput: logOut})
		if err != nil {
			return started{}, err
		}
		defer stop()
		s = started{took: took, cpu: cpu, writes: v.Writes()}
		if err := core.Quiesce(ctx, a, v); err != nil {
			return started{}, err
		}
		if fs := a.Renderer().Failures(); len(fs) > 0 {
			return started{}, fmt.Errorf("startup: NAT44 objects VPP refused: %d, first %+v", len(fs), fs[0])
		}
		if heap.profile != "" {
			if err := core.WriteHeapProfile(heap.profile); err != nil {
				return started{}, err
			}
		}
		if heap.measure {
			// Two collections: a sync.Pool's objects (gRPC's receive
			// buffers: a listing's pages of up to 4000 values) survive one.
			with := core.LiveHeapAfterGC()
			stop()
			after, err := settledHeap(ctx, goroutines)
			if err != nil {
				return started{}, err
			}
			s.heapMiB = float64(with-min(with, after)) / (1 << 20)
		}
		return s, nil
	}
	if empty, err = start(heapProbe{}); err != nil {
		return empty, programmed, err
	}
	if programmed, err = start(heap); err != nil {
		return empty, programmed, err
	}
	if c := v.Crashes(); c != 0 {
		return empty, programmed, fmt.Errorf("startup: the simulated VPP crashed: %s", v.LastCrash())
	}
	return empty, programmed, nil
}

// RunVPPProgram measures W(ProgramSize) programmed over the socket.
func RunVPPProgram(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, into *Results) error {
	o.Log.Info("W(N) programmed over the socket, synchronous and pipelined", "n", o.ProgramSize, "serviceTime", core.ServiceTime)
	r, err := core.MeasureProgram(ctx, env, o.ProgramSize, min(o.Runs, 3), false, o.Log)
	if err != nil {
		return err
	}
	into.VPPProgram = &core.VPPProgramResult{
		Calls: r.Calls, ServiceUS: core.US(core.ServiceTime), SyncMS: r.SyncMS, PipelinedMS: r.PipelinedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
	}
	return nil
}

// VPPProgramRows are the vpp-program figure's rows.
func VPPProgramRows(_ *core.Results, r *Results, t *core.Rows) { core.ProgramRows(t, "", r.VPPProgram) }

// RunStartup measures the agent's start to ready over the socket.
func RunStartup(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, into *Results) error {
	o.Log.Info("agent start to ready over the socket", "n", o.ProgramSize, "serviceTime", core.ServiceTime)
	r, err := measureStartup(ctx, env, o.ProgramSize, min(o.Runs, 3), o.FastEtcd, o.AgentLog, o.Log)
	if err != nil {
		return err
	}
	into.Startup = &StartupResult{
		EmptyMS: r.emptyMS, ProgrammedMS: r.programmedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
		EmptyWrites: r.emptyWrites, ProgrammedWrites: r.programmedWrites, ServiceUS: core.US(core.ServiceTime),
	}
	return nil
}

// StartupRows are the startup figure's rows.
func StartupRows(_ *core.Results, r *Results, t *core.Rows) {
	if s := r.Startup; s != nil {
		t.AddSingle(fmt.Sprintf("agent start to ready, W(%d), empty VPP over its socket, median of %d (ms; VPP writes)", s.N, s.Runs),
			fmt.Sprintf("%.0f (%d)", s.EmptyMS, s.EmptyWrites), "≤ 1000", core.Verdict(s.N == core.TargetSize, func() bool { return s.EmptyMS <= targetStartupEmptyMS }))
		t.AddSingle("… VPP already programmed (ms; VPP writes)", fmt.Sprintf("%.0f (%d)", s.ProgrammedMS, s.ProgrammedWrites),
			"≤ 500", core.Verdict(s.N == core.TargetSize, func() bool { return s.ProgrammedMS <= targetStartupProgramMS }))
	}
}

// Targets of issue 14 for the agent's start over the socket, ms.
const (
	targetStartupEmptyMS   = 1000
	targetStartupProgramMS = 500
)
