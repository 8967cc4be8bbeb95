package vpp

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/fib_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vpe"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// The verdict measurements (issue 24 item 1), recorded into
// sim/testdata/records-verdicts (README.md there): can a frontend be
// rejected or dropped by translating it to a "sink" address inside the
// service CIDR whose route rejects (a /32 ICMP_UNREACH in table 0) or
// drops (the service CIDR's DROP route)? Does the client then see an ICMP
// error it recognises (the error's inner header translated back)?
//
// Service CIDR 10.96.0.0/12 (IPv6 fd00:96::/108); node IP 192.168.16.1;
// the backend pod 10.1.1.3 serves TCP 8080 and UDP 5353.
//   - 10.96.0.10 ("web"): TCP 80 → 10.1.1.3:8080, UDP 53 → 10.1.1.3:5353;
//     external IP 203.0.113.10 the same (sanity: traffic works).
//   - 10.96.0.11 ("empty", no endpoints): /32 ICMP_UNREACH in table 0.
//     External IP 203.0.113.11 → the reject sink 10.96.0.0 (the service
//     CIDR's network address, /32 ICMP_UNREACH in table 0), ports 80/TCP
//     and 53/UDP; external IP 203.0.113.12 → the service's own ClusterIP
//     10.96.0.11, same ports.
//   - 203.0.113.13 (Local policy, no local endpoint) → the drop sink
//     10.111.255.255 (the service CIDR's last address), 80/TCP.
var (
	labNode        = netip.MustParseAddr("192.168.16.1")
	labCIDR        = netip.MustParsePrefix("10.96.0.0/12")
	labCIDR6       = netip.MustParsePrefix("fd00:96::/108")
	labBackend     = netip.MustParseAddr("10.1.1.3")
	labWeb         = netip.MustParseAddr("10.96.0.10")
	labEmpty       = netip.MustParseAddr("10.96.0.11")
	labReject      = netip.MustParseAddr("10.96.0.0")
	labDrop        = netip.MustParseAddr("10.111.255.255")
	labExtWeb      = netip.MustParseAddr("203.0.113.10")
	labExtReject   = netip.MustParseAddr("203.0.113.11")
	labExtOwn      = netip.MustParseAddr("203.0.113.12")
	labExtDrop     = netip.MustParseAddr("203.0.113.13")
	labExtSelf     = netip.MustParseAddr("203.0.113.14")
	labWeb6        = netip.MustParseAddr("fd00:96::10")
	labWeb6p4      = netip.MustParseAddr("fd00:96::14")
	labProhibit    = netip.MustParseAddr("10.96.0.12")
	labExtProhibit = netip.MustParseAddr("203.0.113.15")
	labReject6     = netip.MustParseAddr("fd00:96::")
	labExtRej6     = netip.MustParseAddr("fd00:1:99::11")
)

func recordsVerdictsDir(t *testing.T) string {
	d := filepath.Join("sim", "testdata", "records-verdicts")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// routeReq is the agent's route request, but a reject is ICMP_UNREACH
// (what was measured first; the ICMP_PROHIBIT routes are set apart).
func routeReq(t *testing.T, p netip.Prefix, vrf uint32, kind servicerenderer.RouteKind, table uint32) *ipapi.IPRouteAddDel {
	req, err := pathRequest(p, vrf, true, kind == servicerenderer.RouteReject, kind == servicerenderer.RouteLookup, table, &release2502)
	if err != nil {
		t.Fatal(err)
	}
	if kind == servicerenderer.RouteReject {
		req.Route.Paths[0].Type = fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH
	}
	return req
}

// rejectRoute6 is an IPv6 ICMP_UNREACH route in any table (pathRequest
// refuses table != 0: the lab wants to see what VPP does).
func rejectRoute6(p netip.Prefix, vrf uint32) *ipapi.IPRouteAddDel {
	return &ipapi.IPRouteAddDel{IsAdd: true, Route: ipapi.IPRoute{
		TableID: vrf,
		Prefix:  ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())},
		NPaths:  1,
		Paths:   []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP6}},
	}}
}

// probeAll runs the traffic matrix of a scenario and records it.
func probeAll(l *lab, r *recorder, what string, probes []labProbe) {
	for _, p := range probes {
		var res probe
		ifName := map[string]string{"hv-out": "hvo1", "hv-cl": "hvc1", "hv-c6": "hvd1"}[p.ns]
		if p.udp {
			res = l.udp(p.ns, ifName, p.host, p.port)
		} else {
			res = l.tcp(p.ns, ifName, p.host, p.port)
		}
		proto := "TCP"
		if p.udp {
			proto = "UDP"
		}
		r.note("traffic (%s) %s from %s to %s port %d/%s: %s", what, p.what, p.ns, p.host, p.port, proto, res)
	}
}

type labProbe struct {
	what, ns, host string
	port           int
	udp            bool
}

func TestLabVerdictsNAT44(t *testing.T) {
	l := newLab(t)
	r := l.record("verdicts-nat44")
	r.must("enable NAT44-ED", &nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	r.must("forwarding on", &nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	for _, a := range []nat44.PoolAddress{
		{IP: netip.MustParseAddr("10.1.1.254"), VRF: nat44.AnyVRF, TwiceNAT: true},
		{IP: labNode, VRF: nat44.AnyVRF},
	} {
		req, _ := poolRequest(a, true)
		r.must("pool "+a.IP.String(), req)
	}
	for _, f := range []struct {
		name string
		idx  uint32
		f    nat44.Features
	}{{"host-hvo0", 1, nat44.FeatureOutput}, {"host-hvc0", 3, nat44.FeatureIn | nat44.FeatureOut}, {"host-hvb0", 4, nat44.FeatureIn | nat44.FeatureOut}} {
		for _, c := range featureCalls(f.name, f.idx, 0, f.f) {
			r.must(c.what, c.req)
		}
	}
	ids := []nat44.IdentityKey{
		{IP: labNode, Port: 4789, Proto: servicerenderer.UDP},
		{IP: labNode}, {IP: labNode, VRF: 1},
	}
	for _, ip := range []netip.Addr{labExtWeb, labExtReject, labExtOwn, labExtDrop, labExtSelf} {
		ids = append(ids, nat44.IdentityKey{IP: ip, VRF: 1})
		req, _ := poolRequest(nat44.PoolAddress{IP: ip, VRF: 3}, true)
		r.must("external IP's pool address in the tenant VRF", req)
	}
	for _, k := range ids {
		req, err := identityRequest(&nat44.Identity{IdentityKey: k, Tag: "contiv:identity"}, true)
		if err != nil {
			t.Fatal(err)
		}
		r.must("identity", req)
	}
	r.must("service CIDR drop, table 0", routeReq(t, labCIDR, 0, servicerenderer.RouteDrop, 0))
	r.must("service CIDR lookup of table 0 in the pod VRF", routeReq(t, labCIDR, 1, servicerenderer.RouteLookup, 0))
	r.must("reject route of the empty service's cluster IP", routeReq(t, netip.PrefixFrom(labEmpty, 32), 0, servicerenderer.RouteReject, 0))
	r.must("reject route of the reject sink (the service CIDR's network address)", routeReq(t, netip.PrefixFrom(labReject, 32), 0, servicerenderer.RouteReject, 0))
	prohibit, _ := pathRequest(netip.PrefixFrom(labProhibit, 32), 0, true, true, false, 0, &release2502)
	r.must("ICMP_PROHIBIT route of a cluster IP without endpoints (compared with ICMP_UNREACH), the agent's reject request", prohibit)
	lb := func(ip netip.Addr, port uint16, proto nat44.Protocol, twice nat44.TwiceNAT, to netip.Addr, toPort uint16, vrf uint32, note string) {
		m := &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.MustIPv4(ip), Port: port, Proto: proto}, TwiceNAT: twice, Tag: "contiv:svc/default/x",
			Locals: []nat44.Local{nat44.Placeholder, {IP: nat44.MustIPv4(to), Port: toPort, VRF: vrf, Probability: 1}}}
		req, _, err := mappingRequest(m, true)
		if err != nil {
			t.Fatal(err)
		}
		r.must(note, req)
	}
	lb(labWeb, 80, servicerenderer.TCP, nat44.TwiceNATSelf, labBackend, 8080, 1, "web ClusterIP TCP")
	lb(labWeb, 53, servicerenderer.UDP, nat44.TwiceNATSelf, labBackend, 5353, 1, "web ClusterIP UDP")
	lb(labExtWeb, 80, servicerenderer.TCP, nat44.TwiceNATOn, labBackend, 8080, 1, "web external IP TCP")
	lb(labExtWeb, 53, servicerenderer.UDP, nat44.TwiceNATOn, labBackend, 5353, 1, "web external IP UDP")
	lb(labExtReject, 80, servicerenderer.TCP, nat44.TwiceNATOn, labReject, 80, 0, "empty service's external IP TCP → reject sink")
	lb(labExtReject, 53, servicerenderer.UDP, nat44.TwiceNATOn, labReject, 53, 0, "empty service's external IP UDP → reject sink")
	lb(labExtOwn, 80, servicerenderer.TCP, nat44.TwiceNATOn, labEmpty, 80, 0, "empty service's external IP TCP → its own ClusterIP")
	lb(labExtOwn, 53, servicerenderer.UDP, nat44.TwiceNATOn, labEmpty, 53, 0, "empty service's external IP UDP → its own ClusterIP")
	lb(labExtDrop, 80, servicerenderer.TCP, nat44.TwiceNATSelf, labDrop, 80, 0, "Local external IP without local endpoint → drop sink")
	lb(labExtSelf, 80, servicerenderer.TCP, nat44.TwiceNATSelf, labReject, 80, 0, "empty service's external IP TCP → reject sink, self-twice-NAT")
	lb(labExtSelf, 53, servicerenderer.UDP, nat44.TwiceNATSelf, labReject, 53, 0, "empty service's external IP UDP → reject sink, self-twice-NAT")
	lb(labNode, 30081, servicerenderer.TCP, nat44.TwiceNATSelf, labReject, 30081, 0, "empty service's NodePort TCP → reject sink, self-twice-NAT")
	r.must("dump table 0 (how the reject routes read back)", &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: 0}})
	r.note("debug CLI, show nat44 static mappings:\n%s", l.cli("show nat44 static mappings"))
	probeAll(l, r, "nat44, SNAT configuration", verdictProbes(true))
	probeAll(l, r, "nat44, SNAT configuration", []labProbe{
		{"empty external IP → reject sink, self-twice-NAT", "hv-out", labExtSelf.String(), 80, false},
		{"empty external IP → reject sink, self-twice-NAT", "hv-out", labExtSelf.String(), 53, true},
		{"empty external IP → reject sink, self-twice-NAT", "hv-cl", labExtSelf.String(), 80, false},
		{"empty external IP → reject sink, self-twice-NAT", "hv-cl", labExtSelf.String(), 53, true},
		{"empty NodePort → reject sink, self-twice-NAT", "hv-out", labNode.String(), 30081, false},
		{"NodePort nobody defined (no mapping)", "hv-out", labNode.String(), 30083, false},
		{"ClusterIP with an ICMP_PROHIBIT route", "hv-cl", labProhibit.String(), 80, false},
		{"ClusterIP with an ICMP_PROHIBIT route", "hv-cl", labProhibit.String(), 53, true},
	})
	r.note("debug CLI, show errors:\n%s", l.cli("show errors"))
	r.write(recordsVerdictsDir(t))
}

// verdictProbes is the IPv4 traffic matrix.
func verdictProbes(ext bool) []labProbe {
	ps := []labProbe{
		{"web ClusterIP (sanity)", "hv-cl", labWeb.String(), 80, false},
		{"web ClusterIP (sanity)", "hv-cl", labWeb.String(), 53, true},
		{"empty ClusterIP (reject route)", "hv-cl", labEmpty.String(), 80, false},
		{"empty ClusterIP (reject route)", "hv-cl", labEmpty.String(), 53, true},
		{"unallocated service address (drop route)", "hv-cl", "10.96.0.99", 80, false},
	}
	if !ext {
		return ps
	}
	for _, ns := range []string{"hv-out", "hv-cl"} {
		ps = append(ps,
			labProbe{"web external IP (sanity)", ns, labExtWeb.String(), 80, false},
			labProbe{"web external IP (sanity)", ns, labExtWeb.String(), 53, true},
			labProbe{"empty external IP → reject sink 10.96.0.0", ns, labExtReject.String(), 80, false},
			labProbe{"empty external IP → reject sink 10.96.0.0", ns, labExtReject.String(), 53, true},
			labProbe{"empty external IP → own ClusterIP 10.96.0.11", ns, labExtOwn.String(), 80, false},
			labProbe{"empty external IP → own ClusterIP 10.96.0.11", ns, labExtOwn.String(), 53, true},
			labProbe{"Local external IP → drop sink 10.111.255.255", ns, labExtDrop.String(), 80, false},
		)
	}
	return append(ps, labProbe{"empty ClusterIP from outside", "hv-out", labEmpty.String(), 80, false})
}

func TestLabVerdictsCNAT(t *testing.T) {
	l := newLab(t)
	r := l.record("verdicts-cnat")
	req, err := snatAddressesRequest(labNode, netip.MustParseAddr("fd00:16::1"))
	if err != nil {
		t.Fatal(err)
	}
	r.must("SNAT addresses", req)
	r.must("SNAT policy K8S", &cnatapi.CnatSetSnatPolicy{Policy: cnatapi.CNAT_POLICY_K8S})
	for _, idx := range []uint32{3, 4, 5} {
		for _, tb := range []cnat.SNATTable{cnat.TableIncludeV4, cnat.TableIncludeV6, cnat.TablePod} {
			r.must("pod interface into a SNAT table", snatInterfaceRequest(idx, tb, true))
		}
	}
	for _, p := range []string{"10.1.1.0/24", "10.96.0.0/12", "192.168.16.0/24", "fd00:96::/108", "fd00:1::/48", "fd00:16::/64"} {
		req, _ := excludeRequest(netip.MustParsePrefix(p), true)
		r.must("exclude "+p, req)
	}
	for _, idx := range []uint32{1, 2, 3, 4, 5} {
		for _, f := range cnat.AllFeatures {
			req, _ := featureRequest(idx, f, true)
			r.must("cnat feature", req)
		}
	}
	r.must("service CIDR drop, table 0", routeReq(t, labCIDR, 0, servicerenderer.RouteDrop, 0))
	r.must("service CIDR lookup of table 0 in the pod VRF", routeReq(t, labCIDR, 1, servicerenderer.RouteLookup, 0))
	r.must("IPv6 service CIDR drop, table 0", routeReq(t, labCIDR6, 0, servicerenderer.RouteDrop, 0))
	lookup6 := routeReq(t, labCIDR6, 1, servicerenderer.RouteLookup, 0)
	lookup6.Route.Paths[0].Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	r.must("IPv6 service CIDR lookup of table 0 in the pod VRF (path proto IP6)", lookup6)
	r.must("reject route of the empty service's cluster IP", routeReq(t, netip.PrefixFrom(labEmpty, 32), 0, servicerenderer.RouteReject, 0))
	r.must("reject route of the reject sink (the service CIDR's network address)", routeReq(t, netip.PrefixFrom(labReject, 32), 0, servicerenderer.RouteReject, 0))
	prohibit, _ := pathRequest(netip.PrefixFrom(labProhibit, 32), 0, true, true, false, 0, &release2502)
	r.must("ICMP_PROHIBIT route of a second reject sink (compared with ICMP_UNREACH), the agent's reject request", prohibit)
	r.must("IPv6 reject route /128 in table 0 (an IPv6 cluster IP without endpoints), path proto IP6", rejectRoute6(netip.PrefixFrom(labWeb6, 128), 0))
	p4 := rejectRoute6(netip.PrefixFrom(labWeb6p4, 128), 0)
	p4.Route.Paths[0].Proto = fib_types.FIB_API_PATH_NH_PROTO_IP4
	r.must("IPv6 reject route /128 in table 0 with path proto IP4 (the IPv4 request's shape)", p4)
	r.must("IPv6 reject route /128 of the IPv6 reject sink in table 0", rejectRoute6(netip.PrefixFrom(labReject6, 128), 0))
	tr := func(ip netip.Addr, port uint16, proto servicerenderer.Protocol, to netip.Addr, toPort uint16, realIP bool, note string) {
		req, err := translationRequest(&cnat.Translation{Key: cnat.Key{IP: ip, Port: port, Proto: proto}, RealIP: realIP,
			Paths: []cnat.Path{{IP: to, Port: toPort}}})
		if err != nil {
			t.Fatal(err)
		}
		r.must(note, req)
	}
	tr(labWeb, 80, servicerenderer.TCP, labBackend, 8080, false, "web ClusterIP TCP")
	tr(labWeb, 53, servicerenderer.UDP, labBackend, 5353, false, "web ClusterIP UDP")
	tr(labExtWeb, 80, servicerenderer.TCP, labBackend, 8080, false, "web external IP TCP")
	tr(labExtWeb, 53, servicerenderer.UDP, labBackend, 5353, false, "web external IP UDP")
	tr(labExtReject, 80, servicerenderer.TCP, labReject, 80, false, "empty service's external IP TCP → reject sink (1 path)")
	tr(labExtReject, 53, servicerenderer.UDP, labReject, 53, false, "empty service's external IP UDP → reject sink (1 path)")
	tr(labExtOwn, 80, servicerenderer.TCP, labEmpty, 80, false, "empty service's external IP TCP → its own ClusterIP")
	tr(labExtOwn, 53, servicerenderer.UDP, labEmpty, 53, false, "empty service's external IP UDP → its own ClusterIP")
	tr(labExtDrop, 80, servicerenderer.TCP, labDrop, 80, false, "Local external IP without local endpoint → drop sink (1 path)")
	tr(labExtProhibit, 80, servicerenderer.TCP, labProhibit, 80, false, "empty service's external IP TCP → ICMP_PROHIBIT sink (1 path)")
	tr(labExtProhibit, 53, servicerenderer.UDP, labProhibit, 53, false, "empty service's external IP UDP → ICMP_PROHIBIT sink (1 path)")
	tr(labNode, 30080, servicerenderer.TCP, labDrop, 30080, true, "Local NodePort without local endpoint → drop sink (1 path, is_real_ip)")
	tr(labNode, 30082, servicerenderer.TCP, labReject, 30082, true, "empty service's NodePort → reject sink (1 path, is_real_ip)")
	tr(labExtRej6, 80, servicerenderer.TCP, labReject6, 80, false, "IPv6 external IP TCP → IPv6 reject sink")
	tr(labExtRej6, 53, servicerenderer.UDP, labReject6, 53, false, "IPv6 external IP UDP → IPv6 reject sink")
	r.must("dump", &cnatapi.CnatTranslationDump{})
	r.must("dump IPv4 table 0 (how the reject routes read back)", &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: 0}})
	r.must("dump IPv6 table 0 (how the IPv6 reject routes read back)", &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: 0, IsIP6: true}})
	r.must("dump IPv6 table 1 (the pod VRF's IPv6 lookup)", &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: 1, IsIP6: true}})
	probeAll(l, r, "cnat", verdictProbes(true))
	probeAll(l, r, "cnat", []labProbe{
		{"empty external IP → ICMP_PROHIBIT sink", "hv-out", labExtProhibit.String(), 80, false},
		{"empty external IP → ICMP_PROHIBIT sink", "hv-out", labExtProhibit.String(), 53, true},
		{"empty external IP → ICMP_PROHIBIT sink", "hv-cl", labExtProhibit.String(), 80, false},
		{"empty external IP → ICMP_PROHIBIT sink", "hv-cl", labExtProhibit.String(), 53, true},
		{"ClusterIP with an ICMP_PROHIBIT route", "hv-cl", labProhibit.String(), 80, false},
		{"ClusterIP with an ICMP_PROHIBIT route", "hv-cl", labProhibit.String(), 53, true},
		{"NodePort without local endpoint → drop sink", "hv-out", labNode.String(), 30080, false},
		{"NodePort nobody defined (no translation)", "hv-out", labNode.String(), 30081, false},
		{"empty NodePort → reject sink", "hv-out", labNode.String(), 30082, false},
		{"IPv6 ClusterIP /128 reject route", "hv-out", labWeb6.String(), 80, false},
		{"IPv6 ClusterIP /128 reject route", "hv-out", labWeb6.String(), 53, true},
		{"IPv6 ClusterIP /128 reject route", "hv-c6", labWeb6.String(), 80, false},
		{"IPv6 ClusterIP /128 reject route", "hv-c6", labWeb6.String(), 53, true},
		{"IPv6 ClusterIP /128 reject route, path proto IP4", "hv-out", labWeb6p4.String(), 80, false},
		{"IPv6 ClusterIP /128 reject route, path proto IP4", "hv-c6", labWeb6p4.String(), 80, false},
		{"IPv6 unallocated service address (drop route)", "hv-c6", "fd00:96::99", 80, false},
		{"IPv6 unallocated service address (drop route, path proto IP4)", "hv-out", "fd00:96::99", 80, false},
		{"IPv6 external IP → IPv6 reject sink", "hv-out", labExtRej6.String(), 80, false},
		{"IPv6 external IP → IPv6 reject sink", "hv-out", labExtRej6.String(), 53, true},
		{"IPv6 external IP → IPv6 reject sink", "hv-c6", labExtRej6.String(), 80, false},
	})
	r.note("debug CLI, show errors:\n%s", l.cli("show errors"))
	// Last: an IPv6 ICMP_UNREACH path outside table 0.
	_, err = r.call("IPv6 reject route /128 in table 1 (the pod VRF)", rejectRoute6(netip.PrefixFrom(netip.MustParseAddr("fd00:96::12"), 128), 1))
	r.note("after the IPv6 ICMP_UNREACH route in table 1: error %v, VPP exited: %v", err, l.crashed())
	if !l.crashed() {
		_, err = r.call("show_version after it", &vpe.ShowVersion{})
		r.note("show_version: %v", err)
	}
	r.write(recordsVerdictsDir(t))
}
