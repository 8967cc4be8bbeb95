package harness

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
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// ServiceTime is the simulated VPP's service time in the figures over its
// socket: about a real VPP 25.02's synchronous round trip (FACTS §7:
// ~0.23 ms per request/reply on the measuring machine).
const ServiceTime = 200 * time.Microsecond

// ProgramSize is the N of the programming and start-up figures.
const ProgramSize = 10000

// ProgramRun is W(N) programmed in full into an empty VPP served on a
// unix socket, through the agent's VPP client (govpp's socket client).
type ProgramRun struct {
	Calls              int
	SyncMS, PipelinedMS float64
}

// measureVPPProgram times the full apply of W(n) into a fresh simulated
// VPP served on a socket with serviceTime per request, with every call
// waiting for its answer and pipelined, taking turns, runs times each;
// the medians are kept.
func measureVPPProgram(ctx context.Context, env *Env, n, runs int, log *slog.Logger) (*ProgramRun, error) {
	return MeasureProgram(ctx, env, n, runs, false, log)
}

// MeasureProgram is measureVPPProgram through the NAT44 renderer, or with
// useCNAT the cnat renderer.
func MeasureProgram(ctx context.Context, env *Env, n, runs int, useCNAT bool, log *slog.Logger) (*ProgramRun, error) {
	w := workload.New(n)
	evs, err := AllEvents(w)
	if err != nil {
		return nil, err
	}
	out := &ProgramRun{}
	var syncMS, pipeMS []float64
	for run := range runs {
		for _, pipelined := range []bool{false, true} {
			took, calls, err := ProgramOnce(ctx, env, w, evs, pipelined, useCNAT)
			if err != nil {
				return nil, fmt.Errorf("n=%d (pipelined %v): %w", n, pipelined, err)
			}
			log.Info("W(N) programmed over the socket", "n", n, "run", run+1, "cnat", useCNAT, "pipelined", pipelined, "took", took, "calls", calls)
			if pipelined {
				pipeMS = append(pipeMS, MS(took))
			} else {
				syncMS = append(syncMS, MS(took))
			}
			if out.Calls != 0 && calls != out.Calls {
				return nil, fmt.Errorf("n=%d: %d calls and %d calls for the same programming", n, out.Calls, calls)
			}
			out.Calls = calls
		}
	}
	out.SyncMS, out.PipelinedMS = Median(syncMS), Median(pipeMS)
	return out, nil
}

// synchronous hides a VPP client's Pipeline: the renderer then waits for
// every answer. Its ACL port stays: source ranges are enforced either way.
type synchronous struct {
	nat44.VPP
	nat44.ACLVPP
}

// synchronousCNAT is synchronous for the cnat client.
type synchronousCNAT struct{ cnat.VPP }

// ProgramOnce is one full apply of W(N) into an empty socket-served VPP:
// its wall time and the binary-API calls the VPP received; with useCNAT
// through the cnat renderer.
func ProgramOnce(ctx context.Context, env *Env, w *workload.Workload, evs *Events, pipelined, useCNAT bool) (time.Duration, int, error) {
	quiet := slog.New(slog.DiscardHandler)
	v, err := NodeVPP(env, w, sim.Options{ServiceTime: ServiceTime})
	if err != nil {
		return 0, 0, err
	}
	defer v.Close()
	dir, err := os.MkdirTemp("", "contiv-bench-vpp-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	srv, err := v.Serve(filepath.Join(dir, "api.sock"))
	if err != nil {
		return 0, 0, err
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vc := vpp.Config{Socket: srv.Path(), Logger: quiet, HealthInterval: time.Minute}
	if useCNAT {
		vc.ExtraMessages = vpp.CNATMessages()
	}
	conn := vpp.New(vc)
	conn.Start(ctx)
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := conn.WaitConnected(wctx); err != nil {
		return 0, 0, fmt.Errorf("simulated VPP on its socket: %w", err)
	}
	ifaces := vpp.NewInterfaces(conn, nil)
	if err := ifaces.Refresh(ctx); err != nil {
		return 0, 0, fmt.Errorf("simulated VPP interfaces: %w", err)
	}
	var p *Pipeline
	if useCNAT {
		var client cnat.VPP = vpp.NewCNAT(conn, ifaces, quiet)
		if !pipelined {
			client = synchronousCNAT{client}
		}
		p, err = env.NewCNATPipeline(client, ifaces)
	} else {
		nc := vpp.NewNAT44(conn, ifaces, quiet)
		var client nat44.VPP = nc
		if !pipelined {
			client = synchronous{nc, nc}
		}
		p, err = env.NewPipeline(client, ifaces)
	}
	if err != nil {
		return 0, 0, err
	}
	if err := p.Proc.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: evs.Snap}); err != nil {
		return 0, 0, err
	}
	v.ResetCalls()
	t0 := time.Now()
	if err := p.Apply(ctx, true); err != nil {
		return 0, 0, err
	}
	took := time.Since(t0)
	if err := p.Check(); err != nil {
		return 0, 0, err
	}
	calls := 0
	for _, c := range v.CallCounts() {
		calls += c
	}
	return took, calls, nil
}

// NodeVPP is a simulated VPP with node 1's interfaces and W's local pods'.
func NodeVPP(env *Env, w *workload.Workload, opts sim.Options) (*sim.VPP, error) {
	v := sim.New(opts)
	v.CreateTable(env.Config.Routing.PodVRFID) // the startup configuration's pod VRF
	if err := env.AddInterfaces(v, w); err != nil {
		return nil, err
	}
	return v, nil
}

// addInterfaces gives v node 1's interfaces and those of W's local pods.
func (e *Env) AddInterfaces(v *sim.VPP, w *workload.Workload) error {
	for _, name := range []string{MainNIC, e.Config.Routing.HostInterconnectInterface, e.Config.Routing.VXLANBVIInterface} {
		if _, err := v.AddInterface(name, ""); err != nil {
			return err
		}
	}
	for _, p := range w.Pods {
		name, tag := e.PodInterface(p.Namespace, p.Name)
		if _, err := v.AddInterface(name, tag); err != nil {
			return err
		}
	}
	return nil
}

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
// against a socket-served simulated VPP with serviceTime per request:
// first empty, then, after stopping it, again against the VPP it
// programmed; runs times, each with a new VPP, keeping the medians.
func measureStartup(ctx context.Context, env *Env, n, runs int, fastEtcd bool, logOut io.Writer, log *slog.Logger) (*startupRun, error) {
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
	// etcdApart runs etcd in a process of its own (a child: RunChild), as
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
func measureStartupOf(ctx context.Context, env *Env, n, runs int, opts startupOpts, logOut io.Writer, log *slog.Logger) (*startupRun, error) {
	endpoint, cli, etcdCPU, closeEtcd, err := startupEtcd(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("startup: %w", err)
	}
	opts.etcdCPU = etcdCPU
	defer closeEtcd()
	w, err := LoadW(ctx, cli, n)
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
		empty, programmed = append(empty, MS(e.took)), append(programmed, MS(p.took))
		emptyCPU, programmedCPU = append(emptyCPU, MS(e.cpu)), append(programmedCPU, MS(p.cpu))
		heaps = append(heaps, p.heapMiB)
		out.programmedMem = p.mem
		progEtcd, progVPP = append(progEtcd, MS(p.etcdCPU)), append(progVPP, MS(p.vppCPU))
		out.emptyWrites, out.programmedWrites = e.writes, p.writes
	}
	out.emptyMS, out.programmedMS, out.heapMiB = Median(empty), Median(programmed), Median(heaps)
	out.emptyCPUMS, out.programmedCPUMS = Median(emptyCPU), Median(programmedCPU)
	out.programmedEtcdCPUMS, out.programmedVPPCPUMS = Median(progEtcd), Median(progVPP)
	return out, nil
}

// startupEtcd starts the etcd of measureStartupOf: embedded in this
// process, or (opts.etcdApart) a child; endpoint is its host:port.
// With etcd apart, cpu is its process's CPU so far (nil in process).
func startupEtcd(ctx context.Context, opts startupOpts) (endpoint string, cli *clientv3.Client, cpu func() (time.Duration, error), closeEtcd func(), err error) {
	if !opts.etcdApart {
		m, cli, closeEtcd, err := EmbeddedEtcd(ctx, opts.fastEtcd)
		if err != nil {
			return "", nil, nil, nil, err
		}
		return m.Endpoint(), cli, nil, closeEtcd, nil
	}
	dir, err := os.MkdirTemp("", "contiv-bench-etcd-")
	if err != nil {
		return "", nil, nil, nil, err
	}
	fast := "0"
	if opts.fastEtcd {
		fast = "1"
	}
	c, err := StartChild(RoleEtcd, childDirEnv+"="+dir, childFastEnv+"="+fast)
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
	if err := WaitUntil(ctx, 3*time.Second, func() bool { return runtime.NumGoroutine() <= before }); err != nil && ctx.Err() != nil {
		return 0, err
	}
	h := HeapAfterGC()
	for range 30 {
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
		next := HeapAfterGC()
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
	t0, cpu0 := time.Now(), CPUTime()
	if a, err = agent.New(ctx, opts); err != nil {
		return nil, 0, 0, nil, fmt.Errorf("startup: agent: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	if err := WaitUntil(ctx, 5*time.Minute, a.Ready); err != nil {
		stop()
		return nil, 0, 0, nil, fmt.Errorf("startup: agent not ready: %w", err)
	}
	return a, time.Since(t0), CPUTime() - cpu0, stop, nil
}

// startTwice starts the agent against a new, empty socket-served VPP,
// stops it, and starts it again against the VPP it programmed. With heap,
// the second start also measures the agent's live heap: the heap after a
// full collection with the agent running less the same once it stopped
// (etcd and the simulated VPP hold the same in both).
func startTwice(ctx context.Context, cfg contivconf.Config, heap heapProbe, logOut io.Writer) (empty, programmed started, err error) {
	v := sim.New(sim.Options{ServiceTime: ServiceTime})
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
		if err := Quiesce(ctx, a, v); err != nil {
			return started{}, err
		}
		if fs := a.Renderer().Failures(); len(fs) > 0 {
			return started{}, fmt.Errorf("startup: NAT44 objects VPP refused: %d, first %+v", len(fs), fs[0])
		}
		if heap.profile != "" {
			if err := WriteHeapProfile(heap.profile); err != nil {
				return started{}, err
			}
		}
		if heap.measure {
			// Two collections: a sync.Pool's objects (gRPC's receive
			// buffers: a listing's pages of up to 4000 values) survive one.
			with := LiveHeapAfterGC()
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

// runVPPProgram measures W(ProgramSize) programmed over the socket.
func runVPPProgram(ctx context.Context, env *Env, o Options, res *Results) error {
	o.Log.Info("W(N) programmed over the socket, synchronous and pipelined", "n", o.ProgramSize, "serviceTime", ServiceTime)
	r, err := measureVPPProgram(ctx, env, o.ProgramSize, min(o.Runs, 3), o.Log)
	if err != nil {
		return err
	}
	res.VPPProgram = &VPPProgramResult{
		Calls: r.Calls, ServiceUS: US(ServiceTime), SyncMS: r.SyncMS, PipelinedMS: r.PipelinedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
	}
	return nil
}

// vppProgramRows are the vpp-program figure's rows.
func vppProgramRows(r *Results, t *Rows) { ProgramRows(t, "", r.VPPProgram) }

// ProgramRows are the rows of W(N) programmed over the socket (p nil: none).
func ProgramRows(t *Rows, prefix string, p *VPPProgramResult) {
	if p == nil {
		return
	}
	t.AddSingle(fmt.Sprintf("%sW(%d) programmed over the VPP socket, %.0f µs per request, median of %d: synchronous (ms; calls)", prefix, p.N, p.ServiceUS, p.Runs),
		fmt.Sprintf("%.0f (%d)", p.SyncMS, p.Calls), "", "")
	t.AddSingle("… pipelined (ms; calls/s)", fmt.Sprintf("%.0f (%.0f/s)", p.PipelinedMS, float64(p.Calls)/(p.PipelinedMS/1000)),
		"≤ 500", Verdict(p.N == TargetSize, func() bool { return p.PipelinedMS <= targetPipelinedMS }))
}

// runStartup measures the agent's start to ready over the socket.
func runStartup(ctx context.Context, env *Env, o Options, res *Results) error {
	o.Log.Info("agent start to ready over the socket", "n", o.ProgramSize, "serviceTime", ServiceTime)
	r, err := measureStartup(ctx, env, o.ProgramSize, min(o.Runs, 3), o.FastEtcd, o.AgentLog, o.Log)
	if err != nil {
		return err
	}
	res.Startup = &StartupResult{
		EmptyMS: r.emptyMS, ProgrammedMS: r.programmedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
		EmptyWrites: r.emptyWrites, ProgrammedWrites: r.programmedWrites, ServiceUS: US(ServiceTime),
	}
	return nil
}

// startupRows are the startup figure's rows.
func startupRows(r *Results, t *Rows) {
	if s := r.Startup; s != nil {
		t.AddSingle(fmt.Sprintf("agent start to ready, W(%d), empty VPP over its socket, median of %d (ms; VPP writes)", s.N, s.Runs),
			fmt.Sprintf("%.0f (%d)", s.EmptyMS, s.EmptyWrites), "≤ 1000", Verdict(s.N == TargetSize, func() bool { return s.EmptyMS <= targetStartupEmptyMS }))
		t.AddSingle("… VPP already programmed (ms; VPP writes)", fmt.Sprintf("%.0f (%d)", s.ProgrammedMS, s.ProgrammedWrites),
			"≤ 500", Verdict(s.N == TargetSize, func() bool { return s.ProgrammedMS <= targetStartupProgramMS }))
	}
}
