package agent

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/adapter"

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
type NodeInterface struct {
	Name    string
	Address netip.Prefix
	VRF     uint32
}

// Beside is what a Dataplane's handlers know of the agent.
type Beside struct {
	// Node is this node's name.
	Node string
	// Tag is the tag the CNI gives a pod's interface.
	Tag func(namespace, pod string) string
	// Refresh re-reads the agent's cache of VPP's interface table.
	Refresh func(context.Context) error
	// PodVRF is the VRF of pod interfaces.
	PodVRF uint32
}

// sessionCounter is a Dataplane that counts the NAT sessions its
// configuration changes cut (the simulated VPP keeps sessions).
type sessionCounter interface {
	SessionsCut() uint64
}
