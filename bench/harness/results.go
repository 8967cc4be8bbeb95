package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Results are the figures of one benchmark run. Its JSON is the shape of
// bench/results.json; fields without a JSON name are shown in the table
// only.
type Results struct {
	// N holds the figures of each size, keyed by N in decimal.
	N map[string]*SizeResult `json:"n"`
	// DecodeUS is the CPU time to decode one stored EndpointSlice, µs.
	DecodeUS float64         `json:"decode_us"`
	NodeSync *NodeSyncResult `json:"nodesync"`
	// NodeSyncMany is the NodeSync figure with ManyJoiners agents.
	NodeSyncMany *NodeSyncResult `json:"nodesync_many,omitempty"`
	NPL          *NPLResult      `json:"npl"`
	// CNAT holds the pipeline figures with the cnat renderer, keyed by N
	// in decimal (vpp_calls_per_change: counted operations, see cnatFigures).
	CNAT map[string]*SizeResult `json:"cnat,omitempty"`
	// Restart holds the restart figures, keyed by N in decimal.
	Restart map[string]*RestartResult `json:"restart,omitempty"`
	// VPPProgram and Startup are the figures over the simulated VPP's
	// socket.
	VPPProgram *VPPProgramResult `json:"vpp_program,omitempty"`
	// CNATProgram is VPPProgram through the cnat renderer (figure cnat).
	CNATProgram *VPPProgramResult `json:"cnat_program,omitempty"`
	Startup     *StartupResult    `json:"startup,omitempty"`
	// Large is W(50 000) over the socket and the agent's heap there.
	Large *LargeResult `json:"large,omitempty"`
	// RealVPP is W(N) programmed into a real VPP (figure real-vpp).
	RealVPP *RealVPPResult `json:"real_vpp,omitempty"`
	// Fanout holds the fan-out figure, keyed by K in decimal;
	// FanoutStopped tells why a larger K was not measured.
	Fanout        map[string]*FanoutResult `json:"fanout,omitempty"`
	FanoutStopped string                   `json:"-"`
	// AgentChangeCPUUS is the running agent's CPU per change at N=10000,
	// from the etcd watch event to the VPP calls issued, µs.
	AgentChangeCPUUS float64            `json:"agent_change_cpu_us,omitempty"`
	AgentChange      *AgentChangeResult `json:"agent_change,omitempty"`
	DecodeAllocs     float64            `json:"-"`
	DecodeBytes      int                `json:"-"`
	// Runs is the number of runs each median is taken over.
	Runs int `json:"-"`
	// Figures are the figures measured; empty means all.
	Figures []FigureName `json:"-"`
	sizes   []int
}

func (r *Results) has(f FigureName) bool { return len(r.Figures) == 0 || slices.Contains(r.Figures, f) }

// RestartResult is the restart figure at one N.
type RestartResult struct {
	// AgentWrites are the VPP writes of an agent restarted against a VPP
	// that holds W(N); AgentReadyS its start to ready.
	AgentWrites int     `json:"agent_restart_writes"`
	AgentReadyS float64 `json:"agent_restart_ready_s"`
	// RecoveryS is the time from a restarted VPP's interfaces appearing
	// (InterfacesAfterS after its restart) to W(N) all back in VPP and the
	// agent ready; NotReadySeen that readiness was false in between.
	RecoveryS float64 `json:"vpp_restart_recovery_s"`
	// TotalS is the same counted from the restart.
	TotalS           float64 `json:"vpp_restart_total_s"`
	InterfacesAfterS float64 `json:"vpp_restart_interfaces_after_s"`
	NotReadySeen     bool    `json:"vpp_restart_not_ready_seen"`
	ReprogramWrites  int     `json:"vpp_restart_writes"`
	// FeatureWalkS is the simulated VPP's main-thread time in walks of
	// the mappings by NAT44 outside features (FACTS §7) during the
	// reprogram.
	FeatureWalkS float64 `json:"vpp_restart_feature_walk_s"`
}

// VPPProgramResult is W(N) programmed in full into an empty simulated
// VPP served on a unix socket, through the agent's client.
type VPPProgramResult struct {
	// Calls are the binary-API calls the VPP received (dumps included).
	Calls int `json:"calls"`
	// ServiceUS is the VPP's service time per request, µs.
	ServiceUS float64 `json:"service_us"`
	// SyncMS: every call waits for its answer; PipelinedMS: calls in
	// flight on one connection. Wall time of the full apply, ms.
	SyncMS      float64 `json:"sync_ms"`
	PipelinedMS float64 `json:"pipelined_ms"`
	N           int     `json:"-"`
	// Runs is the number of runs of each (medians).
	Runs int `json:"-"`
}

// StartupResult is the agent's start to ready with W(N) in etcd, against
// a socket-served simulated VPP.
type StartupResult struct {
	// EmptyMS: against an empty VPP; ProgrammedMS: against one that holds
	// W(N) already.
	EmptyMS          float64 `json:"empty_ms"`
	ProgrammedMS     float64 `json:"programmed_ms"`
	N                int     `json:"-"`
	EmptyWrites      int     `json:"-"`
	ProgrammedWrites int     `json:"-"`
	ServiceUS        float64 `json:"-"`
	// Runs is the number of runs (medians).
	Runs int `json:"-"`
}

// FanoutResult is the fan-out figure at one K: K agents against one etcd
// holding W(N).
type FanoutResult struct {
	// P50MS and P99MS are over every agent and change: the time from just
	// before the etcd put to the end of that agent's apply of it.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// AgentHeapMiB is the live heap per agent; EtcdHeapMiB etcd's server's
	// live heap with the K agents watching (from the heap profile).
	AgentHeapMiB float64 `json:"agent_heap_mib"`
	EtcdHeapMiB  float64 `json:"etcd_heap_mib"`
	// AllP99MS is, over the changes, the p99 of the time until the last
	// of the K agents applied it.
	AllP99MS float64 `json:"-"`
	// CPUPerChangeMS is the process CPU of one change: etcd, K watch
	// streams and K agents.
	CPUPerChangeMS float64 `json:"-"`
	Changes        int     `json:"-"`
	N              int     `json:"-"`
	// EtcdHeapIdleMiB is etcd's heap holding W(N) with no agent; DBMiB
	// the size of its backend file (memory-mapped, not heap).
	EtcdHeapIdleMiB float64 `json:"-"`
	DBMiB           float64 `json:"-"`
}

// AgentChangeResult details the agent-change figure.
type AgentChangeResult struct {
	// Changes are per run; Runs the runs the medians are taken over,
	// PerRunUS each run's figure.
	N        int       `json:"n"`
	Changes  int       `json:"changes"`
	Runs     int       `json:"runs"`
	PerRunUS []float64 `json:"per_run_us"`
	// WithAgentUS and BaselineUS are the process CPU per change watched by
	// the agent and by a bare watch; the figure is their difference.
	WithAgentUS float64 `json:"with_agent_us"`
	BaselineUS  float64 `json:"baseline_us"`
	// AllocsPerChange and BytesPerChange are the agent's heap allocations
	// per change (with the agent less with the bare watch).
	AllocsPerChange float64 `json:"allocs_per_change"`
	BytesPerChange  float64 `json:"bytes_per_change"`
	// CPUUSPerChange1000ps is the agent's CPU per change when changes come
	// at 1000 a second, each written without waiting for the one before
	// (PacedRate were achieved, PacedPerRunUS each run's); the loop takes
	// what is queued as one batch (BatchesPerChange).
	CPUUSPerChange1000ps float64   `json:"cpu_us_per_change_1000ps"`
	PacedPerRunUS        []float64 `json:"paced_per_run_us"`
	PacedRate            float64   `json:"paced_rate"`
	BatchesPerChange     float64   `json:"batches_per_change"`
}

// Targets of issue 14 for the figures over the socket.
const (
	targetPipelinedMS      = 500
	targetStartupEmptyMS   = 1000
	targetStartupProgramMS = 500
	// Issue 25: the agent per isolated change, and at 1000 changes/s.
	targetAgentChangeCPUUS = 30
	targetAgentPacedCPUUS  = 10
)

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
	Calls *callsRun `json:"-"`
}

// NodeSyncResult is K agents claiming IDs at once.
type NodeSyncResult struct {
	Joiners  int     `json:"joiners"`
	Distinct bool    `json:"distinct"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"-"`
	Rounds   int     `json:"-"`
}

// NPLResult is the network programming latency through the agent.
type NPLResult struct {
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"-"`
	// PutP50MS and PutP99MS are the times of the etcd puts alone.
	PutP50MS      float64 `json:"-"`
	PutP99MS      float64 `json:"-"`
	N             int     `json:"-"`
	Writes        int     `json:"-"`
	Late          int     `json:"-"`
	Rate          float64 `json:"-"`
	CallsPerWrite float64 `json:"-"`
	StartupS      float64 `json:"-"`
	StartupWrites int     `json:"-"`
}

// WriteJSON writes the results in the shape of bench/results.json.
func (r *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Targets of BENCH.md, for a 2-core machine.
const (
	TargetSize         = 10000
	targetGrowthFrom   = 1000
	targetChangeCPUUS  = 10
	targetGrowth       = 1.5
	targetChangeAllocs = 60
	targetResyncCPUMS  = 150
	targetHeapMiB      = 40
	targetJoinCPUUS    = 1000
	targetNodeSyncP99  = 1000
	targetNPLP99MS     = 50
)

// WriteTable prints the BENCH.md table in Markdown: one column per N, the
// target and whether it is met (targets apply at N = 10000). Each figure
// of registry adds its rows.
func (r *Results) WriteTable(w io.Writer) error {
	sizes := r.sizes
	if len(sizes) == 0 {
		for k := range r.N {
			if n, err := strconv.Atoi(k); err == nil {
				sizes = append(sizes, n)
			}
		}
		slices.Sort(sizes)
	}
	t := &Rows{r: r, sizes: sizes}
	for _, f := range registry() {
		f.rows(r, t)
	}
	return (&table{sizes: sizes, rows: append(t.perN, t.single...)}).write(w)
}

// Verdict is "yes" or "NO" when the target can be judged, else "n/a".
func Verdict(judged bool, met func() bool) string {
	switch {
	case !judged:
		return "n/a"
	case met():
		return "yes"
	}
	return "NO"
}

type table struct {
	sizes []int
	rows  [][]string
}

func (t *table) write(w io.Writer) error {
	head := []string{"figure"}
	for _, n := range t.sizes {
		head = append(head, "N="+strconv.Itoa(n))
	}
	head = append(head, "target", "met?")
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SortedNumeric is m's keys in numeric order.
func SortedNumeric[V any](m map[string]V) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return ks
}

// FmtList formats xs with format, comma-separated.
func FmtList(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}
