package nodepipeline

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

type node1 struct{}

func (node1) NodeName() string { return "node-1" }
func (node1) NodeID() uint32   { return 1 }
func (node1) NodeIPs() []netip.Addr {
	return nil
}

type noInterfaces struct{}

func (noInterfaces) InterfaceByTag(string) (string, bool) { return "", false }

func testNode(t *testing.T, renderer string) Node {
	t.Helper()
	cfg := contivconf.Defaults()
	cfg.NodeName, cfg.Renderer = "node-1", renderer
	plan, err := addrplan.NewPlan(IPAMConfig(cfg), 1)
	if err != nil {
		t.Fatal(err)
	}
	return Node{Config: cfg, Plan: plan, MainInterface: SimulatedMainNIC}
}

// nat44Port and cnatPort are ports Build must not call: it only builds.
type nat44Port struct{ nat44.VPP }
type cnatPort struct{ cnat.VPP }

// TestBuildPicksTheConfiguredRenderer: the renderer the configuration
// names, over its port, with the node's configuration (service CIDR,
// health-check target, main NIC); an unknown renderer is refused by name.
func TestBuildPicksTheConfiguredRenderer(t *testing.T) {
	ports := Ports{NAT44: nat44Port{}, CNAT: cnatPort{}}
	for _, r := range []string{"", contivconf.RendererNAT44, contivconf.RendererCNAT} {
		n := testNode(t, r)
		p, err := Build(Params{Node: n, Ports: ports, ThisNode: node1{}, Interfaces: noInterfaces{}})
		if err != nil {
			t.Fatalf("renderer %q: %v", r, err)
		}
		if p.Processor == nil || p.Renderer == nil {
			t.Fatalf("renderer %q: %+v", r, p)
		}
		if (r == contivconf.RendererCNAT) != (p.CNAT != nil) || (p.CNAT != nil) == (p.NAT44 != nil) {
			t.Errorf("renderer %q: nat44 %v, cnat %v", r, p.NAT44 != nil, p.CNAT != nil)
		}
	}
	n := testNode(t, "")
	c := n.NAT44Config()
	if !c.ServiceCIDR.IsValid() || c.HealthCheckTarget != n.Plan.HostInterconnectLinux.Addr() || c.SourceRangeInterface != SimulatedMainNIC {
		t.Errorf("NAT44 configuration: service CIDR %v, health-check target %v, source ranges on %q", c.ServiceCIDR, c.HealthCheckTarget, c.SourceRangeInterface)
	}
	n.Config.Renderer = "ipvs"
	if _, err := Build(Params{Node: n, Ports: ports, ThisNode: node1{}, Interfaces: noInterfaces{}}); err == nil || !strings.Contains(err.Error(), `"ipvs"`) {
		t.Errorf("unknown renderer: %v", err)
	}
	n.Config.Renderer = ""
	if _, err := Build(Params{Node: n, Ports: ports, Interfaces: noInterfaces{}}); !errors.Is(err, service.ErrMissingDependency) {
		t.Errorf("no ThisNode: %v", err)
	}
}

// TestServiceConfigBringsTheProxyHealthPort: the processor is told the
// port of the proxy health address, none when off or random.
func TestServiceConfigBringsTheProxyHealthPort(t *testing.T) {
	n := testNode(t, "")
	for addr, want := range map[string]uint16{":10256": 10256, "0.0.0.0:10300": 10300, "off": 0, "127.0.0.1:0": 0, "": 0} {
		if got := n.ServiceConfig(nil, addr).ProxyHealthPort; got != want {
			t.Errorf("%q: port %d, want %d", addr, got, want)
		}
	}
}
