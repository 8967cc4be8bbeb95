package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
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
	// FanoutBare is the fan-out to watchers that decode nothing.
	FanoutBare *FanoutBareResult `json:"-"`
	// FanoutTier is the fan-out through a tier of etcd gRPC proxies; its
	// JSON is in "fanout" (fanoutJSON).
	FanoutTier *FanoutTier `json:"-"`
	// AgentChangeCPUUS is the running agent's CPU per change at N=10000,
	// from the etcd watch event to the VPP calls issued, µs.
	AgentChangeCPUUS float64            `json:"agent_change_cpu_us,omitempty"`
	AgentChange      *AgentChangeResult `json:"agent_change,omitempty"`
	DecodeAllocs     float64            `json:"-"`
	DecodeBytes      int                `json:"-"`
	// Runs is the number of runs each median is taken over.
	Runs int `json:"-"`
	// Figures are the figure groups measured; empty means all.
	Figures []Figure `json:"-"`
	sizes   []int
}

func (r *Results) has(f Figure) bool { return len(r.Figures) == 0 || slices.Contains(r.Figures, f) }

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

// FanoutBareResult is the fan-out of changes to watchers that only
// receive them (what an agent watches, one client each).
type FanoutBareResult struct {
	Watchers int
	// P50MS and P99MS: from just before the put to a watcher's receipt.
	P50MS, P99MS float64
	// CPUUS is the process CPU per change and watcher (etcd's send, the
	// gRPC stack both ways, the client's watch routing), µs.
	CPUUS float64
	// EtcdHeapKiB and ClientHeapKiB are the heap per watcher on etcd's
	// side and on the client's.
	EtcdHeapKiB, ClientHeapKiB float64
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
	return enc.Encode(r.jsonView())
}

// Targets of BENCH.md, for a 2-core machine.
const (
	targetSize         = 10000
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
// target and whether it is met (targets apply at N = 10000).
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
	t := &table{sizes: sizes}
	at := func(n int) *SizeResult { return r.N[strconv.Itoa(n)] }
	big := at(targetSize)
	perN := func(name, format string, get func(*SizeResult) float64, target string, met func(*SizeResult) bool) {
		cells := make([]string, len(sizes))
		for i, n := range sizes {
			cells[i] = fmt.Sprintf(format, get(at(n)))
		}
		m := ""
		if target != "" {
			m = verdict(big != nil, func() bool { return met(big) })
		}
		t.add(name, cells, target, m)
	}
	if r.has(FigPipeline) {
		perN("resync CPU (ms)", "%.1f", func(s *SizeResult) float64 { return s.ResyncCPUMS }, "≤ 150",
			func(s *SizeResult) bool { return s.ResyncCPUMS <= targetResyncCPUMS })
		perN("resync wall (ms)", "%.1f", func(s *SizeResult) float64 { return s.ResyncWallMS }, "", nil)
		perN("resync allocations", "%.0f", func(s *SizeResult) float64 { return s.ResyncAllocs }, "", nil)
		perN("resync VPP operations", "%.0f", func(s *SizeResult) float64 { return float64(s.ResyncOps) }, "", nil)
		perN("heap retained after resync (MiB)", "%.1f", func(s *SizeResult) float64 { return s.HeapMiB }, "≤ 40",
			func(s *SizeResult) bool { return s.HeapMiB <= targetHeapMiB })
		perN("decoded snapshot, not in the above (MiB)", "%.1f", func(s *SizeResult) float64 { return s.SnapshotMiB }, "", nil)
		perN("per-change CPU (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeCPUUS }, "≤ 10",
			func(s *SizeResult) bool { return s.ChangeCPUUS <= targetChangeCPUUS })
		perN("per-change wall p50 (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeP50US }, "", nil)
		perN("per-change wall p99 (µs)", "%.2f", func(s *SizeResult) float64 { return s.ChangeP99US }, "", nil)
		allAllocsOK := true
		for _, n := range sizes {
			allAllocsOK = allAllocsOK && at(n).ChangeAllocs <= targetChangeAllocs
		}
		perN("allocations per change", "%.1f", func(s *SizeResult) float64 { return s.ChangeAllocs }, "≤ 60 (every N)",
			func(*SizeResult) bool { return allAllocsOK })
		perN("bytes allocated per change", "%.0f", func(s *SizeResult) float64 { return s.ChangeBytes }, "", nil)
		perN("VPP operations per change (pipeline)", "%.3f", func(s *SizeResult) float64 { return s.ChangeOps }, "", nil)
		perN("node-join CPU (µs)", "%.1f", func(s *SizeResult) float64 { return s.NodeJoinCPUUS }, "≤ 1000",
			func(s *SizeResult) bool { return s.NodeJoinCPUUS <= targetJoinCPUUS })
		perN("node-join wall (µs; getrusage counts whole µs)", "%.1f", func(s *SizeResult) float64 { return s.NodeJoinWallUS }, "", nil)
	}
	calls := func(name string, get func(c *callsRun) float64, target string, met func(c *callsRun) bool) {
		perN(name, "%.3f", func(s *SizeResult) float64 {
			if s.Calls == nil {
				return 0
			}
			return get(s.Calls)
		}, target, func(s *SizeResult) bool { return s.Calls != nil && met(s.Calls) })
	}
	if r.has(FigCalls) {
		calls("VPP calls per change, all 1000 (binary API, simulated VPP)", func(c *callsRun) float64 { return c.perChange }, "", nil)
		calls("… of a ClusterIP service (1 frontend mapping)", func(c *callsRun) float64 { return c.clusterIP }, "1",
			func(c *callsRun) bool { return c.clusterIP == 1 })
		calls("… of a NodePort service (3 frontend mappings)", func(c *callsRun) float64 { return c.nodePort }, "1 per mapping",
			func(c *callsRun) bool { return c.nodePort == 3 })
		calls("… giving a local pod its first service or taking its last", func(c *callsRun) float64 { return c.podRole }, "", nil)
	}

	single := func(name, value, target, met string) {
		cells := make([]string, len(sizes))
		for i := range cells {
			cells[i] = "—"
		}
		if len(cells) > 0 {
			cells[len(cells)-1] = value
		}
		t.add(name, cells, target, met)
	}
	small, large := at(targetGrowthFrom), big
	switch {
	case !r.has(FigPipeline):
	case small != nil && large != nil && small.ChangeCPUUS > 0:
		g := large.ChangeCPUUS / small.ChangeCPUUS
		single("growth: per-change CPU N=10000 / N=1000", fmt.Sprintf("%.2f", g), "≤ 1.5", verdict(true, func() bool { return g <= targetGrowth }))
	default:
		single("growth: per-change CPU N=10000 / N=1000", "n/a", "≤ 1.5", "n/a")
	}
	if l := at(largeSize); r.has(FigPipeline) && l != nil && small != nil && small.ChangeCPUUS > 0 {
		g := l.ChangeCPUUS / small.ChangeCPUUS
		single("growth: per-change CPU N=50000 / N=1000", fmt.Sprintf("%.2f", g), "≤ 1.5", verdict(true, func() bool { return g <= targetGrowth }))
	}
	if r.DecodeUS > 0 {
		single("decode one EndpointSlice (µs CPU)", fmt.Sprintf("%.2f (%.0f allocs, %d B)", r.DecodeUS, r.DecodeAllocs, r.DecodeBytes), "", "")
	}
	if ns := r.NodeSync; ns != nil {
		single(fmt.Sprintf("NodeSync, %d joiners at once: distinct IDs in 1…K", ns.Joiners), strconv.FormatBool(ns.Distinct), "all distinct", verdict(true, func() bool { return ns.Distinct }))
		single(fmt.Sprintf("NodeSync time to an ID p50 / p99 / max (ms, %d rounds)", ns.Rounds),
			fmt.Sprintf("%.0f / %.0f / %.0f", ns.P50MS, ns.P99MS, ns.MaxMS), "p99 ≤ 1000", verdict(true, func() bool { return ns.P99MS <= targetNodeSyncP99 }))
	}
	if ns := r.NodeSyncMany; ns != nil {
		single(fmt.Sprintf("NodeSync, %d joiners at once: distinct IDs in 1…K", ns.Joiners), strconv.FormatBool(ns.Distinct), "all distinct", verdict(true, func() bool { return ns.Distinct }))
		single(fmt.Sprintf("… %d joiners: time to an ID p50 / p99 / max (ms, %d rounds)", ns.Joiners, ns.Rounds),
			fmt.Sprintf("%.0f / %.0f / %.0f", ns.P50MS, ns.P99MS, ns.MaxMS), "", "")
	}
	for _, n := range slices.Sorted(maps.Keys(r.Restart)) {
		x := r.Restart[n]
		single(fmt.Sprintf("agent restart against W(%s) programmed: VPP writes (start to ready, s)", n),
			fmt.Sprintf("%d (%.2f)", x.AgentWrites, x.AgentReadyS), "0", verdict(true, func() bool { return x.AgentWrites == 0 }))
		limit := restartTarget(n)
		single(fmt.Sprintf("VPP restart, interfaces %.1f s late, W(%s): all back and ready after they appear (s; writes)", x.InterfacesAfterS, n),
			fmt.Sprintf("%.2f (%d)", x.RecoveryS, x.ReprogramWrites), fmt.Sprintf("≤ %g", limit.Seconds()),
			verdict(limit > 0, func() bool { return x.RecoveryS <= limit.Seconds() }))
		single("… counted from the VPP restart (s)", fmt.Sprintf("%.2f", x.TotalS), "", "")
		single("… VPP's main thread walking the mappings for interface features (s)", fmt.Sprintf("%.3f", x.FeatureWalkS), "", "")
		single("… not ready in between", strconv.FormatBool(x.NotReadySeen), "true", verdict(true, func() bool { return x.NotReadySeen }))
	}
	if p := r.VPPProgram; p != nil {
		single(fmt.Sprintf("W(%d) programmed over the VPP socket, %.0f µs per request, median of %d: synchronous (ms; calls)", p.N, p.ServiceUS, p.Runs),
			fmt.Sprintf("%.0f (%d)", p.SyncMS, p.Calls), "", "")
		single("… pipelined (ms; calls/s)", fmt.Sprintf("%.0f (%.0f/s)", p.PipelinedMS, float64(p.Calls)/(p.PipelinedMS/1000)),
			"≤ 500", verdict(p.N == targetSize, func() bool { return p.PipelinedMS <= targetPipelinedMS }))
	}
	if p := r.CNATProgram; p != nil {
		single(fmt.Sprintf("cnat: W(%d) programmed over the VPP socket, %.0f µs per request, median of %d: synchronous (ms; calls)", p.N, p.ServiceUS, p.Runs),
			fmt.Sprintf("%.0f (%d)", p.SyncMS, p.Calls), "", "")
		single("… pipelined (ms; calls/s)", fmt.Sprintf("%.0f (%.0f/s)", p.PipelinedMS, float64(p.Calls)/(p.PipelinedMS/1000)),
			"≤ 500", verdict(p.N == targetSize, func() bool { return p.PipelinedMS <= targetPipelinedMS }))
	}
	if s := r.Startup; s != nil {
		single(fmt.Sprintf("agent start to ready, W(%d), empty VPP over its socket, median of %d (ms; VPP writes)", s.N, s.Runs),
			fmt.Sprintf("%.0f (%d)", s.EmptyMS, s.EmptyWrites), "≤ 1000", verdict(s.N == targetSize, func() bool { return s.EmptyMS <= targetStartupEmptyMS }))
		single("… VPP already programmed (ms; VPP writes)", fmt.Sprintf("%.0f (%d)", s.ProgrammedMS, s.ProgrammedWrites),
			"≤ 500", verdict(s.N == targetSize, func() bool { return s.ProgrammedMS <= targetStartupProgramMS }))
	}
	if l := r.Large; l != nil {
		judged := l.N == largeSize
		single(fmt.Sprintf("W(%d) programmed over the VPP socket, %.0f µs per request, pipelined, median of %d (ms; calls)", l.N, l.ServiceUS, l.Runs),
			fmt.Sprintf("%.0f (%d)", l.PipelinedMS, l.Calls), "≤ 1500", verdict(judged, func() bool { return l.PipelinedMS <= targetLargePipelinedMS }))
		single(fmt.Sprintf("agent start to ready, W(%d), empty VPP over its socket (ms; VPP writes)", l.N), fmt.Sprintf("%.0f (%d)", l.StartupEmptyMS, l.EmptyWrites),
			"≤ 2000", verdict(judged, func() bool { return l.StartupEmptyMS <= targetLargeEmptyMS }))
		single("… VPP already programmed (ms)", fmt.Sprintf("%.0f", l.StartupProgrammedMS),
			"≤ 1000", verdict(judged, func() bool { return l.StartupProgrammedMS <= targetLargeProgrammedMS }))
		single("… the process's CPU from start to ready, empty / programmed VPP (ms; etcd, agent and simulated VPP)",
			fmt.Sprintf("%.0f / %.0f", l.StartupEmptyCPUMS, l.StartupProgrammedCPUMS), "", "")
		if a := l.StartupApart; a != nil {
			single("… etcd in a process of its own, as deployed: start to ready, empty VPP (ms)", fmt.Sprintf("%.0f", a.EmptyMS),
				"≤ 2000", verdict(judged, func() bool { return a.EmptyMS <= targetLargeEmptyMS }))
			single("… etcd in a process of its own: VPP already programmed (ms)", fmt.Sprintf("%.0f", a.ProgrammedMS),
				"≤ 1000", verdict(judged, func() bool { return a.ProgrammedMS <= targetLargeProgrammedMS }))
			single("… etcd in a process of its own: the agent's process's CPU, empty / programmed (ms; agent and simulated VPP)",
				fmt.Sprintf("%.0f / %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS), "", "")
		}
		if a := l.StartupAllApart; a != nil {
			single("… etcd and the simulated VPP each in a process of its own, the agent as against a real VPP: start to ready, empty VPP (ms)", fmt.Sprintf("%.0f", a.EmptyMS),
				"≤ 2000", verdict(judged, func() bool { return a.EmptyMS <= targetLargeEmptyMS }))
			single("… etcd and VPP apart: VPP already programmed (ms)", fmt.Sprintf("%.0f", a.ProgrammedMS),
				"≤ 1000", verdict(judged, func() bool { return a.ProgrammedMS <= targetLargeProgrammedMS }))
			single("… etcd and VPP apart: the agent's process's CPU, empty / programmed (ms; the agent alone)",
				fmt.Sprintf("%.0f / %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS), "", "")
		}
		if a := l.StartupAgentApart; a != nil {
			single("… etcd, the simulated VPP and the agent each in a process of its own: start to ready, empty VPP (ms)", fmt.Sprintf("%.0f", a.EmptyMS),
				"≤ 2000", verdict(judged, func() bool { return a.EmptyMS <= targetLargeEmptyMS }))
			single("… every part apart: VPP already programmed (ms)", fmt.Sprintf("%.0f", a.ProgrammedMS),
				"≤ 1000", verdict(judged, func() bool { return a.ProgrammedMS <= targetLargeProgrammedMS }))
			if m := a.ProgrammedMem; m != nil {
				single("… every part apart: the agent's CPU, empty / programmed (ms); its programmed start's allocations, collections, peak resident set (MiB; -; MiB)",
					fmt.Sprintf("%.0f / %.0f; %.0f, %d, %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS, m.AllocMiB, m.GCs, m.PeakRSSMiB), "", "")
			}
			single("… every part apart, programmed: etcd's and the simulated VPP's CPU meanwhile (ms)",
				fmt.Sprintf("%.0f / %.0f", a.ProgrammedEtcdCPUMS, a.ProgrammedVPPCPUMS), "", "")
		}
		single(fmt.Sprintf("agent's live heap holding W(%d): decoded view, processor, renderer (MiB)", l.N), fmt.Sprintf("%.1f", l.AgentHeapMiB),
			"≤ 150", verdict(judged, func() bool { return l.AgentHeapMiB <= targetLargeHeapMiB }))
	}
	if v := r.RealVPP; v != nil {
		single(fmt.Sprintf("W(%d) programmed into a real VPP (%s), pipelined (ms; NAT44 mappings; interfaces made first)", v.N, v.Version),
			fmt.Sprintf("%.0f (%d; %d)", v.ProgramMS, v.Mappings, v.Interfaces), "", "")
		single("… the same applied again by a second pipeline (a restart's full apply: dump read and compared) (ms; VPP calls; mapping writes)", fmt.Sprintf("%.0f (%d; %d)", v.ReapplyMS, v.ReapplyCalls, v.ReapplyWrites), "", "")
		single("… VPP main heap used before / after / size (MB)", fmt.Sprintf("%.1f / %.1f / %.0f", v.MainHeapBeforeMB, v.MainHeapAfterMB, v.MainHeapSizeMB), "", "")
	}
	for _, k := range sortedNumeric(r.Fanout) {
		f := r.Fanout[k]
		single(fmt.Sprintf("fan-out, %s agents on one etcd with W(%d): change put to applied at each agent p50 / p99 (ms; %d changes)", k, f.N, f.Changes),
			fmt.Sprintf("%.2f / %.2f", f.P50MS, f.P99MS), "", "")
		single("… until the last agent, p99 (ms)", fmt.Sprintf("%.2f", f.AllP99MS), "", "")
		single("… heap per agent / etcd's heap (MiB)", fmt.Sprintf("%.1f / %.1f", f.AgentHeapMiB, f.EtcdHeapMiB), "", "")
		single("… process CPU per change, etcd and all agents (ms)", fmt.Sprintf("%.2f", f.CPUPerChangeMS), "", "")
	}
	for _, f := range r.Fanout {
		single("fan-out: etcd's heap with no agent / its backend file (MiB)", fmt.Sprintf("%.1f / %.1f", f.EtcdHeapIdleMiB, f.DBMiB), "", "")
		break
	}
	if b := r.FanoutBare; b != nil {
		single(fmt.Sprintf("fan-out to %d bare watchers (no decoding): put to receipt p50 / p99 (ms)", b.Watchers),
			fmt.Sprintf("%.2f / %.2f", b.P50MS, b.P99MS), "", "")
		single("… CPU per change and watcher (µs); heap per watcher, etcd's / the client's (KiB)",
			fmt.Sprintf("%.1f; %.0f / %.0f", b.CPUUS, b.EtcdHeapKiB, b.ClientHeapKiB), "", "")
	}
	if r.FanoutStopped != "" {
		single("fan-out: stopped early", r.FanoutStopped, "", "")
	}
	r.tierRows(single)
	if a := r.AgentChange; a != nil {
		single(fmt.Sprintf("agent CPU per change, watch event to VPP call, W(%d) (µs; median of %d runs of %d changes: %s)", a.N, a.Runs, a.Changes, fmtList(a.PerRunUS, "%.0f")),
			fmt.Sprintf("%.1f", r.AgentChangeCPUUS), "≤ 30", verdict(a.N == targetSize, func() bool { return r.AgentChangeCPUUS <= targetAgentChangeCPUUS }))
		single("… process CPU per change with the agent / with a bare watch (µs)", fmt.Sprintf("%.1f / %.1f", a.WithAgentUS, a.BaselineUS), "", "")
		single("… agent's heap allocations per change (objects; bytes)", fmt.Sprintf("%.1f; %.0f", a.AllocsPerChange, a.BytesPerChange), "", "")
		single(fmt.Sprintf("agent CPU per change at 1000 changes/s, W(%d) (µs; runs: %s; %.0f/s achieved; batches per change %.2f)", a.N, fmtList(a.PacedPerRunUS, "%.1f"), a.PacedRate, a.BatchesPerChange),
			fmt.Sprintf("%.1f", a.CPUUSPerChange1000ps), "≤ 10", verdict(a.N == targetSize, func() bool { return a.CPUUSPerChange1000ps <= targetAgentPacedCPUUS }))
	}
	if l := r.NPL; l != nil {
		single(fmt.Sprintf("network programming latency p50 / p99 / max (ms; N=%d, %g/s, %d writes)", l.N, l.Rate, l.Writes),
			fmt.Sprintf("%.2f / %.2f / %.2f", l.P50MS, l.P99MS, l.MaxMS), "p99 ≤ 50",
			verdict(l.N == targetSize, func() bool { return l.P99MS <= targetNPLP99MS }))
		single("… of which the etcd put, p50 / p99 (ms)", fmt.Sprintf("%.2f / %.2f", l.PutP50MS, l.PutP99MS), "", "")
		single("… writes sent late (the change before still in flight)", strconv.Itoa(l.Late), "", "")
		single("… simulated VPP writes per change, in the agent", fmt.Sprintf("%.3f", l.CallsPerWrite), "", "")
		single(fmt.Sprintf("agent start to ready with W(%d) programmed (s; VPP writes)", l.N), fmt.Sprintf("%.1f (%d)", l.StartupS, l.StartupWrites), "", "")
	}
	return t.write(w)
}

// restartTarget is the target for the VPP restart recovery at N
// (0: none).
func restartTarget(n string) time.Duration {
	switch n {
	case "1000":
		return time.Second
	case "10000":
		// Issue 22: features before mappings, so that enabling them
		// walks no mapping (FACTS §7).
		return 500 * time.Millisecond
	}
	return 0
}

// verdict is "yes" or "NO" when the target can be judged, else "n/a".
func verdict(judged bool, met func() bool) string {
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

func (t *table) add(name string, cells []string, target, met string) {
	t.rows = append(t.rows, append(append([]string{name}, cells...), target, met))
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

// sortedNumeric is m's keys in numeric order.
func sortedNumeric[V any](m map[string]V) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return ks
}

// fmtList formats xs with format, comma-separated.
func fmtList(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}
