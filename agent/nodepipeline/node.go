package nodepipeline

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// SimulatedMainNIC is the main NIC of a simulated VPP when the
// configuration names none.
const SimulatedMainNIC = "GigabitEthernet0/8/0"

// Node is one node as its pipeline is configured: the agent's
// configuration (Config.NodeName names the node), its address plan, the
// VPP name of its main NIC and what its VPP's release allows.
type Node struct {
	Config        contivconf.Config
	Plan          *addrplan.Plan
	MainInterface string
	// RejectAnyTable is set when the node's VPP takes a reject route in
	// any FIB table (vpp.Release.RejectInAnyTable of the release the agent
	// first connected to: 26.02 and later): the renderers then make their
	// verdict routes in a main VRF other than 0 too.
	RejectAnyTable bool
}

// IPAMConfig maps the configuration onto IPAM's.
func IPAMConfig(cfg contivconf.Config) addrplan.Config {
	c := cfg.IPAM
	ic := addrplan.Config{
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

// this is the node's own configuration, nodeConfig[] merged in.
func (n *Node) this() contivconf.NodeConfig { return n.Config.ForNode(n.Config.NodeName) }

// IP is the node's VPP address: configured, or derived by IPAM.
func (n *Node) IP() netip.Prefix {
	if p := n.this().MainInterface.IPCIDR; p.IsValid() {
		return p
	}
	return n.Plan.NodeInterconnectIP
}

// IP6 is the node's IPv6 VPP address (mainInterface.ipv6CIDR); zero when
// there is none.
func (n *Node) IP6() netip.Prefix { return n.this().MainInterface.IPv6CIDR }

// Overlay tells whether nodes reach each other through VXLAN.
func (n *Node) Overlay() bool {
	return n.Config.Routing.NodeToNodeTransport == contivconf.TransportVXLAN
}

// HealthCheckTarget is where VPP sends the health checks of the node's
// IPs: the host end of the host interconnect.
func (n *Node) HealthCheckTarget() netip.Addr { return n.Plan.HostInterconnectLinux.Addr() }

// SNAT is the default interface whose traffic leaving the cluster is
// source-NATed (ChooseSNAT); why says why none is when natExternalTraffic
// asks for one.
func (n *Node) SNAT() (s nat44.SNAT, why string) {
	return ChooseSNAT(n.this(), n.IP(), n.MainInterface, n.Overlay())
}

// ChooseSNAT is the default interface whose traffic leaving the cluster is
// source-NATed: the NIC whose subnet holds the default gateway. Without an
// overlay the main NIC also carries node-to-node traffic, so SNAT on it is
// off (it could not tell cluster traffic from external). When
// natExternalTraffic asks for source NAT and none is configured, why says
// why (logged at start: operators expect SNAT from the flag alone).
func ChooseSNAT(nc contivconf.NodeConfig, nodeIP netip.Prefix, mainIf string, overlay bool) (s nat44.SNAT, why string) {
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

// NAT44Config is the NAT44 renderer's configuration of the node.
func (n *Node) NAT44Config() nat44.Config {
	cfg := n.Config
	nc := nat44.DefaultConfig()
	nc.MainVRF, nc.PodVRF = cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	nc.RejectAnyTable = n.RejectAnyTable
	nc.Overlay = n.Overlay()
	nc.LocalEndpointWeight = cfg.NAT44.ServiceLocalEndpointWeight
	nc.NATLoopback = n.Plan.NATLoopback
	nc.PodSubnet = n.Plan.PodSubnet
	nc.SNAT, _ = n.SNAT()
	nc.ServiceCIDR = n.Plan.ServiceCIDR
	nc.ExternalIPTenantVRF = cfg.NAT44.ExternalIPTenantVRF
	nc.SessionLimit = cfg.NAT44.SessionLimit
	nc.HealthCheckTarget = n.HealthCheckTarget()
	// Mapping operations wait for the features of the node's own
	// interfaces after a VPP restart, within the pending grace.
	node := n.this()
	nc.NodeInterfaces = []string{n.MainInterface, node.HostInterconnectInterface}
	if nc.Overlay {
		nc.NodeInterfaces = append(nc.NodeInterfaces, node.VXLANBVIInterface)
	}
	for _, o := range node.OtherInterfaces {
		nc.NodeInterfaces = append(nc.NodeInterfaces, o.Name)
	}
	nc.HoldMappings = cfg.VPP.HoldMappings.Std()
	// loadBalancerSourceRanges are enforced on the main NIC's input.
	nc.SourceRangeInterface = n.MainInterface
	t := cfg.NAT44.Timeouts
	nc.Timeouts = nat44.Timeouts{UDP: seconds(t.UDP), TCPEstablished: seconds(t.TCPEstablished), TCPTransitory: seconds(t.TCPTransitory), ICMP: seconds(t.ICMP)}
	return nc
}

// CNATConfig is the cnat renderer's configuration of the node: the node
// IPs (IPv4, and IPv6 when the main interface has an ipv6CIDR) source-NAT;
// pod and service CIDRs and every range from which untranslated traffic
// reaches pods (DirectSources) are excluded from source NAT; the service
// CIDRs get drop routes in the pod and main VRFs (as with NAT44); the
// node's own interfaces get the features without a SNAT table.
func (n *Node) CNATConfig() cnat.Config {
	cfg := n.Config
	nc := n.this()
	c := cnat.DefaultConfig()
	c.NodeIP4 = n.IP().Addr()
	c.NodeIP6 = n.IP6().Addr() // invalid (no IPv6) when unset
	c.PodCIDRs = appendValid([]netip.Prefix{cfg.IPAM.PodSubnetCIDR}, cfg.IPAM.PodSubnetCIDRv6)
	c.ServiceCIDRs = appendValid([]netip.Prefix{n.Plan.ServiceCIDR}, cfg.IPAM.ServiceCIDRv6)
	c.NodeNetworks = DirectSources(cfg, n.IP(), n.IP6())
	c.HostInterfaces = []string{n.MainInterface, nc.HostInterconnectInterface}
	if n.Overlay() {
		c.HostInterfaces = append(c.HostInterfaces, nc.VXLANBVIInterface)
	}
	for _, o := range nc.OtherInterfaces {
		c.HostInterfaces = append(c.HostInterfaces, o.Name)
	}
	c.MainVRF, c.PodVRF = cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	c.RejectAnyTable = n.RejectAnyTable
	c.LocalEndpointWeight = cfg.NAT44.ServiceLocalEndpointWeight
	c.HealthCheckTarget = n.HealthCheckTarget()
	return c
}

// DirectSources are the ranges, besides the pod and service CIDRs, from
// which untranslated traffic reaches this node's pods: cnat's K8S policy
// source-NATs a pod's reply to any other source, which kills the
// connection (FACTS §6: a SYN-ACK to another node's VXLAN address left
// with the node IP). They are this node's networks (nodeIP, the other
// interfaces), every node's networks the configuration names
// (nodeConfig[] interfaces; ipam.nodeInterconnectCIDR, where IPAM places
// node IPs), the VXLAN range with the vxlan transport (ipam.vxlanCIDR:
// traffic from another node's VXLAN address) and the VPP-to-host range
// (ipam.vppHostSubnetCIDR: every node's host reaches pods through its
// host interconnect), masked, both families, without duplicates.
func DirectSources(cfg contivconf.Config, nodeIP, nodeIP6 netip.Prefix) []netip.Prefix {
	ps := appendValid(nil, nodeIP.Masked(), nodeIP6.Masked(), cfg.IPAM.NodeInterconnectCIDR, cfg.IPAM.VPPHostSubnetCIDR)
	if cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN {
		ps = appendValid(ps, cfg.IPAM.VXLANCIDR)
	}
	for _, n := range cfg.NodeConfig {
		ifs := n.OtherInterfaces
		if n.MainInterface != nil {
			ifs = append([]contivconf.InterfaceConfig{*n.MainInterface}, ifs...)
		}
		for _, i := range ifs {
			ps = appendValid(ps, i.IPCIDR.Masked(), i.IPv6CIDR.Masked())
		}
	}
	for i := range ps {
		ps[i] = ps[i].Masked()
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return slices.Compact(ps)
}

// appendValid appends the valid prefixes of ps to dst.
func appendValid(dst []netip.Prefix, ps ...netip.Prefix) []netip.Prefix {
	for _, p := range ps {
		if p.IsValid() {
			dst = append(dst, p)
		}
	}
	return dst
}

// SourceRangesNotEnforced says why the configured renderer cannot enforce
// loadBalancerSourceRanges ("" when it can, as far as the configuration
// tells: the agent also asks VPP for its ACL plugin).
func (n *Node) SourceRangesNotEnforced() string {
	if n.Config.Renderer == contivconf.RendererCNAT {
		return service.NotEnforcedCNAT
	}
	return ""
}

// ServiceConfig is the service processor's configuration of the node;
// notEnforced tells why source ranges are not enforced now (nil:
// SourceRangesNotEnforced), proxyHealth is the listen address of the
// node's proxy health endpoint (ProxyHealthPort).
func (n *Node) ServiceConfig(notEnforced func() string, proxyHealth string) service.Config {
	cfg := n.Config
	node := n.this()
	other := make([]string, 0, len(node.OtherInterfaces))
	for _, o := range node.OtherInterfaces {
		other = append(other, o.Name)
	}
	if notEnforced == nil {
		notEnforced = n.SourceRangesNotEnforced
	}
	sc := service.Config{
		MainInterface:    n.MainInterface,
		OtherInterfaces:  other,
		HostInterconnect: node.HostInterconnectInterface,
		PodInterfaceTag:  cfg.NAT44.InterfaceTag,
		// NAT44 enforces them with an input ACL; cnat cannot (FACTS §6).
		SourceRangesEnforced:    cfg.Renderer != contivconf.RendererCNAT,
		SourceRangesNotEnforced: notEnforced,
		ProxyHealthPort:         ProxyHealthPort(proxyHealth),
	}
	if n.Overlay() {
		sc.VXLANBVI = node.VXLANBVIInterface
	}
	return sc
}

// ProxyHealthPort is the port of the proxy health address, 0 when there is
// none to bring (off, or a port picked at random).
func ProxyHealthPort(addr string) uint16 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(v)
}
