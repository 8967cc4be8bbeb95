package startup

import "contiv.dev/vpp/bench/core"

// ChildRoles are the children the large figure starts besides etcd: the
// simulated VPP and the agent, each in a process of its own (core.RunChild).
func ChildRoles() map[string]core.Role {
	return map[string]core.Role{roleVPP: vppRole, roleAgent: agentRole}
}

// Results are the family's figures; their JSON fields are keys of
// bench/results.json.
type Results struct {
	// Restart holds the restart figures, keyed by N in decimal.
	Restart map[string]*RestartResult `json:"restart,omitempty"`
	// VPPProgram and Startup are the figures over the simulated VPP's
	// socket.
	VPPProgram *core.VPPProgramResult `json:"vpp_program,omitempty"`
	Startup    *StartupResult         `json:"startup,omitempty"`
	// Large is W(50 000) over the socket and the agent's heap there.
	Large *LargeResult `json:"large,omitempty"`
}

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

// The names of the family's figures (harness's table holds them).
const (
	FigRestart    core.FigureName = "restart"
	FigVPPProgram core.FigureName = "vpp-program"
	FigStartup    core.FigureName = "startup"
	FigLarge      core.FigureName = "large"
)
