package simnode

import (
	"cmp"
	"context"
	"net/netip"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// Interface is one of a node's VPP interfaces besides pods': its name
// and, for NICs, its address.
type Interface struct {
	Name    string
	Address netip.Prefix
	VRF     uint32
}

// Beside is what the handlers standing in for what runs beside VPP (the
// CNI) know of the agent.
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

// Interfaces are the interfaces a node's VPP has besides pods', as a
// dataplane standing in for VPP creates them: the main NIC (named
// nodepipeline.SimulatedMainNIC unless configured) holds the node IP.
func Interfaces(n *nodepipeline.Node) []Interface {
	cfg := n.Config
	nc := cfg.ForNode(cfg.NodeName)
	main := cmp.Or(nc.MainInterface.Name, nodepipeline.SimulatedMainNIC)
	mainVRF, podVRF := cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	ifs := []Interface{{Name: main, Address: n.IP(), VRF: mainVRF}, {Name: nc.HostInterconnectInterface, VRF: mainVRF}}
	if n.Overlay() {
		ifs = append(ifs, Interface{Name: nc.VXLANBVIInterface, VRF: podVRF})
	}
	for _, o := range nc.OtherInterfaces {
		ifs = append(ifs, Interface{Name: o.Name, Address: o.IPCIDR, VRF: mainVRF})
	}
	return ifs
}

// EnsureInterfaces creates in v the interfaces of ifs it lacks, and the
// tables of their VRFs, as a node's startup configuration does.
func EnsureInterfaces(v *sim.VPP, ifs []Interface) error {
	have := map[string]bool{}
	for _, i := range v.Interfaces() {
		have[i.Name] = true
	}
	for _, i := range ifs {
		v.CreateTable(i.VRF) // the startup configuration makes the tables of its interfaces
		if i.Name != "" && !have[i.Name] {
			if _, err := v.CreateInterface(sim.InterfaceSpec{Name: i.Name, Address: i.Address, VRF: i.VRF}); err != nil {
				return err
			}
			have[i.Name] = true
		}
	}
	return nil
}
