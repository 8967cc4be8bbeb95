package agent

import (
	"net/netip"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/ipam"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// ipamConfig maps the configuration onto IPAM's.
func ipamConfig(cfg contivconf.Config) ipam.Config {
	c := cfg.IPAM
	ic := ipam.Config{
		PodSubnetCIDR:                 c.PodSubnetCIDR,
		PodSubnetOneNodePrefixLen:     c.PodSubnetNodePrefixLength,
		VPPHostSubnetCIDR:             c.VPPHostSubnetCIDR,
		VPPHostSubnetOneNodePrefixLen: c.VPPHostSubnetNodePrefixLength,
		NodeInterconnectCIDR:          c.NodeInterconnectCIDR,
		ServiceCIDR:                   c.ServiceCIDR,
	}
	if cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN {
		ic.VXLANCIDR = c.VXLANCIDR
	}
	if mi := cfg.ForNode(cfg.NodeName).MainInterface; mi.IPCIDR.IsValid() || mi.UseDHCP {
		ic.NodeInterconnectCIDR = netip.Prefix{}
	}
	return ic
}

// nodeIP is this node's VPP address: configured, or derived by IPAM.
func (a *Agent) nodeIP() netip.Prefix {
	if p := a.cfg.ForNode(a.cfg.NodeName).MainInterface.IPCIDR; p.IsValid() {
		return p
	}
	return a.plan.NodeInterconnectIP
}

// nodeIP6 is this node's IPv6 VPP address (mainInterface.ipv6CIDR); zero
// when there is none.
func (a *Agent) nodeIP6() netip.Prefix {
	return a.cfg.ForNode(a.cfg.NodeName).MainInterface.IPv6CIDR
}

func (a *Agent) overlay() bool {
	return a.cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN
}

// snat chooses the default interface whose traffic leaving the cluster is
// source-NATed (chooseSNAT).
func (a *Agent) snat() nat44.SNAT {
	s, _ := chooseSNAT(a.cfg.ForNode(a.cfg.NodeName), a.nodeIP(), a.mainInterface(), a.overlay())
	return s
}

// chooseSNAT is the default interface whose traffic leaving the cluster is
// source-NATed: the NIC whose subnet holds the default gateway. Without an
// overlay the main NIC also carries node-to-node traffic, so SNAT on it is
// off (it could not tell cluster traffic from external). When
// natExternalTraffic asks for source NAT and none is configured, why says
// why (logged at start: operators expect SNAT from the flag alone).
func chooseSNAT(nc contivconf.NodeConfig, nodeIP netip.Prefix, mainIf string, overlay bool) (s nat44.SNAT, why string) {
	switch {
	case !nc.NATExternalTraffic:
		return nat44.SNAT{}, ""
	case !nc.Gateway.IsValid():
		return nat44.SNAT{}, "no default gateway (ipam.defaultGateway, nodeConfig[].gateway; none with DHCP on the main interface): source NAT needs one to pick the interface"
	}
	if nodeIP.IsValid() && nodeIP.Contains(nc.Gateway) {
		if !overlay {
			return nat44.SNAT{}, "the gateway " + nc.Gateway.String() + " is on the main NIC of a node without overlay (routing.nodeToNodeTransport: nooverlay), which carries node-to-node traffic too"
		}
		return nat44.SNAT{Interface: mainIf, IP: nodeIP.Addr()}, ""
	}
	for _, o := range nc.OtherInterfaces {
		if o.IPCIDR.IsValid() && o.IPCIDR.Contains(nc.Gateway) {
			return nat44.SNAT{Interface: o.Name, IP: o.IPCIDR.Addr()}, ""
		}
	}
	return nat44.SNAT{}, "no interface's subnet holds the gateway " + nc.Gateway.String()
}

func seconds(d contivconf.Duration) uint32 { return uint32(d.Std() / time.Second) }

// nat44Config is the NAT44 renderer's configuration of this node.
func (a *Agent) nat44Config() nat44.Config {
	cfg := a.cfg
	nc := nat44.DefaultConfig()
	nc.MainVRF, nc.PodVRF = cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	nc.Overlay = a.overlay()
	nc.LocalEndpointWeight = cfg.NAT44.ServiceLocalEndpointWeight
	nc.NATLoopback = a.plan.NATLoopback
	nc.PodSubnet = a.plan.PodSubnet
	nc.SNAT = a.snat()
	nc.ServiceCIDR = a.plan.ServiceCIDR
	nc.ExternalIPTenantVRF = cfg.NAT44.ExternalIPTenantVRF
	nc.SessionLimit = cfg.NAT44.SessionLimit
	nc.HealthCheckTarget = a.healthCheckTarget()
	// Mapping operations wait for the features of the node's own
	// interfaces after a VPP restart, within the pending grace.
	node := cfg.ForNode(cfg.NodeName)
	nc.NodeInterfaces = []string{a.mainInterface(), node.HostInterconnectInterface}
	if nc.Overlay {
		nc.NodeInterfaces = append(nc.NodeInterfaces, node.VXLANBVIInterface)
	}
	for _, o := range node.OtherInterfaces {
		nc.NodeInterfaces = append(nc.NodeInterfaces, o.Name)
	}
	nc.HoldMappings = cfg.VPP.PendingInterfaceGrace.Std()
	// loadBalancerSourceRanges are enforced on the main NIC's input.
	nc.SourceRangeInterface = a.mainInterface()
	t := cfg.NAT44.Timeouts
	nc.Timeouts = nat44.Timeouts{UDP: seconds(t.UDP), TCPEstablished: seconds(t.TCPEstablished), TCPTransitory: seconds(t.TCPTransitory), ICMP: seconds(t.ICMP)}
	return nc
}

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

// serviceConfig is the service processor's configuration of this node.
func (a *Agent) serviceConfig() service.Config {
	cfg := a.cfg
	other := make([]string, 0, len(cfg.ForNode(cfg.NodeName).OtherInterfaces))
	for _, o := range cfg.ForNode(cfg.NodeName).OtherInterfaces {
		other = append(other, o.Name)
	}
	sc := service.Config{
		MainInterface:    a.mainInterface(),
		OtherInterfaces:  other,
		HostInterconnect: cfg.ForNode(cfg.NodeName).HostInterconnectInterface,
		PodInterfaceTag:  cfg.NAT44.InterfaceTag,
		// NAT44 enforces them with an input ACL; cnat cannot (FACTS §6).
		SourceRangesEnforced:    cfg.Renderer != contivconf.RendererCNAT,
		SourceRangesNotEnforced: a.sourceRangesNotEnforced,
	}
	if a.overlay() {
		sc.VXLANBVI = cfg.ForNode(cfg.NodeName).VXLANBVIInterface
	}
	return sc
}
