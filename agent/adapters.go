package agent

import (
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/agent/ownaddrs"
	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// thisNode gives the service processor this node's identity from NodeSync,
// and tells addrs which addresses the processor read.
type thisNode struct {
	h     *nodesync.Handler
	addrs *ownaddrs.Tracker
}

func (t thisNode) NodeName() string { return t.h.NodeName() }
func (t thisNode) NodeID() uint32   { return t.h.ID() }

// NodeIPs are this node's VPP and management addresses, as its record
// holds them.
func (t thisNode) NodeIPs() []netip.Addr {
	ips := t.recordIPs()
	t.addrs.Saw(ips)
	return ips
}

func (t thisNode) recordIPs() []netip.Addr {
	rec, ok := t.h.ThisNode()
	if !ok {
		return nil
	}
	var ips []netip.Addr
	for _, s := range rec.VppIPs {
		if p, err := netip.ParsePrefix(s); err == nil {
			ips = append(ips, p.Addr())
		} else if a, err := netip.ParseAddr(s); err == nil {
			ips = append(ips, a)
		}
	}
	for _, s := range rec.MgmtIPs {
		if a, err := netip.ParseAddr(s); err == nil {
			ips = append(ips, a)
		}
	}
	return ips
}

// stateCollector exports object counts at scrape time.
type stateCollector struct {
	a                                            *Agent
	services, mappings, failures, conflicts, skp *prometheus.Desc
	subsets, leftOut                             *prometheus.Desc
	translations, cnatFailures, cnatConflicts    *prometheus.Desc
	nodes                                        *prometheus.Desc
}

func newStateCollector(a *Agent) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{
		a:         a,
		services:  d("contiv_services", "ContivServices derived by the service processor."),
		mappings:  d("contiv_nat44_mappings", "NAT44 static and load-balanced mappings.", "state"),
		failures:  d("contiv_nat44_failures", "NAT44 objects VPP rejected as invalid."),
		conflicts: d("contiv_nat44_conflicts", "Frontends claimed by more than one service."),
		skp:       d("contiv_service_skipped", "Services or ports left out, by reason.", "reason"),
		subsets: d("contiv_nat44_frontends_subset",
			"NAT44 frontends served by a subset of their endpoints (VPP 25.02 sums a mapping's probabilities in a u8: at most 255)."),
		leftOut: d("contiv_nat44_endpoints_left_out", "Endpoints left out of NAT44 frontends' mappings, summed over those frontends."),
		// renderer: cnat
		translations:  d("contiv_cnat_translations", "cnat translations.", "state"),
		cnatFailures:  d("contiv_cnat_failures", "cnat objects VPP rejected as invalid."),
		cnatConflicts: d("contiv_cnat_conflicts", "Frontends claimed by more than one service."),
		nodes:         d("contiv_nodes", "Nodes with a NodeSync ID."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.services, c.mappings, c.failures, c.conflicts, c.skp, c.nodes, c.subsets, c.leftOut,
		c.translations, c.cnatFailures, c.cnatConflicts} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(c.services, len(c.a.proc.Services()))
	if r := c.a.renderer; r != nil {
		g(c.mappings, len(r.Desired().Mappings), "desired")
		g(c.mappings, len(r.Applied().Mappings), "applied")
		g(c.failures, len(r.Failures()))
		g(c.conflicts, len(r.Conflicts()))
		subsets, left := r.Subsets(), 0
		for _, s := range subsets {
			left += s.LeftOut()
		}
		g(c.subsets, len(subsets))
		g(c.leftOut, left)
	}
	if r := c.a.cnat; r != nil {
		g(c.translations, len(r.Desired()), "desired")
		g(c.translations, len(r.Applied()), "applied")
		g(c.cnatFailures, len(r.Failures()))
		g(c.cnatConflicts, len(r.Conflicts()))
	}
	for reason, n := range c.a.proc.SkipCounts() {
		g(c.skp, n, string(reason))
	}
	g(c.nodes, len(c.a.nodes.AllNodes()))
}

// nat44View is the NAT44 state for REST: desired and applied, one line per
// object, plus what VPP refused and which frontends conflict.
func nat44View(r *nat44.Renderer) restapi.NAT44View {
	return restapi.NAT44View{
		Desired:   r.Desired().Lines(),
		Applied:   r.Applied().Lines(),
		Failures:  r.Failures(),
		Conflicts: r.Conflicts(),
		Subsets:   r.Subsets(),
	}
}

// nat44MappingsView is the NAT44 state for tools: desired and applied as
// structured values.
func nat44MappingsView(r *nat44.Renderer) restapi.NAT44MappingsView {
	return restapi.NAT44MappingsView{Desired: restapi.NewNAT44Objects(r.Desired()), Applied: restapi.NewNAT44Objects(r.Applied())}
}

func ipamView(a *Agent) restapi.IPAMView {
	p := a.plan
	v := restapi.IPAMView{
		NodeID:           p.NodeID,
		PodSubnet:        p.PodSubnet,
		PodSubnetAll:     p.PodCIDR,
		PodGateway:       p.PodGateway,
		NATLoopback:      p.NATLoopback,
		HostInterconnect: p.HostInterconnect,
		NodeIP:           a.nodeIP(),
		VXLANIP:          p.VXLANIP,
		ServiceCIDR:      p.ServiceCIDR,
	}
	if al := a.ipamH.Allocator(); al != nil {
		v.Pods = map[string]netip.Addr{}
		for id, ip := range al.Allocations() {
			v.Pods[id.String()] = ip
		}
	}
	return v
}

func statusView(a *Agent) restapi.StatusView {
	note := ""
	if a.dp != nil {
		note = a.dp.Name()
	}
	v := restapi.StatusView{
		Node:     a.cfg.NodeName,
		NodeID:   a.nodeID,
		Ready:    a.ready(),
		NotReady: a.notReady(),
		VPP:      a.conn.Status(),
		Note:     note,
	}
	if a.built.Load() {
		v.Controller = a.ctl.Status()
		v.FirstSyncApplied = a.ctl.Applied()
		if r := a.renderer; r != nil {
			v.NAT44, v.Pending = r.Stats(), r.Pending()
		}
		if r := a.cnat; r != nil {
			st := r.Stats()
			v.CNAT = &st
			for _, p := range r.Pending() {
				v.Pending = append(v.Pending, nat44.PendingInterface{Name: p.Name, Since: p.Since})
			}
		}
		v.NodeSync, v.IPAM = a.nodes.WriteStatus(), a.ipamH.WriteStatus()
		ph := a.par.proxy.Status()
		v.ProxyHealth = &ph
	}
	return v
}
