package live

import "contiv.dev/vpp/bench/core"

// Results are the family's figures; their JSON fields are keys of
// bench/results.json.
type Results struct {
	NPL *NPLResult `json:"npl"`
	// Fanout holds the fan-out figure, keyed by K in decimal;
	// FanoutStopped tells why a larger K was not measured.
	Fanout        map[string]*FanoutResult `json:"fanout,omitempty"`
	FanoutStopped string                   `json:"-"`
	// AgentChangeCPUUS is the running agent's CPU per change at N=10000,
	// from the etcd watch event to the VPP calls issued, µs.
	AgentChangeCPUUS float64            `json:"agent_change_cpu_us,omitempty"`
	AgentChange      *AgentChangeResult `json:"agent_change,omitempty"`
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

// The names of the family's figures (harness's table holds them).
const (
	FigFanout      core.FigureName = "fanout"
	FigAgentChange core.FigureName = "agent-change"
	FigNPL         core.FigureName = "npl"
)
