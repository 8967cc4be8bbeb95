package agent

import (
	"cmp"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// servicesRenderer is what the agent needs of the renderer that programs
// services into VPP: the renderer API, and its apply step.
type servicesRenderer interface {
	sr.Renderer
	controller.Applier
}

// buildRenderer makes the renderer the configuration names (renderer:
// nat44, the default, or cnat) and tells readiness which interfaces its
// configuration waits for.
func (a *Agent) buildRenderer() (servicesRenderer, error) {
	if a.cfg.Renderer == contivconf.RendererCNAT {
		r, err := cnat.New(cnat.Params{
			Config: a.cnatConfig(),
			VPP:    vpp.NewCNAT(a.conn, a.ifaces, a.log.With("part", "cnat-client")),
			// VPP's cnat features cannot be read back: the record of what
			// was enabled survives agent restarts beside the node ID.
			Store: cnat.FileStore{Path: filepath.Join(filepath.Dir(a.cfg.NodeSync.StateFile), "cnat-node.json")},
			Log:   a.log.With("part", "cnat"),
		})
		if err != nil {
			return nil, fmt.Errorf("cnat renderer: %w", err)
		}
		a.cnat = r
		ifs := waitingFor(r.Pending, func(p cnat.PendingInterface) waiting { return waiting{Name: p.Name, Since: p.Since} })
		tables := waitingFor(r.PendingTables, func(p cnat.PendingTable) waiting { return table(p.VRF, p.Since) })
		a.rd.pending = func() []waiting { return append(ifs(), tables()...) }
		return r, nil
	}
	nc := a.cfg.ForNode(a.cfg.NodeName)
	if _, why := chooseSNAT(nc, a.nodeIP(), a.mainInterface(), a.overlay()); why != "" {
		a.log.Warn("nat44.natExternalTraffic is true but NO SOURCE NAT is configured: traffic from pods to outside the cluster leaves untranslated", "why", why)
	}
	r, err := nat44.New(nat44.Params{Config: a.nat44Config(), VPP: vpp.NewNAT44(a.conn, a.ifaces, a.log.With("part", "nat44-client")), Log: a.log.With("part", "nat44")})
	if err != nil {
		return nil, fmt.Errorf("nat44 renderer: %w", err)
	}
	a.renderer = r
	ifs := waitingFor(r.Pending, func(p nat44.PendingInterface) waiting { return waiting{Name: p.Name, Since: p.Since} })
	tables := waitingFor(r.PendingTables, func(p nat44.PendingTable) waiting { return table(p.VRF, p.Since) })
	a.rd.pending = func() []waiting { return append(ifs(), tables()...) }
	a.rd.held = r.Held
	return r, nil
}

// table is a FIB table some routes wait for.
func table(vrf uint32, since time.Time) waiting {
	return waiting{Name: strconv.FormatUint(uint64(vrf), 10), Since: since, What: "FIB table"}
}

// waitingFor turns a renderer's list of pending interfaces into
// readiness's.
func waitingFor[P any](pending func() []P, conv func(P) waiting) func() []waiting {
	return func() []waiting {
		var out []waiting
		for _, p := range pending() {
			out = append(out, conv(p))
		}
		return out
	}
}

// cnatConfig is the cnat renderer's configuration of this node: the node
// IPs (IPv4, and IPv6 when the main interface has an ipv6CIDR) source-NAT;
// pod and service CIDRs and every range from which untranslated traffic
// reaches pods (directSources) are excluded from source NAT; the service
// CIDRs get drop routes in the pod and main VRFs (as with NAT44); the
// node's own interfaces get the features without a SNAT table.
func (a *Agent) cnatConfig() cnat.Config {
	cfg := a.cfg
	nc := cfg.ForNode(cfg.NodeName)
	c := cnat.DefaultConfig()
	c.NodeIP4 = a.nodeIP().Addr()
	c.NodeIP6 = a.nodeIP6().Addr() // invalid (no IPv6) when unset
	c.PodCIDRs = appendValid([]netip.Prefix{cfg.IPAM.PodSubnetCIDR}, cfg.IPAM.PodSubnetCIDRv6)
	c.ServiceCIDRs = appendValid([]netip.Prefix{a.plan.ServiceCIDR}, cfg.IPAM.ServiceCIDRv6)
	c.NodeNetworks = directSources(cfg, a.nodeIP(), a.nodeIP6())
	c.HostInterfaces = []string{a.mainInterface(), nc.HostInterconnectInterface}
	if a.overlay() {
		c.HostInterfaces = append(c.HostInterfaces, nc.VXLANBVIInterface)
	}
	for _, o := range nc.OtherInterfaces {
		c.HostInterfaces = append(c.HostInterfaces, o.Name)
	}
	c.MainVRF, c.PodVRF = cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	c.LocalEndpointWeight = cfg.NAT44.ServiceLocalEndpointWeight
	c.HealthCheckTarget = a.healthCheckTarget()
	return c
}

// directSources are the ranges, besides the pod and service CIDRs, from
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
func directSources(cfg contivconf.Config, nodeIP, nodeIP6 netip.Prefix) []netip.Prefix {
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

// CNATView is the /v1/cnat view: the translations desired and applied,
// and the node configuration (null with renderer nat44).
type CNATView struct {
	Desired     []*cnat.Translation     `json:"desired"`
	Applied     []*cnat.Translation     `json:"applied"`
	DesiredNode *cnat.Node              `json:"desiredNode"`
	AppliedNode *cnat.Node              `json:"appliedNode"`
	Failures    []cnat.Failure          `json:"failures"`
	Conflicts   []cnat.Conflict         `json:"conflicts"`
	Pending     []cnat.PendingInterface `json:"pending"`
	Stats       cnat.Stats              `json:"stats"`
}

func cnatView(r *cnat.Renderer) any {
	if r == nil {
		return nil
	}
	return CNATView{
		Desired: r.Desired(), Applied: r.Applied(), DesiredNode: r.DesiredNode(), AppliedNode: r.AppliedNode(),
		Failures: r.Failures(), Conflicts: r.Conflicts(), Pending: r.Pending(), Stats: r.Stats(),
	}
}
