package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"contiv.dev/vpp/agent/nodepipeline"
)

// Figure names a group of figures Run can measure.
type Figure string

// The figure groups.
const (
	// FigPipeline: resync, per-change and node-join cost at every N.
	FigPipeline Figure = "pipeline"
	// FigCalls: binary-API calls per change at every N.
	FigCalls Figure = "calls"
	// FigDecode: decode cost of one EndpointSlice.
	FigDecode Figure = "decode"
	// FigNodeSync: K agents claiming IDs at once.
	FigNodeSync Figure = "nodesync"
	// FigNodeSyncMany: the same with ManyJoiners agents (1000), without
	// the address plan's bound on IDs.
	FigNodeSyncMany Figure = "nodesync-many"
	// FigNPL: network programming latency through the agent.
	FigNPL Figure = "npl"
	// FigRestart: an agent restart against a programmed VPP (writes), and
	// a VPP restart whose interfaces come late (time to all back, ready).
	FigRestart Figure = "restart"
	// FigCNAT: the pipeline figures with the cnat renderer at every N.
	FigCNAT Figure = "cnat"
	// FigVPPProgram: W(10000) programmed in full into an empty simulated
	// VPP served on a unix socket (200 µs per request), synchronous and
	// pipelined.
	FigVPPProgram Figure = "vpp-program"
	// FigStartup: the agent's start to ready with W(10000) against a
	// socket-served simulated VPP (200 µs per request), empty and already
	// programmed.
	FigStartup Figure = "startup"
	// FigFanout: K agents against one etcd holding W(10000), their heap,
	// etcd's and the fan-out latency of one EndpointSlice change.
	FigFanout Figure = "fanout"
	// FigAgentChange: the running agent's CPU per change at N=10000, from
	// the etcd watch event to the VPP calls issued.
	FigAgentChange Figure = "agent-change"
	// FigLarge: W(50 000) over a socket-served simulated VPP (200 µs per
	// request): full programming pipelined, the agent's start to ready
	// (empty and programmed) and its live heap.
	FigLarge Figure = "large"
	// FigRealVPP: W(N) (the large figure's N) programmed by the agent's
	// pipeline into a real VPP on Options.VPPSocket, and VPP's main heap
	// before and after. Only when named: CI has no VPP.
	FigRealVPP Figure = "real-vpp"
)

// AllFigures lists every figure group, in the order Run measures them.
func AllFigures() []Figure {
	return []Figure{FigPipeline, FigCNAT, FigCalls, FigDecode, FigNodeSync, FigNodeSyncMany, FigNPL, FigRestart, FigVPPProgram, FigStartup, FigFanout, FigAgentChange, FigLarge}
}

// Options configure Run. Zero fields take the defaults of BENCH.md.
type Options struct {
	// Sizes are the N of W(N); default 1000, 5000, 10000, 50000.
	Sizes []int
	// Runs is the number of runs whose median is reported; default 5.
	Runs int
	// Figures selects what to measure; default all.
	Figures []Figure
	// DecodeIters is the number of decodes per run; default 20000.
	DecodeIters int
	// Joiners is K, the number of agents claiming IDs at once; default 100.
	Joiners int
	// ManyJoiners is K of the nodesync-many figure; default 1000.
	ManyJoiners int
	// NPLSize is the N of the latency figure; default 10000.
	NPLSize int
	// ProgramSize is the N of the vpp-program and startup figures;
	// default 10000.
	ProgramSize int
	// LargeSize is the N of the large figure; default 50000.
	LargeSize int
	// NPLDuration and NPLRate: how long and how many changes per second
	// are written; defaults 60s and 20.
	NPLDuration time.Duration
	NPLRate     float64
	// FanoutKs are the agent counts of the fan-out figure; default 50,
	// 100, 200. FanoutSize is its N (default 10000) and FanoutChanges the
	// changes written at each K (default 50).
	FanoutKs      []int
	FanoutSize    int
	FanoutChanges int
	// FanoutProxies is P, the gRPC proxies of the proxy-tier part of the
	// fan-out figure (default 4; negative: that part is not measured);
	// FanoutLight the totals of watchers it reaches beyond the largest K
	// with lightweight watch-only agents beside the real ones (default
	// 1000, 2000).
	FanoutProxies int
	FanoutLight   []int
	// VPPSocket is the API socket of a freshly started real VPP that the
	// real-vpp figure may program (loopbacks, a table, W(N)).
	VPPSocket string
	// AgentChanges is the number of changes of the agent-change figure
	// (default 2000, in blocks of 100).
	AgentChanges int
	// FastEtcd gives embedded etcd short tick and election timings (tests);
	// the benchmark uses etcd's defaults.
	FastEtcd bool
	// ProfileDir, when set, receives CPU profiles of the resync and of the
	// per-change path at the largest N (resync.pprof, change.pprof), taken
	// after the measured runs; ProfileTime is the length of each (default
	// 5s).
	ProfileDir  string
	ProfileTime time.Duration
	// Log receives progress lines; nil discards them.
	Log *slog.Logger
	// AgentLog receives the agent's own logs in the latency figure; nil
	// discards them.
	AgentLog io.Writer
}

func (o *Options) setDefaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1000, 5000, 10000, largeSize}
	}
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if len(o.Figures) == 0 {
		o.Figures = AllFigures()
	}
	if o.DecodeIters <= 0 {
		o.DecodeIters = 20000
	}
	if o.Joiners <= 0 {
		o.Joiners = 100
	}
	if o.ManyJoiners <= 0 {
		o.ManyJoiners = 1000
	}
	if o.NPLSize <= 0 {
		o.NPLSize = 10000
	}
	if o.ProgramSize <= 0 {
		o.ProgramSize = programSize
	}
	if o.LargeSize <= 0 {
		o.LargeSize = largeSize
	}
	if len(o.FanoutKs) == 0 {
		o.FanoutKs = []int{50, 100, 200}
	}
	if o.FanoutSize <= 0 {
		o.FanoutSize = targetSize
	}
	if o.FanoutChanges <= 0 {
		o.FanoutChanges = 50
	}
	if o.FanoutProxies == 0 {
		o.FanoutProxies = defaultProxies
	}
	if o.FanoutLight == nil {
		o.FanoutLight = []int{1000, 2000}
	}
	if o.AgentChanges <= 0 {
		o.AgentChanges = 2000
	}
	if o.NPLDuration <= 0 {
		o.NPLDuration = 60 * time.Second
	}
	if o.NPLRate <= 0 {
		o.NPLRate = 20
	}
	if o.ProfileTime <= 0 {
		o.ProfileTime = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AgentLog == nil {
		o.AgentLog = io.Discard
	}
}

// ErrOptions marks options Run cannot work with.
var ErrOptions = errors.New("invalid benchmark options")

func (o *Options) validate() error {
	var errs []error
	for _, n := range o.Sizes {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%w: size %d: N must be at least 1", ErrOptions, n))
		}
	}
	for _, k := range o.FanoutKs {
		if k < 1 {
			errs = append(errs, fmt.Errorf("%w: fan-out K %d: must be at least 1", ErrOptions, k))
		}
	}
	for _, f := range o.Figures {
		if f == FigRealVPP {
			if o.VPPSocket == "" {
				errs = append(errs, fmt.Errorf("%w: figure %q needs the socket of a real VPP (-vpp-socket)", ErrOptions, f))
			}
			continue
		}
		if !slices.Contains(AllFigures(), f) {
			errs = append(errs, fmt.Errorf("%w: figure %q: want one of %v", ErrOptions, f, AllFigures()))
		}
	}
	return errors.Join(errs...)
}

func (o *Options) wants(f Figure) bool { return slices.Contains(o.Figures, f) }

// Run measures the selected figures and returns them. The runs at each
// size are independent: every run builds its own pipeline over a fresh
// W(N).
func Run(ctx context.Context, o Options) (*Results, error) {
	o.setDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	env, err := newNodeEnv()
	if err != nil {
		return nil, err
	}
	res := &Results{N: map[string]*SizeResult{}, Runs: o.Runs, Figures: o.Figures}
	sizes := slices.Sorted(slices.Values(o.Sizes))
	sizes = slices.Compact(sizes)
	for _, n := range sizes {
		res.N[strconv.Itoa(n)] = &SizeResult{}
	}
	res.sizes = sizes
	if o.wants(FigPipeline) {
		if err := pipelineFigures(ctx, env, sizes, o, res); err != nil {
			return nil, err
		}
		if o.ProfileDir != "" {
			n := sizes[len(sizes)-1]
			o.Log.Info("profiling", "n", n, "dir", o.ProfileDir)
			if err := profile(ctx, env, n, o.ProfileDir, o.ProfileTime); err != nil {
				return nil, err
			}
		}
	}
	if o.wants(FigCNAT) {
		if err := cnatFigures(ctx, env, sizes, o, res); err != nil {
			return nil, err
		}
	}
	if o.wants(FigCalls) {
		for _, n := range sizes {
			o.Log.Info("VPP calls per change", "n", n)
			c, err := countCalls(ctx, env, n)
			if err != nil {
				return nil, err
			}
			r := res.N[strconv.Itoa(n)]
			r.VPPCallsPerChange = c.perChange
			r.Calls = c
		}
	}
	if o.wants(FigDecode) {
		o.Log.Info("decode")
		var cpu, allocs []float64
		var d *decodeRun
		for range o.Runs {
			if d, err = measureDecode(o.DecodeIters); err != nil {
				return nil, err
			}
			cpu = append(cpu, us(d.cpu))
			allocs = append(allocs, d.allocs)
		}
		res.DecodeUS = median(cpu)
		res.DecodeAllocs, res.DecodeBytes = median(allocs), d.bytes
	}
	// The many joiners claim without the address plan's bound: W(N)'s plan
	// fits 254 nodes.
	for _, f := range []struct {
		fig   Figure
		k     int
		maxID uint32
		out   **NodeSyncResult
	}{
		{FigNodeSync, o.Joiners, nodepipeline.IPAMConfig(env.cfg).MaxNodeID(), &res.NodeSync},
		{FigNodeSyncMany, o.ManyJoiners, 0, &res.NodeSyncMany},
	} {
		if !o.wants(f.fig) {
			continue
		}
		o.Log.Info("nodesync", "joiners", f.k, "rounds", o.Runs)
		ns, err := measureNodeSync(ctx, f.k, o.Runs, f.maxID, o.FastEtcd)
		if err != nil {
			return nil, err
		}
		*f.out = &NodeSyncResult{
			Joiners: ns.joiners, Distinct: ns.distinct, Rounds: ns.rounds,
			P50MS: ms(percentile(ns.took, 0.50)), P99MS: ms(percentile(ns.took, 0.99)), MaxMS: ms(percentile(ns.took, 1)),
		}
	}
	if o.wants(FigRestart) {
		for _, n := range restartSizes(sizes) {
			o.Log.Info("restarts", "n", n)
			r, err := measureRestart(ctx, env, n, o.FastEtcd, o.AgentLog)
			if err != nil {
				return nil, err
			}
			if res.Restart == nil {
				res.Restart = map[string]*RestartResult{}
			}
			res.Restart[strconv.Itoa(n)] = &RestartResult{
				AgentWrites: r.agentWrites, AgentReadyS: r.agentReady.Seconds(),
				RecoveryS: r.recovery.Seconds(), TotalS: r.total.Seconds(), NotReadySeen: r.notReadySeen, ReprogramWrites: r.reprogramWrites,
				InterfacesAfterS: lateInterfaces.Seconds(), FeatureWalkS: r.walked.Seconds(),
			}
		}
	}
	if o.wants(FigVPPProgram) {
		o.Log.Info("W(N) programmed over the socket, synchronous and pipelined", "n", o.ProgramSize, "serviceTime", serviceTime)
		r, err := measureVPPProgram(ctx, env, o.ProgramSize, min(o.Runs, 3), o.Log)
		if err != nil {
			return nil, err
		}
		res.VPPProgram = &VPPProgramResult{
			Calls: r.calls, ServiceUS: us(serviceTime), SyncMS: r.syncMS, PipelinedMS: r.pipelineMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
		}
	}
	if o.wants(FigStartup) {
		o.Log.Info("agent start to ready over the socket", "n", o.ProgramSize, "serviceTime", serviceTime)
		r, err := measureStartup(ctx, env, o.ProgramSize, min(o.Runs, 3), o.FastEtcd, o.AgentLog, o.Log)
		if err != nil {
			return nil, err
		}
		res.Startup = &StartupResult{
			EmptyMS: r.emptyMS, ProgrammedMS: r.programmedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
			EmptyWrites: r.emptyWrites, ProgrammedWrites: r.programmedWrites, ServiceUS: us(serviceTime),
		}
	}
	if o.wants(FigLarge) {
		runs := min(o.Runs, 3)
		o.Log.Info("large: W(N) over the socket: programming, start-up, agent heap", "n", o.LargeSize, "runs", runs)
		if res.Large, err = measureLarge(ctx, env, o.LargeSize, runs, o.FastEtcd, o.ProfileDir, o.AgentLog, o.Log); err != nil {
			return nil, err
		}
	}
	if o.wants(FigRealVPP) {
		o.Log.Info("real-vpp: W(N) programmed into the VPP on its socket", "n", o.LargeSize, "socket", o.VPPSocket)
		if res.RealVPP, err = measureRealVPP(ctx, env, o.LargeSize, o.VPPSocket, o.Log); err != nil {
			return nil, err
		}
	}
	if o.wants(FigFanout) {
		if err := fanoutFigure(ctx, env, o, res); err != nil {
			return nil, err
		}
	}
	if o.wants(FigAgentChange) {
		runs := min(o.Runs, 3)
		o.Log.Info("agent CPU per change, watch event to VPP call", "n", o.FanoutSize, "changes", o.AgentChanges, "runs", runs)
		var per, with, base, allocs, bytes, paced, rate, batches []float64
		var changes int
		for i := range runs {
			// The profiles are taken in the last run only.
			dir := ""
			if i == runs-1 {
				dir = o.ProfileDir
			}
			r, err := measureAgentChange(ctx, env, o.FanoutSize, o.AgentChanges, o.FastEtcd, dir, o.ProfileTime)
			if err != nil {
				return nil, err
			}
			o.Log.Info("agent-change run", "run", i+1, "perChange", r.perChange, "profiled", r.profiled)
			per, with, base = append(per, us(r.perChange)), append(with, us(r.withAgent)), append(base, us(r.baseline))
			allocs, bytes = append(allocs, r.allocs), append(bytes, r.bytes)
			paced, rate = append(paced, us(r.paced)), append(rate, r.pacedAchieved)
			batches = append(batches, float64(r.pacedBatches)/float64(max(r.pacedChanges, 1)))
			changes = r.changes
		}
		res.AgentChangeCPUUS = median(per)
		res.AgentChange = &AgentChangeResult{N: o.FanoutSize, Changes: changes, Runs: runs, PerRunUS: per, WithAgentUS: median(with), BaselineUS: median(base),
			AllocsPerChange: median(allocs), BytesPerChange: median(bytes),
			CPUUSPerChange1000ps: median(paced), PacedPerRunUS: paced, PacedRate: median(rate), BatchesPerChange: median(batches)}
	}
	if o.wants(FigNPL) {
		o.Log.Info("network programming latency", "n", o.NPLSize, "duration", o.NPLDuration, "rate", o.NPLRate)
		r, err := measureNPL(ctx, env, nplParams{n: o.NPLSize, duration: o.NPLDuration, rate: o.NPLRate, fastEtcd: o.FastEtcd, logOut: o.AgentLog})
		if err != nil {
			return nil, err
		}
		res.NPL = &NPLResult{
			P50MS: ms(percentile(r.lat, 0.50)), P99MS: ms(percentile(r.lat, 0.99)), MaxMS: ms(percentile(r.lat, 1)),
			PutP50MS: ms(percentile(r.put, 0.50)), PutP99MS: ms(percentile(r.put, 0.99)),
			N: o.NPLSize, Writes: len(r.lat), Late: r.late, Rate: o.NPLRate,
			CallsPerWrite: float64(r.acks) / float64(max(len(r.lat), 1)),
			StartupS:      r.startup.Seconds(), StartupWrites: r.startupWrites,
		}
	}
	return res, nil
}

// pipelineFigures runs the in-process figures o.Runs times at every size
// and keeps the medians. The sizes take turns, run after run, so that a
// change in the machine's load weighs on all of them alike (the growth
// figure compares two sizes).
func pipelineFigures(ctx context.Context, env *nodeEnv, sizes []int, o Options, res *Results) error {
	runs := make(map[int][]*sizeRun, len(sizes))
	for run := range o.Runs {
		for _, n := range sizes {
			r, err := runSize(ctx, env, n)
			if err != nil {
				return err
			}
			o.Log.Info("pipeline run", "n", n, "run", run+1, "resyncCPU", r.resync.cpu, "changeCPU", r.changeCPU, "joinCPU", r.joinCPU)
			runs[n] = append(runs[n], r)
		}
	}
	for _, n := range sizes {
		summarize(runs[n], res.N[strconv.Itoa(n)])
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
		return median(xs)
	}
	out.ResyncCPUMS = med(func(r *sizeRun) float64 { return ms(r.resync.cpu) })
	out.ResyncWallMS = med(func(r *sizeRun) float64 { return ms(r.resync.wall) })
	out.ResyncAllocs = med(func(r *sizeRun) float64 { return float64(r.resync.mallocs) })
	out.HeapMiB = med(func(r *sizeRun) float64 { return float64(r.heap) / (1 << 20) })
	out.SnapshotMiB = med(func(r *sizeRun) float64 { return float64(r.snapHeap) / (1 << 20) })
	out.ChangeCPUUS = med(func(r *sizeRun) float64 { return us(r.changeCPU) })
	out.ChangeP50US = med(func(r *sizeRun) float64 { return us(percentile(r.changeWall, 0.50)) })
	out.ChangeP99US = med(func(r *sizeRun) float64 { return us(percentile(r.changeWall, 0.99)) })
	out.ChangeAllocs = med(func(r *sizeRun) float64 { return float64(r.changeMall) / float64(len(r.changeWall)) })
	out.ChangeBytes = med(func(r *sizeRun) float64 { return float64(r.changeByte) / float64(len(r.changeWall)) })
	out.NodeJoinCPUUS = med(func(r *sizeRun) float64 { return us(r.joinCPU) })
	out.NodeJoinWallUS = med(func(r *sizeRun) float64 { return us(r.joinWall) })
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
	return int(median(xs))
}
