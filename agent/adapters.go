package agent

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	nsplugin "contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// thisNode gives the service processor this node's identity from NodeSync.
type thisNode struct{ h *nsplugin.Handler }

func (t thisNode) NodeName() string { return t.h.NodeName() }
func (t thisNode) NodeID() uint32   { return t.h.ID() }

// NodeIPs are this node's VPP and management addresses.
func (t thisNode) NodeIPs() []netip.Addr {
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

// latencyTracker measures network programming latency, the kube-proxy SLI:
// from an EndpointSlice's last-change-trigger-time to the moment VPP
// acknowledged the batch that carried the change. As a handler it notes the
// trigger times of the slices in a batch; as the applier it runs the
// renderer's apply step and, when it succeeds, observes them.
type latencyTracker struct {
	inner   controller.Applier
	hist    prometheus.Histogram
	mu      sync.Mutex
	pending []time.Time
}

func newLatencyTracker(inner controller.Applier) *latencyTracker {
	return &latencyTracker{
		inner: inner,
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "contiv_network_programming_duration_seconds",
			Help:    "Time from an EndpointSlice's last-change-trigger-time to VPP acknowledging the change.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
}

func (l *latencyTracker) Name() string { return "latency" }

func (l *latencyTracker) HandlesEvent(ev controller.Event) bool {
	c, ok := ev.(*controller.ChangeEvent)
	return ok && c.Key.Resource == kubestate.ResEndpointSlice
}

// Resync drops pending trigger times: a resync is not a measured change.
func (l *latencyTracker) Resync(context.Context, *controller.ResyncEvent) error {
	l.mu.Lock()
	l.pending = l.pending[:0]
	l.mu.Unlock()
	return nil
}

func (l *latencyTracker) Update(_ context.Context, ev controller.Event) error {
	c := ev.(*controller.ChangeEvent)
	if s, ok := c.New.(*kubestate.EndpointSlice); ok && !s.TriggerTime.IsZero() {
		l.mu.Lock()
		l.pending = append(l.pending, s.TriggerTime)
		l.mu.Unlock()
	}
	return nil
}

func (l *latencyTracker) Apply(ctx context.Context, full bool) error {
	if err := l.inner.Apply(ctx, full); err != nil {
		return err // pending changes are measured when a later apply succeeds
	}
	now := time.Now()
	l.mu.Lock()
	for _, t := range l.pending {
		l.hist.Observe(now.Sub(t).Seconds())
	}
	l.pending = l.pending[:0]
	l.mu.Unlock()
	return nil
}

// stateCollector exports object counts at scrape time.
type stateCollector struct {
	a                                            *Agent
	services, mappings, failures, conflicts, skp *prometheus.Desc
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
		nodes:     d("contiv_nodes", "Nodes with a NodeSync ID."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.services, c.mappings, c.failures, c.conflicts, c.skp, c.nodes} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(c.services, len(c.a.proc.Services()))
	g(c.mappings, len(c.a.renderer.Desired().Mappings), "desired")
	g(c.mappings, len(c.a.renderer.Applied().Mappings), "applied")
	g(c.failures, len(c.a.renderer.Failures()))
	g(c.conflicts, len(c.a.renderer.Conflicts()))
	for reason, n := range c.a.proc.SkipCounts() {
		g(c.skp, n, string(reason))
	}
	g(c.nodes, len(c.a.nodes.AllNodes()))
}

// nat44View is the NAT44 state for REST: desired and applied, one line per
// object, plus what VPP refused and which frontends conflict.
func nat44View(r *nat44.Renderer) NAT44View {
	return NAT44View{
		Desired:   r.Desired().Lines(),
		Applied:   r.Applied().Lines(),
		Failures:  r.Failures(),
		Conflicts: r.Conflicts(),
	}
}

// nat44MappingsView is the NAT44 state for tools: desired and applied as
// structured values.
func nat44MappingsView(r *nat44.Renderer) NAT44MappingsView {
	return NAT44MappingsView{Desired: NewNAT44Objects(r.Desired()), Applied: NewNAT44Objects(r.Applied())}
}

func ipamView(a *Agent) IPAMView {
	p := a.plan
	v := IPAMView{
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

func statusView(a *Agent) StatusView {
	note := ""
	if a.dp != nil {
		note = a.dp.Name()
	}
	v := StatusView{
		Node:     a.cfg.NodeName,
		NodeID:   a.nodeID,
		Ready:    a.ready(),
		NotReady: a.notReady(),
		VPP:      a.conn.Status(),
		Note:     note,
	}
	if a.built.Load() {
		v.Controller, v.NAT44, v.Pending = a.ctl.Status(), a.renderer.Stats(), a.renderer.Pending()
		v.NodeSync, v.IPAM = a.nodes.WriteStatus(), a.ipamH.WriteStatus()
	}
	return v
}
