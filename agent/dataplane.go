package agent

import (
	"go.fd.io/govpp/adapter"

	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/plugins/controller"
)

// Dataplane stands in for a real VPP and what runs beside it: the agent
// talks to it through a govpp transport instead of VPP's socket. The
// simulated VPP (Simulated) is the only one; the agent's core wiring knows
// only this interface, and the caller chooses (cmd/contiv-agent from
// vpp.simulate), so nothing simulated runs unless asked for.
type Dataplane interface {
	// Adapter is the govpp transport.
	Adapter() adapter.VppAPI
	// EnsureInterfaces creates the interfaces a node's VPP has (its NICs,
	// host interconnect, BVI) where they are missing.
	EnsureInterfaces(ifs []NodeInterface) error
	// Handlers are controller handlers standing in for what runs beside a
	// real VPP (the CNI); they run before the service processor.
	Handlers(node Beside) []controller.Handler
	// Name says what the dataplane is, loudly, for logs.
	Name() string
}

// NodeInterface is one of a node's VPP interfaces besides pods': its name
// and, for NICs, its address.
type NodeInterface = simnode.Interface

// Beside is what a Dataplane's handlers know of the agent.
type Beside = simnode.Beside
