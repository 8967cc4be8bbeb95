package startup

import "contiv.dev/vpp/bench/core"

// The family's figures.
const (
	FigRestart    core.FigureName = "restart"
	FigVPPProgram core.FigureName = "vpp-program"
	FigStartup    core.FigureName = "startup"
	FigLarge      core.FigureName = "large"
)

// Restart is an agent restart against a programmed VPP and a VPP restart
// whose interfaces come late.
func Restart() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigRestart,
		Measures: "an agent restart against a programmed VPP (writes), and a VPP restart whose interfaces come late (time to all back, ready)",
		Run:      runRestart, Rows: restartRows})
}

// VPPProgram is W(Options.ProgramSize) programmed into an empty
// socket-served simulated VPP.
func VPPProgram() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigVPPProgram,
		Measures: "W(ProgramSize) programmed in full into an empty simulated VPP on a unix socket (200 µs per request), synchronous and pipelined",
		Run:      runVPPProgram, Rows: vppProgramRows})
}

// Startup is the agent's start to ready against a socket-served
// simulated VPP.
func Startup() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigStartup,
		Measures: "the agent's start to ready with W(ProgramSize) against a socket-served simulated VPP, empty and programmed",
		Run:      runStartup, Rows: startupRows})
}

// Large is W(Options.LargeSize) over a socket-served simulated VPP.
func Large() core.Figure {
	return core.NewFigure(core.Spec[Results]{Name: FigLarge,
		Measures: "W(LargeSize) over a socket-served simulated VPP: pipelined programming, the agent's start to ready (empty, programmed; its parts in one process or apart) and its live heap",
		Run:      runLarge, Rows: largeRows})
}

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

// Targets of issue 14 for the agent's start over the socket, ms.
const (
	targetStartupEmptyMS   = 1000
	targetStartupProgramMS = 500
)

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
