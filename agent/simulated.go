package agent

import (
	"go.fd.io/govpp/adapter"

	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// Simulated is the simulated VPP as the agent's dataplane, with a simulated
// CNI that gives every local pod a tagged interface. NOTHING FORWARDS
// PACKETS: it is for demos (make run) and tests.
func Simulated(v *sim.VPP) Dataplane { return simulated{vpp: v} }

// SimulatedOverSocket is Simulated reached as a real VPP is: through govpp's
// socket client on the configured vpp.socket, where the caller serves v
// (sim.VPP.Serve). make run and the scenario tests use it, so that the
// socket client, its framing and its round trips are exercised.
func SimulatedOverSocket(v *sim.VPP) Dataplane { return simulated{vpp: v, socket: true} }

type simulated struct {
	vpp    *sim.VPP
	socket bool
}

// Adapter is the simulated VPP itself, or nil when it is served on the
// socket the agent dials.
func (s simulated) Adapter() adapter.VppAPI {
	if s.socket {
		return nil
	}
	return s.vpp
}

func (s simulated) Name() string {
	return "SIMULATED VPP: NAT44 state is kept in memory and NOTHING FORWARDS PACKETS"
}

func (s simulated) EnsureInterfaces(ifs []NodeInterface) error {
	return simnode.EnsureInterfaces(s.vpp, ifs)
}

// Handlers is the simulated CNI. The simulated node's startup
// configuration also makes the pod VRF's table (ip table add, as
// docs/vpp-node.md's does), where the CNI puts pods: it exists before any
// pod, and again only once the startup configuration has run after a VPP
// restart.
func (s simulated) Handlers(b Beside) []controller.Handler {
	s.vpp.CreateTable(b.PodVRF)
	return []controller.Handler{simnode.NewCNI(s.vpp, b)}
}

// SessionsCut is how many NAT44-ED and cnat sessions (only one renderer
// runs) the simulated VPP's configuration changes have cut (FACTS §3 and
// §6 of the measured VPP 25.02).
func (s simulated) SessionsCut() uint64 { return s.vpp.SessionsCut() + s.vpp.CnatSessionsCut() }
