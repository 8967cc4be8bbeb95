package harness

import (
	"context"
	"fmt"
	"strconv"
)

// FigureName names a figure: what -figures selects and Options.Figures
// holds.
type FigureName string

// The figures' names.
const (
	FigPipeline     FigureName = "pipeline"
	FigCalls        FigureName = "calls"
	FigDecode       FigureName = "decode"
	FigNodeSync     FigureName = "nodesync"
	FigNodeSyncMany FigureName = "nodesync-many"
	FigRestart      FigureName = "restart"
	FigVPPProgram   FigureName = "vpp-program"
	FigCNAT         FigureName = "cnat"
	FigStartup      FigureName = "startup"
	FigLarge        FigureName = "large"
	FigRealVPP      FigureName = "real-vpp"
	FigFanout       FigureName = "fanout"
	FigAgentChange  FigureName = "agent-change"
	FigNPL          FigureName = "npl"
)

// A Figure is one family of measurements: its name, what it measures, how
// it is measured into Results and the rows it adds to the printed table.
// Run measures the figures of registry, in its order; WriteTable asks each
// for its rows, in the same order.
type Figure interface {
	// Name is the figure's name.
	Name() FigureName
	// Measures says in one line what the figure measures.
	Measures() string
	// OnlyWhenNamed is true for a figure that needs what the machine may
	// not have (a real VPP): it is measured only when Options.Figures
	// names it.
	OnlyWhenNamed() bool
	run(ctx context.Context, env *Env, o Options, res *Results) error
	rows(res *Results, t *Rows)
}

// figure is a Figure made of its parts.
type figure struct {
	name     FigureName
	measures string
	named    bool
	runFn    func(ctx context.Context, env *Env, o Options, res *Results) error
	rowsFn   func(res *Results, t *Rows)
}

func (f figure) Name() FigureName    { return f.name }
func (f figure) Measures() string    { return f.measures }
func (f figure) OnlyWhenNamed() bool { return f.named }
func (f figure) run(ctx context.Context, env *Env, o Options, res *Results) error {
	return f.runFn(ctx, env, o, res)
}
func (f figure) rows(res *Results, t *Rows) { f.rowsFn(res, t) }

// registry is every figure, in the order Run measures them and the table
// shows them (the table's per-N rows first, then the others).
func registry() []Figure {
	return []Figure{
		figure{name: FigPipeline, measures: "resync, per-change and node-join cost of node 1's pipeline (processor and NAT44 renderer) at every N",
			runFn: runPipeline, rowsFn: pipelineRows},
		figure{name: FigCalls, measures: "binary-API calls per endpoint change, through the VPP client and the simulated VPP, at every N",
			runFn: runCalls, rowsFn: callsRows},
		figure{name: FigDecode, measures: "CPU and allocations to decode one stored EndpointSlice",
			runFn: runDecode, rowsFn: decodeRows},
		figure{name: FigNodeSync, measures: "Options.Joiners agents claiming node IDs at once against embedded etcd",
			runFn: runNodeSync, rowsFn: nodeSyncRows},
		figure{name: FigNodeSyncMany, measures: "the same with Options.ManyJoiners agents, without the address plan's bound on IDs",
			runFn: runNodeSyncMany, rowsFn: nodeSyncManyRows},
		figure{name: FigRestart, measures: "an agent restart against a programmed VPP (writes), and a VPP restart whose interfaces come late (time to all back, ready)",
			runFn: runRestart, rowsFn: restartRows},
		figure{name: FigVPPProgram, measures: "W(ProgramSize) programmed in full into an empty simulated VPP on a unix socket (200 µs per request), synchronous and pipelined",
			runFn: runVPPProgram, rowsFn: vppProgramRows},
		figure{name: FigCNAT, measures: "the pipeline figures and the programming over the socket with the cnat renderer",
			runFn: runCNAT, rowsFn: cnatRows},
		figure{name: FigStartup, measures: "the agent's start to ready with W(ProgramSize) against a socket-served simulated VPP, empty and programmed",
			runFn: runStartup, rowsFn: startupRows},
		figure{name: FigLarge, measures: "W(LargeSize) over a socket-served simulated VPP: pipelined programming, the agent's start to ready (empty, programmed; its parts in one process or apart) and its live heap",
			runFn: runLarge, rowsFn: largeRows},
		figure{name: FigRealVPP, measures: "W(LargeSize) programmed by the agent's pipeline into the real VPP on Options.VPPSocket, and VPP's main heap before and after",
			named: true, runFn: runRealVPP, rowsFn: realVPPRows},
		figure{name: FigFanout, measures: "K agents against one etcd holding W(FanoutSize): fan-out latency of a change, heap per agent and etcd's, and the fan-out to watchers that decode nothing",
			runFn: runFanout, rowsFn: fanoutRows},
		figure{name: FigAgentChange, measures: "the running agent's CPU and allocations per change at W(FanoutSize), from the etcd watch event to the VPP calls issued",
			runFn: runAgentChange, rowsFn: agentChangeRows},
		figure{name: FigNPL, measures: "network programming latency through the whole agent: etcd write to the simulated VPP's acknowledgement",
			runFn: runNPL, rowsFn: nplRows},
	}
}

// AllFigures names every figure Run measures when Options.Figures is
// empty, in the order it measures them.
func AllFigures() []FigureName {
	var out []FigureName
	for _, f := range registry() {
		if !f.OnlyWhenNamed() {
			out = append(out, f.Name())
		}
	}
	return out
}

// lookup is the figure of that name.
func lookup(name FigureName) (Figure, bool) {
	for _, f := range registry() {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// Rows collects a table's rows: those with a cell per N first, then those
// with one value (in the last column).
type Rows struct {
	r            *Results
	sizes        []int
	perN, single [][]string
}

// at is the figures at N (nil when not measured).
func (t *Rows) at(n int) *SizeResult { return t.r.N[strconv.Itoa(n)] }

// addPerN adds a row with a cell per N; the target is judged at
// N = 10000.
func (t *Rows) AddPerN(name, format string, get func(*SizeResult) float64, target string, met func(*SizeResult) bool) {
	cells := make([]string, len(t.sizes))
	for i, n := range t.sizes {
		cells[i] = fmt.Sprintf(format, get(t.at(n)))
	}
	m := ""
	if target != "" {
		big := t.at(TargetSize)
		m = Verdict(big != nil, func() bool { return met(big) })
	}
	t.perN = append(t.perN, append(append([]string{name}, cells...), target, m))
}

// addSingle adds a row with one value, in the last column.
func (t *Rows) AddSingle(name, value, target, met string) {
	cells := make([]string, len(t.sizes))
	for i := range cells {
		cells[i] = "—"
	}
	if len(cells) > 0 {
		cells[len(cells)-1] = value
	}
	t.single = append(t.single, append(append([]string{name}, cells...), target, met))
}
