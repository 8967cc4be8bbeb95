package nodesync

import "contiv.dev/vpp/bench/core"

// The family's figures.
const (
	FigNodeSync     core.FigureName = "nodesync"
	FigNodeSyncMany core.FigureName = "nodesync-many"
)

// NodeSync is Options.Joiners agents claiming node IDs at once.
func NodeSync() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigNodeSync,
		Measures: "Options.Joiners agents claiming node IDs at once against embedded etcd",
		Run:      runNodeSync, Rows: nodeSyncRows})
}

// Many is the same with Options.ManyJoiners agents.
func Many() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigNodeSyncMany,
		Measures: "the same with Options.ManyJoiners agents, without the address plan's bound on IDs",
		Run:      runNodeSyncMany, Rows: nodeSyncManyRows})
}

// Results are the family's figures; their JSON fields are keys of
// bench/results.json.
type Results struct {
	NodeSync *Result `json:"nodesync"`
	// Many is the NodeSync figure with ManyJoiners agents.
	Many *Result `json:"nodesync_many,omitempty"`
}

// Result is K agents claiming IDs at once.
type Result struct {
	Joiners  int     `json:"joiners"`
	Distinct bool    `json:"distinct"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"-"`
	Rounds   int     `json:"-"`
}

// targetNodeSyncP99 is BENCH.md's target for 100 joiners' p99, ms.
const targetNodeSyncP99 = 1000
