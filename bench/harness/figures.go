package harness

import (
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/bench/figures/live"
	"contiv.dev/vpp/bench/figures/nodesync"
	"contiv.dev/vpp/bench/figures/pipeline"
	"contiv.dev/vpp/bench/figures/realvpp"
	"contiv.dev/vpp/bench/figures/startup"
)

// registry is every figure, in the order Run measures them and the table
// shows them (the table's per-N rows first, then the others): its name,
// what it measures, and its family's run and rows.
func registry() []core.Figure {
	return []core.Figure{
		core.NewFigure(pipeline.FigPipeline, "resync, per-change and node-join cost of node 1's pipeline (processor and NAT44 renderer) at every N",
			pipeline.RunPipeline, pipeline.PipelineRows),
		core.NewFigure(pipeline.FigCalls, "binary-API calls per endpoint change, through the VPP client and the simulated VPP, at every N",
			pipeline.RunCalls, pipeline.CallsRows),
		core.NewFigure(pipeline.FigDecode, "CPU and allocations to decode one stored EndpointSlice",
			pipeline.RunDecode, pipeline.DecodeRows),
		core.NewFigure(nodesync.FigNodeSync, "Options.Joiners agents claiming node IDs at once against embedded etcd",
			nodesync.Run, nodesync.Rows),
		core.NewFigure(nodesync.FigNodeSyncMany, "the same with Options.ManyJoiners agents, without the address plan's bound on IDs",
			nodesync.RunMany, nodesync.ManyRows),
		core.NewFigure(startup.FigRestart, "an agent restart against a programmed VPP (writes), and a VPP restart whose interfaces come late (time to all back, ready)",
			startup.RunRestart, startup.RestartRows),
		core.NewFigure(startup.FigVPPProgram, "W(ProgramSize) programmed in full into an empty simulated VPP on a unix socket (200 µs per request), synchronous and pipelined",
			startup.RunVPPProgram, startup.VPPProgramRows),
		core.NewFigure(pipeline.FigCNAT, "the pipeline figures and the programming over the socket with the cnat renderer",
			pipeline.RunCNAT, pipeline.CNATRows),
		core.NewFigure(startup.FigStartup, "the agent's start to ready with W(ProgramSize) against a socket-served simulated VPP, empty and programmed",
			startup.RunStartup, startup.StartupRows),
		core.NewFigure(startup.FigLarge, "W(LargeSize) over a socket-served simulated VPP: pipelined programming, the agent's start to ready (empty, programmed; its parts in one process or apart) and its live heap",
			startup.RunLarge, startup.LargeRows),
		core.OnlyWhenNamed(core.NewFigure(realvpp.FigRealVPP, "W(LargeSize) programmed by the agent's pipeline into the real VPP on Options.VPPSocket, and VPP's main heap before and after",
			realvpp.Run, realvpp.Rows), realvpp.Check),
		core.NewFigure(live.FigFanout, "K agents against one etcd holding W(FanoutSize): fan-out latency of a change, heap per agent and etcd's",
			live.RunFanout, live.FanoutRows),
		core.NewFigure(live.FigAgentChange, "the running agent's CPU and allocations per change at W(FanoutSize), from the etcd watch event to the VPP calls issued",
			live.RunAgentChange, live.AgentChangeRows),
		core.NewFigure(live.FigNPL, "network programming latency through the whole agent: etcd write to the simulated VPP's acknowledgement",
			live.RunNPL, live.NPLRows),
	}
}

// keyOrder is the order of bench/results.json's keys, as they have always
// been written (a key not named here follows, sorted).
func keyOrder() []string {
	return []string{"n", "decode_us", "nodesync", "nodesync_many", "npl", "cnat", "restart", "vpp_program", "cnat_program",
		"startup", "large", "real_vpp", "fanout", "agent_change_cpu_us", "agent_change"}
}

// AllFigures names every figure Run measures when Options.Figures is
// empty, in the order it measures them.
func AllFigures() []core.FigureName {
	var out []core.FigureName
	for _, f := range registry() {
		if !f.OnlyWhenNamed() {
			out = append(out, f.Name())
		}
	}
	return out
}

// lookup is the figure of that name.
func lookup(name core.FigureName) (core.Figure, bool) {
	for _, f := range registry() {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}
