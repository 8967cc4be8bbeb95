package nodesync

import "contiv.dev/vpp/bench/core"

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

// The names of the family's figures (harness's table holds them).
const (
	FigNodeSync     core.FigureName = "nodesync"
	FigNodeSyncMany core.FigureName = "nodesync-many"
)
