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
// shows them (the table's per-N rows first, then the others).
func registry() []core.Figure {
	return []core.Figure{
		pipeline.Pipeline(),
		pipeline.Calls(),
		pipeline.Decode(),
		nodesync.NodeSync(),
		nodesync.Many(),
		startup.Restart(),
		startup.VPPProgram(),
		pipeline.CNAT(),
		startup.Startup(),
		startup.Large(),
		realvpp.RealVPP(),
		live.Fanout(),
		live.AgentChange(),
		live.NPL(),
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
