package pipeline

import (
	"fmt"
	"strconv"

	"contiv.dev/vpp/bench/core"
)

// Results are the family's figures; their JSON fields are keys of
// bench/results.json.
type Results struct {
	// N holds the figures of each size, keyed by N in decimal.
	N map[string]*SizeResult `json:"n"`
	// DecodeUS is the CPU time to decode one stored EndpointSlice, µs.
	DecodeUS float64 `json:"decode_us"`
	// CNAT holds the pipeline figures with the cnat renderer, keyed by N
	// in decimal (vpp_calls_per_change: counted operations, see cnatFigures).
	CNAT map[string]*SizeResult `json:"cnat,omitempty"`
	// CNATProgram is W(N) programmed over the socket through the cnat
	// renderer.
	CNATProgram  *core.VPPProgramResult `json:"cnat_program,omitempty"`
	DecodeAllocs float64                `json:"-"`
	DecodeBytes  int                    `json:"-"`
}

// InitPart makes N's entry of every size (results.json has them, measured
// or not).
func (r *Results) InitPart(res *core.Results) {
	r.N = map[string]*SizeResult{}
	for _, n := range res.Sizes {
		r.N[strconv.Itoa(n)] = &SizeResult{}
	}
}

// at is the figures at N (nil when not measured).
func (r *Results) at(n int) *SizeResult { return r.N[strconv.Itoa(n)] }

// Targets of BENCH.md, for a 2-core machine (at N = 10000).
const (
	targetGrowthFrom   = 1000
	targetChangeCPUUS  = 10
	targetGrowth       = 1.5
	targetChangeAllocs = 60
	targetResyncCPUMS  = 150
	targetHeapMiB      = 40
	targetJoinCPUUS    = 1000
)

// perN adds a row with a cell per N of r's figures (get, formatted), the
// target judged at N = 10000.
func perN(t *core.Rows, r *Results, name, format string, get func(*SizeResult) float64, target string, met func(*SizeResult) bool) {
	m := ""
	if target != "" {
		big := r.at(core.TargetSize)
		m = core.Verdict(big != nil, func() bool { return met(big) })
	}
	t.AddPerN(name, func(n int) string { return fmt.Sprintf(format, get(r.at(n))) }, target, m)
}

// SizeResult are the figures at one N, each the median over the runs.
type SizeResult struct {
	ResyncCPUMS       float64 `json:"resync_cpu_ms"`
	ResyncWallMS      float64 `json:"resync_wall_ms"`
	ResyncAllocs      float64 `json:"resync_allocs"`
	HeapMiB           float64 `json:"heap_mib"`
	ChangeCPUUS       float64 `json:"change_cpu_us"`
	ChangeP50US       float64 `json:"change_p50_us"`
	ChangeP99US       float64 `json:"change_p99_us"`
	ChangeAllocs      float64 `json:"change_allocs"`
	VPPCallsPerChange float64 `json:"vpp_calls_per_change"`
	NodeJoinCPUUS     float64 `json:"node_join_cpu_us"`
	// ChangeBytes are the bytes allocated per change.
	ChangeBytes float64 `json:"-"`
	// NodeJoinWallUS is the node join's wall time: getrusage counts in
	// whole microseconds, too coarse for the join alone.
	NodeJoinWallUS float64 `json:"-"`
	// SnapshotMiB is the heap of the decoded snapshot itself (held by the
	// controller's view in the agent), not counted in HeapMiB.
	SnapshotMiB float64 `json:"-"`
	// ResyncOps, ChangeOps and JoinOps are the VPP operations the
	// pipeline issued: all of the full apply, per change, for the join.
	ResyncOps int     `json:"-"`
	ChangeOps float64 `json:"-"`
	JoinOps   int     `json:"-"`
	// Calls breaks the calls per change down (nil when not measured).
	Calls *CallsRun `json:"-"`
}

// The names of the family's figures (harness's table holds them).
const (
	FigPipeline core.FigureName = "pipeline"
	FigCalls    core.FigureName = "calls"
	FigDecode   core.FigureName = "decode"
	FigCNAT     core.FigureName = "cnat"
)
