package packettrace_test

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/agent/offline/offlinetest"
	"contiv.dev/vpp/agent/packettrace"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// cnatTraceState is what contivctl trace reads of a cnat render's agent.
func cnatTraceState(r *offline.Rendered) packettrace.CNATState {
	return packettrace.CNATState{Translations: r.CNAT.Applied, Node: r.CNAT.AppliedNode, PodSubnets: []netip.Prefix{r.Plan.PodSubnet}}
}

// podIngress maps the IPv4 address of each of node's pods to its
// interface, as the simulated CNI names it.
func podIngress(objs []kubestate.Object, node string) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, o := range objs {
		p, ok := o.(*kubestate.Pod)
		if !ok || p.NodeName != node || p.HostNetwork {
			continue
		}
		for _, ip := range p.IPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				out[a] = "tap-" + p.Namespace + "-" + p.Name // as the simulated CNI names it
			}
		}
	}
	return out
}

// agreeWithCnatOracle checks packettrace.CNAT against the simulated VPP's cnat
// oracle for each packet (VPP's translation ids and the reasons naming
// them aside) and returns the answers.
func agreeWithCnatOracle(t *testing.T, r *offline.Rendered, packets []sim.Packet) []sim.CnatResult {
	t.Helper()
	st := cnatTraceState(r)
	var out []sim.CnatResult
	for _, p := range packets {
		want := r.TranslateCNAT(p)
		got, err := packettrace.CNAT(t.Context(), st, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict != sim.NotTranslated {
			want.TranslationID, want.Reason, got.Reason = 0, "", ""
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\ntrace  %+v\noracle %+v", p, got, want)
		}
		out = append(out, got)
	}
	return out
}

// TestCNATAgreesWithOracle holds packettrace.CNAT to sim.VPP.CnatTrace over
// the example cluster rendered through cnat for node-1: every translation
// (cluster IPs, NodePorts on the VPP and management addresses) from an
// outside client and from each backend (a local one from its pod
// interface), a port nothing translates (a cluster IP's rejects, from
// outside and from a pod), and
// untranslated packets from a pod towards the outside and towards an
// excluded range.
func TestCNATAgreesWithOracle(t *testing.T) {
	// A service without endpoints: its cluster IP, untranslated, is the
	// one a reject route refuses (a translated one's would be hidden by
	// cnat's entry, so it gets none: cnat.BuildRoutes).
	empty := netip.MustParseAddr("10.96.10.99")
	objs := append(offlinetest.ExampleObjects(t), &kubestate.Service{Namespace: "default", Name: "no-endpoints", Type: "ClusterIP",
		ClusterIPs: []string{empty.String()}, Ports: []kubestate.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}}})
	cfg := offlinetest.Config("node-1")
	cfg.Renderer = contivconf.RendererCNAT
	r := mustRender(t, offline.Params{Objects: objs, Config: cfg})
	pods := podIngress(objs, "node-1")
	outside := netip.MustParseAddr("192.0.2.1")
	var packets []sim.Packet
	for _, tr := range r.CNAT.Applied {
		packets = append(packets, sim.Packet{Src: outside, Dst: tr.IP, Proto: ip_types.IPProto(tr.Proto), DstPort: tr.Port, Ingress: r.MainInterface},
			sim.Packet{Src: outside, Dst: tr.IP, Proto: ip_types.IPProto(tr.Proto), DstPort: tr.Port + 1, Ingress: r.MainInterface})
		for _, p := range tr.Paths {
			ingress := r.MainInterface
			if name, ok := pods[p.IP]; ok {
				ingress = name
			}
			packets = append(packets, sim.Packet{Src: p.IP, Dst: tr.IP, Proto: ip_types.IPProto(tr.Proto), DstPort: tr.Port, Ingress: ingress})
		}
	}
	client := slices.MinFunc(slices.Collect(maps.Keys(pods)), netip.Addr.Compare)
	for _, tr := range r.CNAT.Applied {
		// A port nothing translates, from a pod: dropped by cnat's entry of
		// the translated address (records-verdicts; docs/real-vpp.md).
		packets = append(packets, sim.Packet{Src: client, Dst: tr.IP, Proto: ip_types.IPProto(tr.Proto), DstPort: tr.Port + 1, Ingress: pods[client]})
	}
	packets = append(packets, sim.Packet{Src: client, Dst: empty, Proto: sim.TCP, DstPort: 80, Ingress: pods[client]})
	for _, dst := range []string{"8.8.8.8", "10.96.99.99", "10.1.3.7"} {
		packets = append(packets, sim.Packet{Src: client, Dst: netip.MustParseAddr(dst), Proto: sim.TCP, DstPort: 443, Ingress: pods[client]})
	}
	packets = append(packets, sim.Packet{Src: outside, Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080, Ingress: "local0"})

	seen := map[string]int{}
	for _, res := range agreeWithCnatOracle(t, r, packets) {
		seen[res.Verdict.String()]++
		if res.Verdict == sim.NotTranslated && res.Src == r.NodeIP.Addr() {
			seen["outbound SNAT"]++
		}
		for _, b := range res.Backends {
			seen[b.Reason]++
			if b.Local {
				seen["local"]++
			}
		}
	}
	for _, want := range []string{"translated", "not translated", "dropped", "rejected", "outbound SNAT", "local",
		"the client's own address",
		"a remote backend reached from outside: source-NATed to the SNAT address by the K8S policy",
		"hairpin (the backend is the client): source-NATed to the SNAT address by the K8S policy"} {
		if seen[want] == 0 {
			t.Errorf("no packet gave %q: %v", want, seen)
		}
	}
}

// ipv6Cluster is a node with an IPv6 address, an IPv6 service with a
// remote backend and a local pod.
const ipv6Cluster = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Pod
metadata: {namespace: shop, name: client}
spec: {nodeName: node-1}
status: {podIP: 10.1.1.50, podIPs: [{ip: 10.1.1.50}]}
---
apiVersion: v1
kind: Service
metadata: {namespace: shop, name: web6}
spec:
  ipFamilies: [IPv6]
  clusterIP: fd00:96::50
  clusterIPs: [fd00:96::50]
  ports: [{name: http, protocol: TCP, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: shop
  name: web6-1
  labels: {kubernetes.io/service-name: web6}
addressType: IPv6
ports: [{name: http, protocol: TCP, port: 8080}]
endpoints:
- addresses: [fd00:1:2::3]
  conditions: {ready: true}
  nodeName: node-2
`

// TestCNATAgreesWithOracleIPv6: an IPv6 cluster IP from outside (the
// remote backend sees the IPv6 SNAT address) and from a pod (it sees the
// pod), untranslated IPv6 from a pod (INCLUDE_V6: the SNAT address
// unless the destination is excluded), and an IPv6 service address no
// service has (dropped by the service-CIDR route).
func TestCNATAgreesWithOracleIPv6(t *testing.T) {
	objs, err := kubestate.LoadYAML(strings.NewReader(ipv6Cluster))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := contivconf.Parse([]byte(`
renderer: cnat
ipam: {podSubnetCIDRv6: "fd00:1::/48", serviceCIDRv6: "fd00:96::/108"}
nodeConfig:
- nodeName: node-1
  mainInterface: {name: GigabitEthernet0/8/0, ipv6CIDR: "2001:db8:16::1/64"}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.NodeName = "node-1"
	r := mustRender(t, offline.Params{Objects: objs, Config: cfg})
	ip := netip.MustParseAddr
	vip, pod := ip("fd00:96::50"), ip("fd00:1:1::50")
	packets := []sim.Packet{
		{Src: ip("2001:db8::1"), Dst: vip, Proto: sim.TCP, DstPort: 80, Ingress: r.MainInterface},
		{Src: pod, Dst: vip, Proto: sim.TCP, DstPort: 80, Ingress: "tap-shop-client"},
		{Src: pod, Dst: ip("2001:db8:99::1"), Proto: sim.TCP, DstPort: 443, Ingress: "tap-shop-client"},
		{Src: pod, Dst: ip("fd00:96::99"), Proto: sim.TCP, DstPort: 443, Ingress: "tap-shop-client"},
		{Src: pod, Dst: ip("fd00:1::7"), Proto: sim.TCP, DstPort: 443, Ingress: "tap-shop-client"},
	}
	res := agreeWithCnatOracle(t, r, packets)
	snat6 := ip("2001:db8:16::1")
	if len(res[0].Backends) != 1 || res[0].Backends[0].Src != snat6 {
		t.Errorf("from outside: %+v", res[0])
	}
	if len(res[1].Backends) != 1 || res[1].Backends[0].Src != pod {
		t.Errorf("from a pod: %+v", res[1])
	}
	if res[2].Src != snat6 || res[4].Verdict != sim.NotTranslated || res[4].Src != pod {
		t.Errorf("untranslated: %+v, %+v", res[2], res[4])
	}
	if res[3].Verdict != sim.Dropped {
		t.Errorf("unknown service address: %+v, want dropped by the service-CIDR route", res[3])
	}
}

// TestCNAT checks the shares of repeated paths and the cases the
// oracle comparisons do not reach: no node configuration, a policy
// without source NAT, a translation without a usable path, a drop route.
func TestCNAT(t *testing.T) {
	ip := netip.MustParseAddr
	vip := cnat.Key{IP: ip("10.96.0.10"), Port: 53, Proto: sr.UDP}
	tr := &cnat.Translation{Key: vip, Paths: []cnat.Path{
		{IP: ip("10.1.1.2"), Port: 53}, {IP: ip("10.1.1.2"), Port: 53}, {IP: ip("10.1.1.2"), Port: 53}, {IP: ip("10.1.2.2"), Port: 53},
	}}
	node := &cnat.Node{SNAT4: ip("192.168.16.1"), Policy: cnat.PolicyK8S,
		Tables: map[string]cnat.Tables{"tap-a": 1<<cnat.TableIncludeV4 | 1<<cnat.TablePod}}
	st := packettrace.CNATState{Translations: []*cnat.Translation{tr}, Node: node, PodSubnets: []netip.Prefix{netip.MustParsePrefix("10.1.1.0/24")}}
	p := sim.Packet{Src: ip("192.0.2.1"), Dst: vip.IP, Proto: ip_types.IPProto(vip.Proto), DstPort: vip.Port}

	trace := func(st packettrace.CNATState, p sim.Packet) sim.CnatResult {
		t.Helper()
		res, err := packettrace.CNAT(t.Context(), st, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := trace(st, p)
	if res.Verdict != sim.Translated || len(res.Backends) != 2 {
		t.Fatalf("%+v", res)
	}
	local, remote := res.Backends[0], res.Backends[1]
	if local.Weight != 0.75 || !local.Local || local.Src != p.Src || remote.Weight != 0.25 || remote.Local || remote.Src != node.SNAT4 {
		t.Errorf("shares and sources: %+v", res.Backends)
	}
	if !strings.Contains(res.Reason, "10.96.0.10:53/UDP (4 of 4 paths resolved)") {
		t.Errorf("reason %q", res.Reason)
	}

	// Without the K8S policy the remote backend's reply is lost; without
	// a node configuration every client counts as a pod's.
	st.Node = &cnat.Node{Policy: cnat.PolicyIfPfx, Tables: node.Tables}
	if b := trace(st, p).Backends[1]; b.Verdict != sim.Dropped {
		t.Errorf("IF_PFX: %+v", b)
	}
	st.Node = nil
	if b := trace(st, p).Backends[1]; b.Verdict != sim.Translated || b.Src != p.Src {
		t.Errorf("no node configuration: %+v", b)
	}

	// A translation whose paths name no address is one VPP cannot hold:
	// an error names it.
	st.Translations = []*cnat.Translation{{Key: vip, Paths: []cnat.Path{{Port: 53}}}}
	if res, err := packettrace.CNAT(t.Context(), st, p); err == nil || !strings.Contains(err.Error(), "cnat translation 10.96.0.10:53/UDP") {
		t.Errorf("no usable path: %+v, %v", res, err)
	}
	st.Translations = nil
	// Another port is not translated, and keeps its source from outside.
	p.DstPort = 54
	if res := trace(st, p); res.Verdict != sim.NotTranslated || res.Src != p.Src {
		t.Errorf("other port: %+v", res)
	}
	// With the service-CIDR drop routes (main and pod VRF) it is dropped,
	// by cnat's table-0 entry of the translated address, which the
	// lookup meets first; the translated port is not (cnat translates
	// before the FIB lookup).
	st.Translations = []*cnat.Translation{tr}
	cidr := netip.MustParsePrefix("10.96.0.0/12")
	st.Node = &cnat.Node{Routes: []cnat.Route{{Prefix: cidr, VRF: 0}, {Prefix: cidr, VRF: 1}}}
	if res := trace(st, p); res.Verdict != sim.Dropped || !strings.Contains(res.Reason, "cnat's FIB entry of the translated address 10.96.0.10 in VRF 0") {
		t.Errorf("other port, drop route: %+v", res)
	}
	p.DstPort = 53
	if res := trace(st, p); res.Verdict != sim.Translated {
		t.Errorf("translated port, drop route: %+v", res)
	}
}
