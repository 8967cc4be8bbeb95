package core

import (
	"slices"
	"testing"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/internal/workload"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestPipelineIsTheAgents: the benchmark measures node 1's pipeline as the
// agent builds it (nodepipeline), not a copy: under NAT44 the service
// CIDR's drop route, the proxy health mapping of the node IP to the
// health-check target, source ranges on the main NIC; under cnat the
// service CIDR's drop routes and the node IP's proxy health translation.
func TestPipelineIsTheAgents(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	w := workload.New(100)
	evs, err := NewEvents(w)
	if err != nil {
		t.Fatal(err)
	}
	node := env.Node("")
	target := node.HealthCheckTarget()
	proxyPort := nodepipeline.ProxyHealthPort(env.Config.HTTP.ProxyHealthAddress)
	if proxyPort == 0 || !target.IsValid() || !env.Plan.ServiceCIDR.IsValid() {
		t.Fatalf("the defaults changed: proxy health port %d, health-check target %v, service CIDR %v", proxyPort, target, env.Plan.ServiceCIDR)
	}

	p, err := env.NewPipeline(&CountingVPP{}, env.PodTable(w))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resync(t.Context(), evs.Snap); err != nil {
		t.Fatal(err)
	}
	d := p.NAT44().Desired()
	if c := env.RendererConfig(); c.SourceRangeInterface != MainNIC || c.ServiceCIDR != env.Plan.ServiceCIDR {
		t.Errorf("NAT44 configuration: source ranges on %q, service CIDR %v", c.SourceRangeInterface, c.ServiceCIDR)
	}
	routed := false
	for k := range d.Routes {
		routed = routed || k.Prefix.AsPrefix() == env.Plan.ServiceCIDR
	}
	if !routed {
		t.Errorf("no route of the service CIDR %v among %d", env.Plan.ServiceCIDR, len(d.Routes))
	}
	m := d.Mappings[nat44.MappingKey{IP: nat44.MustIPv4(workload.VppIP(workload.ThisNode)), Port: proxyPort, Proto: sr.TCP}]
	if m == nil || len(m.Locals) == 0 || m.Locals[len(m.Locals)-1].IP.Addr() != target {
		t.Errorf("proxy health mapping on the node IP: %+v, want one to %v", m, target)
	}

	c, err := env.NewCNATPipeline(&CountingVPP{}, env.PodTable(w))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Resync(t.Context(), evs.Snap); err != nil {
		t.Fatal(err)
	}
	cr := c.CNAT()
	if !slices.ContainsFunc(cr.DesiredNode().Routes, func(r cnat.Route) bool { return r.Prefix == env.Plan.ServiceCIDR }) {
		t.Errorf("cnat: no drop route of the service CIDR %v: %+v", env.Plan.ServiceCIDR, cr.DesiredNode().Routes)
	}
	found := false
	for _, tr := range cr.Desired() {
		found = found || tr.IP == workload.VppIP(workload.ThisNode) && tr.Port == proxyPort
	}
	if !found {
		t.Error("cnat: no proxy health translation on the node IP")
	}
}
