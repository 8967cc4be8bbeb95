package offline

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/offline/offlinetest"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
)

func mustRender(t testing.TB, p Params) *Rendered {
	t.Helper()
	r, err := Render(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRenderExampleCluster(t *testing.T) {
	objs := offlinetest.ExampleObjects(t)
	r := mustRender(t, Params{Objects: objs, Config: offlinetest.Config("node-2")})

	if r.NodeID != 2 || r.Plan.PodSubnet.String() != "10.1.2.0/24" || r.NodeIP.String() != "192.168.16.2/24" {
		t.Errorf("node-2: ID %d, pod subnet %v, node IP %v", r.NodeID, r.Plan.PodSubnet, r.NodeIP)
	}
	if !slices.Equal(r.MgmtIPs, []netip.Addr{netip.MustParseAddr("192.168.56.102")}) {
		t.Errorf("mgmt IPs %v", r.MgmtIPs)
	}
	if len(r.Failures) != 0 || len(r.Conflicts) != 0 {
		t.Errorf("failures %v, conflicts %v", r.Failures, r.Conflicts)
	}
	desired := strings.Join(r.Desired.Lines(), "\n")
	if applied := strings.Join(r.Applied.Lines(), "\n"); applied != desired {
		t.Errorf("applied differs from desired:\n%s\nwant\n%s", applied, desired)
	}
	// NodePorts are rendered on this node's own addresses only.
	for _, want := range []string{"mapping 192.168.16.2:31080/TCP", "mapping 192.168.56.102:31080/TCP", "interface tap0 in,out"} {
		if !strings.Contains(desired, want) {
			t.Errorf("desired state lacks %q:\n%s", want, desired)
		}
	}
	if strings.Contains(desired, "mapping 192.168.56.101:") {
		t.Errorf("node-2 renders node-1's address:\n%s", desired)
	}

	res := r.Translate(sim.Packet{Src: netip.MustParseAddr("10.1.2.50"), Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080})
	if res.Verdict != sim.Translated || len(res.Backends) != 2 || res.Affinity != 3600 {
		t.Errorf("cart VIP from node-2: %+v", res)
	}

	// The same input renders the same state, byte for byte.
	reversed := slices.Clone(objs)
	slices.Reverse(reversed)
	again := mustRender(t, Params{Objects: reversed, Config: offlinetest.Config("node-2")})
	if got := strings.Join(again.Desired.Lines(), "\n"); got != desired {
		t.Errorf("second render differs:\n%s\nwant\n%s", got, desired)
	}
}

func TestRenderNodeID(t *testing.T) {
	objs := offlinetest.ExampleObjects(t)
	// Not in the file and no ID: a clear error.
	_, err := Render(context.Background(), Params{Objects: objs, Config: offlinetest.Config("node-9")})
	if !errors.Is(err, ErrUnknownNode) || !strings.Contains(err.Error(), `"node-9"`) {
		t.Errorf("unknown node: %v", err)
	}
	// With an ID: rendered, without management addresses.
	r := mustRender(t, Params{Objects: objs, Config: offlinetest.Config("node-9"), NodeID: 9})
	if r.NodeID != 9 || len(r.MgmtIPs) != 0 || r.Plan.PodSubnet.String() != "10.1.9.0/24" {
		t.Errorf("node-9 with ID 9: %+v", r)
	}
	// An ID the plan cannot hold.
	if _, err := Render(context.Background(), Params{Objects: objs, Config: offlinetest.Config("node-1"), NodeID: 100000}); err == nil || !strings.Contains(err.Error(), "ipam") {
		t.Errorf("ID out of range: %v", err)
	}
	if _, err := Render(context.Background(), Params{Objects: objs}); err == nil {
		t.Error("render without a node name succeeded")
	}
}

// BenchmarkRenderExampleCluster measures an offline render of the example
// cluster (12 services, 49 objects): plan, processor, renderer and the
// apply step into a fresh simulated VPP.
func BenchmarkRenderExampleCluster(b *testing.B) {
	objs := offlinetest.ExampleObjects(b)
	cfg := offlinetest.Config("node-1")
	for b.Loop() {
		if _, err := Render(context.Background(), Params{Objects: objs, Config: cfg}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProxyHealthReachedThroughVPP: load balancers probe kube-proxy's
// health endpoint on the node IP, which VPP holds: the agent maps
// nodeIP:port of http.proxyHealthAddress to the host end of the host
// interconnect, where the endpoint listens; without a fixed port, nothing.
func TestProxyHealthReachedThroughVPP(t *testing.T) {
	for addr, want := range map[string]uint16{":10256": 10256, "0.0.0.0:10300": 10300, "off": 0, "127.0.0.1:0": 0, "bad": 0} {
		if got := nodepipeline.ProxyHealthPort(addr); got != want {
			t.Errorf("proxyHealthPort(%q) = %d, want %d", addr, got, want)
		}
	}
	cfg := offlinetest.Config("node-1")
	cfg.HTTP.ProxyHealthAddress = ":10300"
	r := mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: cfg})
	target := r.Plan.HostInterconnectLinux.Addr()
	found := 0
	for k, m := range r.Desired.Mappings {
		if k.Port != 10300 {
			continue
		}
		found++
		if k.IP.Addr() != r.NodeIP.Addr() && !slices.Contains(r.MgmtIPs, k.IP.Addr()) {
			t.Errorf("proxy health mapped on %v, not an address of the node", k.IP)
		}
		if l := m.Locals[len(m.Locals)-1]; l.IP.Addr() != target || l.Port != 10300 {
			t.Errorf("%v maps to %v, want %v:10300", k, l, target)
		}
	}
	if found != 1+len(r.MgmtIPs) {
		t.Errorf("%d proxy health mappings, want one per node address (%d)", found, 1+len(r.MgmtIPs))
	}
	cfg.HTTP.ProxyHealthAddress = "off"
	for k := range mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: cfg}).Desired.Mappings {
		if k.Port == 10300 || k.Port == 10256 {
			t.Errorf("proxy health off, still mapped: %v", k)
		}
	}
}

// TestProxyHealthReachedThroughVPPUnderCNAT: the same under cnat: a
// translation (is_real_ip) of nodeIP:port, on each IPv4 address of the
// node, to the host end of the host interconnect; a probe from outside
// reaches it.
func TestProxyHealthReachedThroughVPPUnderCNAT(t *testing.T) {
	cfg := offlinetest.Config("node-1")
	cfg.Renderer = contivconf.RendererCNAT
	cfg.HTTP.ProxyHealthAddress = ":10300"
	r := mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: cfg})
	target := cnat.Path{IP: r.Plan.HostInterconnectLinux.Addr(), Port: 10300}
	found := 0
	for _, tr := range r.CNAT.Applied {
		if tr.Port != 10300 {
			continue
		}
		found++
		if tr.IP != r.NodeIP.Addr() && !slices.Contains(r.MgmtIPs, tr.IP) {
			t.Errorf("proxy health translated on %v, not an address of the node", tr.IP)
		}
		if !tr.RealIP || tr.Proto != sr.TCP || !slices.Equal(tr.Paths, []cnat.Path{target}) {
			t.Errorf("%v, want TCP, real IP, the one path %v", tr, target)
		}
	}
	if found != 1+len(r.MgmtIPs) {
		t.Errorf("%d proxy health translations, want one per node address (%d)", found, 1+len(r.MgmtIPs))
	}
	probe := sim.Packet{Src: netip.MustParseAddr("192.0.2.9"), Dst: r.NodeIP.Addr(), Proto: sim.TCP, DstPort: 10300}
	if res := r.TranslateCNAT(probe); res.Verdict != sim.Translated || len(res.Backends) != 1 ||
		res.Backends[0].Backend != netip.AddrPortFrom(target.IP, target.Port) || res.Backends[0].Verdict != sim.Translated {
		t.Errorf("probe of nodeIP:10300 from outside: %+v", res)
	}
	cfg.HTTP.ProxyHealthAddress = "off"
	for _, tr := range mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: cfg}).CNAT.Applied {
		if tr.Port == 10300 || tr.Port == 10256 {
			t.Errorf("proxy health off, still translated: %v", tr)
		}
	}
}

func TestRenderCNAT(t *testing.T) {
	cfg := offlinetest.Config("node-2")
	cfg.Renderer = contivconf.RendererCNAT
	r := mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: cfg})
	if r.Renderer != contivconf.RendererCNAT || r.CNAT == nil || r.Desired != nil || r.Applied != nil {
		t.Fatalf("renderer %q, cnat %v, nat44 desired %v", r.Renderer, r.CNAT, r.Desired)
	}
	c := r.CNAT
	if len(c.Failures) != 0 || len(c.Desired) == 0 {
		t.Fatalf("failures %v, %d translations", c.Failures, len(c.Desired))
	}
	if !slices.EqualFunc(c.Desired, c.Applied, (*cnat.Translation).Equal) {
		t.Errorf("applied differs from desired:\n%v\nwant\n%v", c.Applied, c.Desired)
	}
	if c.AppliedNode == nil || !reflect.DeepEqual(c.DesiredNode, c.AppliedNode) {
		t.Errorf("node: applied %+v, desired %+v", c.AppliedNode, c.DesiredNode)
	}
	if c.DesiredNode.SNAT4 != netip.MustParseAddr("192.168.16.2") || c.DesiredNode.Policy != cnat.PolicyK8S {
		t.Errorf("node: %+v", c.DesiredNode)
	}
	// NodePorts on this node's own addresses only, with is_real_ip.
	keys := map[string]*cnat.Translation{}
	for _, tr := range c.Desired {
		keys[tr.Key.String()] = tr
	}
	for _, k := range []string{"192.168.16.2:31080/TCP", "192.168.56.102:31080/TCP"} {
		if tr := keys[k]; tr == nil || !tr.RealIP {
			t.Errorf("NodePort %s: %v", k, tr)
		}
	}
	if tr := keys["192.168.56.101:31080/TCP"]; tr != nil {
		t.Errorf("node-2 renders node-1's NodePort: %v", tr)
	}
	// The simulated VPP holds what was applied.
	if n := len(r.vpp.CnatTranslations()); n != len(c.Applied) {
		t.Errorf("simulated VPP holds %d translations, applied %d", n, len(c.Applied))
	}
	res := r.TranslateCNAT(sim.Packet{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080})
	if res.Verdict != sim.Translated || len(res.Backends) != 2 {
		t.Errorf("cart VIP through cnat: %+v", res)
	}
	// The NAT44 oracle sees no NAT44 state.
	if res := r.Translate(sim.Packet{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080}); res.Verdict == sim.Translated {
		t.Errorf("NAT44 oracle translates a cnat render: %+v", res)
	}
}

func TestRenderUnknownRenderer(t *testing.T) {
	cfg := offlinetest.Config("node-1")
	cfg.Renderer = "ebpf"
	if _, err := Render(context.Background(), Params{Objects: offlinetest.ExampleObjects(t), Config: cfg}); err == nil || !strings.Contains(err.Error(), `unknown renderer "ebpf"`) {
		t.Errorf("err %v", err)
	}
}

// dualStackNodePort is dualStackYAML's objects.
func dualStackNodePort(t testing.TB) []kubestate.Object {
	t.Helper()
	objs, err := kubestate.LoadYAMLFile("../testdata/dual-stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestRenderIPv6Node: the IPv6 options (an interface's ipv6CIDR, the IPv6
// pod and service ranges) make the cnat renderer's node side IPv6, and
// NAT44 ignores them.
func TestRenderIPv6Node(t *testing.T) {
	pfx := netip.MustParsePrefix
	config := func(renderer string, v6 bool) contivconf.Config {
		cfg := offlinetest.Config("node-2")
		cfg.Renderer = renderer
		main := contivconf.InterfaceConfig{Name: "GigabitEthernet0/8/0"}
		other := contivconf.InterfaceConfig{Name: "GigabitEthernet0/9/0", IPCIDR: pfx("10.50.0.2/24")}
		if v6 {
			cfg.IPAM.PodSubnetCIDRv6, cfg.IPAM.ServiceCIDRv6 = pfx("fd00:1::/48"), pfx("fd00:96::/108")
			main.IPv6CIDR, other.IPv6CIDR = pfx("2001:db8:16::2/64"), pfx("2001:db8:50::2/64")
		}
		cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-2", MainInterface: &main, OtherInterfaces: []contivconf.InterfaceConfig{other}}}
		if err := cfg.Validate(); err != nil && !strings.Contains(err.Error(), "etcd.endpoints") {
			t.Fatal(err)
		}
		return cfg
	}

	c := mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: config(contivconf.RendererCNAT, true)}).CNAT
	n := c.DesiredNode
	if n.SNAT4 != netip.MustParseAddr("192.168.16.2") || n.SNAT6 != netip.MustParseAddr("2001:db8:16::2") {
		t.Errorf("SNAT addresses %v %v", n.SNAT4, n.SNAT6)
	}
	var exclude []string
	for _, p := range n.Exclude {
		exclude = append(exclude, p.String())
	}
	want := []string{"10.1.0.0/16", "10.50.0.0/24", "10.96.0.0/12", "172.30.0.0/16", "192.168.16.0/24", "192.168.30.0/24", "2001:db8:16::/64", "2001:db8:50::/64", "fd00:1::/48", "fd00:96::/108"}
	if !slices.Equal(exclude, want) {
		t.Errorf("exclude %v, want %v", exclude, want)
	}
	for _, name := range []string{"GigabitEthernet0/8/0", "GigabitEthernet0/9/0", "tap0"} {
		if f := n.Features[name]; f&(cnat.FeatureInput6|cnat.FeatureOutput6) != cnat.FeatureInput6|cnat.FeatureOutput6 {
			t.Errorf("%s: features %v, want the IPv6 ones", name, f)
		}
	}
	if c.AppliedNode == nil || !reflect.DeepEqual(c.DesiredNode, c.AppliedNode) {
		t.Errorf("node: applied %+v, desired %+v", c.AppliedNode, c.DesiredNode)
	}
	if snat := mustRender(t, Params{Objects: offlinetest.ExampleObjects(t), Config: config(contivconf.RendererCNAT, false)}).CNAT.DesiredNode; snat.SNAT6.IsValid() || snat.Features["tap0"]&cnat.FeatureInput6 != 0 {
		t.Errorf("without IPv6 options: SNAT6 %v, tap0 features %v", snat.SNAT6, snat.Features["tap0"])
	}

	objs := append(offlinetest.ExampleObjects(t), dualStackNodePort(t)...)
	with := mustRender(t, Params{Objects: objs, Config: config(contivconf.RendererNAT44, true)})
	without := mustRender(t, Params{Objects: objs, Config: config(contivconf.RendererNAT44, false)})
	if got, want := with.Desired.Lines(), without.Desired.Lines(); !slices.Equal(got, want) {
		t.Errorf("NAT44 with the IPv6 options:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRenderIPv6NodePort: with an ipv6CIDR on the main interface, the cnat
// renderer translates NodePorts on the node's IPv6 address (is_real_ip) to
// the IPv6 backends of dual-stack services only; the IPv4 NodePort keeps
// the IPv4 backends.
func TestRenderIPv6NodePort(t *testing.T) {
	pfx := netip.MustParsePrefix
	cfg := offlinetest.Config("node-2")
	cfg.Renderer = contivconf.RendererCNAT
	cfg.IPAM.PodSubnetCIDRv6, cfg.IPAM.ServiceCIDRv6 = pfx("fd00:1::/48"), pfx("fd00:96::/108")
	main := contivconf.InterfaceConfig{Name: "GigabitEthernet0/8/0", IPv6CIDR: pfx("2001:db8:16::2/64")}
	cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-2", MainInterface: &main}}
	objs := append(offlinetest.ExampleObjects(t), dualStackNodePort(t)...)
	r := mustRender(t, Params{Objects: objs, Config: cfg})
	c := r.CNAT
	if len(c.Failures) != 0 || !slices.EqualFunc(c.Desired, c.Applied, (*cnat.Translation).Equal) {
		t.Fatalf("failures %v; applied %v, desired %v", c.Failures, c.Applied, c.Desired)
	}
	keys := map[string]*cnat.Translation{}
	for _, tr := range c.Desired {
		keys[tr.Key.String()] = tr
	}
	path := func(s string) cnat.Path {
		ap := netip.MustParseAddrPort(s)
		return cnat.Path{IP: ap.Addr(), Port: ap.Port()}
	}
	for k, want := range map[string]cnat.Path{
		"[2001:db8:16::2]:31090/TCP": path("[fd00:1:1::20]:8080"),
		"192.168.16.2:31090/TCP":     path("10.1.1.20:8080"),
		"192.168.56.102:31090/TCP":   path("10.1.1.20:8080"),
	} {
		if tr := keys[k]; tr == nil || !tr.RealIP || !slices.Equal(tr.Paths, []cnat.Path{want}) {
			t.Errorf("NodePort %s: %v, want real IP and the one path %v", k, tr, want)
		}
	}
	// shop/frontend is IPv4 only: its NodePort has a translation on the
	// IPv4 node IP, none on the IPv6 one.
	if keys["192.168.16.2:30080/TCP"] == nil || keys["[2001:db8:16::2]:30080/TCP"] != nil {
		t.Errorf("IPv4-only NodePort: v4 %v, v6 %v", keys["192.168.16.2:30080/TCP"], keys["[2001:db8:16::2]:30080/TCP"])
	}
	res := r.TranslateCNAT(sim.Packet{Src: netip.MustParseAddr("2001:db8:99::1"), Dst: netip.MustParseAddr("2001:db8:16::2"), Proto: sim.TCP, DstPort: 31090})
	if res.Verdict != sim.Translated || len(res.Backends) != 1 || res.Backends[0].Backend != netip.MustParseAddrPort("[fd00:1:1::20]:8080") {
		t.Errorf("IPv6 NodePort through cnat: %+v", res)
	}
}
