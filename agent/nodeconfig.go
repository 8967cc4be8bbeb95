package agent

import (
	"net/netip"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
)

// node is this node as its pipeline is configured (nodepipeline.Node),
// once the main NIC is known (Run's goroutine, after the first connect:
// whether reject routes may live outside table 0 is the connected VPP
// release's, read once; a VPP restarted into another release keeps the
// renderers' choice until the agent restarts, docs/vpp-versions.md).
func (a *Agent) node() *nodepipeline.Node {
	n := &nodepipeline.Node{Config: a.cfg, Plan: a.plan, MainInterface: a.mainIf}
	if a.conn != nil {
		n.RejectAnyTable = a.conn.Release().RejectInAnyTable()
	}
	return n
}

// fixed is this node's configuration and plan, which never change: any
// goroutine may ask it what does not depend on the main NIC.
func (a *Agent) fixed() *nodepipeline.Node {
	return &nodepipeline.Node{Config: a.cfg, Plan: a.plan}
}

// nodeIP is this node's VPP address: configured, or derived by IPAM.
func (a *Agent) nodeIP() netip.Prefix { return a.fixed().IP() }

// nodeIP6 is this node's IPv6 VPP address (mainInterface.ipv6CIDR); zero
// when there is none.
func (a *Agent) nodeIP6() netip.Prefix { return a.fixed().IP6() }

// sourceRangesNotEnforced says why loadBalancerSourceRanges are not
// enforced now ("" when they are): cnat cannot; NAT44 needs VPP's ACL
// plugin (an offline render's simulated VPP has it).
func (a *Agent) sourceRangesNotEnforced() string {
	switch {
	case a.cfg.Renderer == contivconf.RendererCNAT:
		return service.NotEnforcedCNAT
	case a.conn != nil && a.conn.Status().Connects > 0 && !a.conn.HasPlugin(vpp.ACLPluginName):
		return "VPP does not load " + vpp.ACLPluginName + " (the ACL plugin); every source reaches the service"
	}
	return ""
}
