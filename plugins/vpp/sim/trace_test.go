package sim

import (
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	ip_api "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
)

// The lines of the working configuration of FACTS.md §4 for one external
// IP, which traceVPP adds on request.
type extLines struct{ identity, pool bool }

// traceVPP builds a node under the SNAT configuration of FACTS.md §4:
//   - eth0, the main NIC (VRF 0), with the output feature; tap1 (a client
//     pod) and tap2 (a backend pod), VRF 1, inside and outside;
//   - node IP 192.168.16.1 in the NAT pool, identity mappings on it in
//     VRF 0 and 1; twice-NAT pool 10.1.1.254; forwarding on;
//   - NodePort 192.168.16.1:30080 (twice-NAT), ClusterIP 10.96.0.10:80
//     (self-twice-NAT) and ExternalIP 20.20.20.20:80, each load-balanced
//     to 10.1.1.2:8080 and 10.1.1.3:8080 in VRF 1;
//   - 20.20.20.21:80 to 10.1.1.2:8080 (VRF 1) and the host-network
//     backend 192.168.16.2:8080 (VRF 0);
//   - for 20.20.20.20 the lines ext asks for: the identity mapping in the
//     pod VRF, the pool address in the unused tenant VRF 5.
func traceVPP(t *testing.T, ext extLines) (*VPP, *core.Connection) {
	t.Helper()
	v, conn := connect(t, Options{})
	eth, _ := v.AddInterface("eth0", "")
	tap1, _ := v.AddInterface("tap1", "default/client")
	tap2, _ := v.AddInterface("tap2", "default/web")
	for _, name := range []string{"tap1", "tap2"} {
		if err := v.SetInterfaceVRF(name, 1); err != nil {
			t.Fatal(err)
		}
	}
	enable(t, conn)
	o2i := nat_types.NAT_IS_OUT2IN_ONLY
	backends := []nat44_ed.Nat44LbAddrPort{lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1)}
	host := nat44_ed.Nat44LbAddrPort{Addr: a4("192.168.16.2"), Port: 8080, Probability: 1}
	reqs := []api.Message{
		pool("192.168.16.1", true, false),
		pool("10.1.1.254", true, true),
		&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)},
		feature(tap1, true, true), feature(tap1, false, true),
		feature(tap2, true, true), feature(tap2, false, true),
		identity("192.168.16.1", 0, true), identity("192.168.16.1", 1, true),
		&nat44_ed.Nat44ForwardingEnableDisable{Enable: true},
		lb("192.168.16.1", 30080, true, o2i|nat_types.NAT_IS_TWICE_NAT, backends...),
		lb("10.96.0.10", 80, true, o2i|nat_types.NAT_IS_SELF_TWICE_NAT, backends...),
		lb("20.20.20.20", 80, true, o2i|nat_types.NAT_IS_SELF_TWICE_NAT, backends...),
		lb("20.20.20.21", 80, true, o2i, backends[0], host),
	}
	if ext.identity {
		reqs = append(reqs, identity("20.20.20.20", 1, true))
	}
	if ext.pool {
		r := pool("20.20.20.20", true, false)
		r.VrfID = 5
		reqs = append(reqs, r)
	}
	send(t, v, conn, reqs...)
	return v, conn
}

func TestTrace(t *testing.T) {
	outside := func(dst string, port uint16) Packet {
		return Packet{Src: ip("8.8.8.8"), Dst: ip(dst), Proto: 6, DstPort: port, Ingress: "eth0"}
	}
	pod := func(dst string, port uint16) Packet {
		return Packet{Src: ip("10.1.2.7"), Dst: ip(dst), Proto: 6, DstPort: port, Ingress: "tap1"}
	}
	none, idOnly, poolOnly, both := extLines{}, extLines{identity: true}, extLines{pool: true}, extLines{true, true}
	tests := []struct {
		name    string
		ext     extLines
		p       Packet
		verdict Verdict
		reply   Verdict // for translated packets
		reason  string  // in Reason, or in ReplyReason for translated packets
	}{
		{"ExternalIP from outside, no extra line", none, outside("20.20.20.20", 80), Translated, Dropped, "reply dropped by the output feature"},
		{"ExternalIP from outside, pool line only", poolOnly, outside("20.20.20.20", 80), Translated, Dropped, "VRF 1, the session is keyed in VRF 0"},
		{"ExternalIP from outside, identity line", idOnly, outside("20.20.20.20", 80), Translated, Translated, "identity mapping of 20.20.20.20 in VRF 1"},
		{"ExternalIP from outside, working configuration", both, outside("20.20.20.20", 80), Translated, Translated, "passes the output feature"},
		{"ExternalIP from a pod, identity line only", idOnly, pod("20.20.20.20", 80), NotTranslated, 0, "address-only identity mapping of 20.20.20.20 is matched before the port mapping"},
		{"ExternalIP from a pod, working configuration", both, pod("20.20.20.20", 80), Translated, Translated, "translates the reply back"},
		{"ExternalIP from a pod, no extra line", none, pod("20.20.20.20", 80), Translated, Translated, "translates the reply back"},
		{"NodePort from outside", both, outside("192.168.16.1", 30080), Translated, Translated, "identity mapping of 192.168.16.1 in VRF 1"},
		{"NodePort from a pod (the node IP is a pool address)", both, pod("192.168.16.1", 30080), Translated, Translated, "translates the reply back"},
		{"ClusterIP from a pod", both, pod("10.96.0.10", 80), Translated, Translated, "translates the reply back"},
		{"one backend in another VRF than the main NIC", both, outside("20.20.20.21", 80), Translated, Dropped, "reply dropped"},
		{"unmapped ClusterIP from a pod", both, pod("10.96.0.99", 80), Leaked, 0, "leaking out of eth0 SNATed to 192.168.16.1"},
		{"unmapped ClusterIP from outside", both, outside("10.96.0.99", 80), Leaked, 0, "leaking out of eth0"},
		{"node IP, other port: identity", both, outside("192.168.16.1", 22), NotTranslated, 0, "identity mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := traceVPP(t, tc.ext)
			got := v.Trace(tc.p)
			reason := got.Reason
			if got.Verdict == Translated {
				reason = got.ReplyReason
			}
			if got.Verdict != tc.verdict || got.Reply != tc.reply || !strings.Contains(reason, tc.reason) {
				t.Errorf("got %v, reply %v (%q / %q), want %v, reply %v, reason with %q",
					got.Verdict, got.Reply, got.Reason, got.ReplyReason, tc.verdict, tc.reply, tc.reason)
			}
			// Translate answers the mapping lookup alone, as before.
			tr := v.Translate(tc.p)
			if tr.Reply != 0 || tr.ReplyReason != "" || tr.Verdict == Leaked {
				t.Errorf("Translate filled Trace's fields: %+v", tr)
			}
			for _, b := range tr.Backends {
				if b.Reply != 0 {
					t.Errorf("Translate filled a backend's reply: %+v", b)
				}
			}
		})
	}
}

// TestTraceReplyPerBackend: each backend's reply is judged by its own VRF.
func TestTraceReplyPerBackend(t *testing.T) {
	v, _ := traceVPP(t, extLines{})
	got := v.Trace(Packet{Src: ip("8.8.8.8"), Dst: ip("20.20.20.21"), Proto: 6, DstPort: 80, Ingress: "eth0"})
	want := map[string]Verdict{"10.1.1.2": Dropped, "192.168.16.2": Translated}
	if len(got.Backends) != 2 {
		t.Fatalf("backends %+v", got.Backends)
	}
	for _, b := range got.Backends {
		if b.Reply != want[b.IP.String()] {
			t.Errorf("backend %v (VRF %d): reply %v, want %v", b.IP, b.VRF, b.Reply, want[b.IP.String()])
		}
	}
}

// TestTraceLeak: the leak needs the SNAT configuration, and goes to a
// pool address usable from the packet's VRF.
func TestTraceLeak(t *testing.T) {
	p := Packet{Src: ip("10.1.2.7"), Dst: ip("10.96.0.99"), Proto: 6, DstPort: 80, Ingress: "tap1"}
	t.Run("tenant-VRF pool address first", func(t *testing.T) {
		v, conn := connect(t, Options{})
		eth, _ := v.AddInterface("eth0", "")
		tap1, _ := v.AddInterface("tap1", "")
		enable(t, conn)
		ext := pool("20.20.20.20", true, false)
		ext.VrfID = 5
		send(t, v, conn, ext, pool("192.168.16.1", true, false),
			feature(tap1, true, true), feature(tap1, false, true),
			&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
		if got := v.Trace(p); got.Verdict != NotTranslated {
			t.Errorf("without the output feature: %+v", got)
		}
		send(t, v, conn, &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)})
		got := v.Trace(p)
		if got.Verdict != Leaked || got.SNAT != ip("192.168.16.1") || got.Egress != "eth0" {
			t.Errorf("with the output feature: %+v", got)
		}
		send(t, v, conn, &nat44_ed.Nat44ForwardingEnableDisable{Enable: false})
		if got := v.Trace(p); got.Verdict != Dropped || !strings.Contains(got.Reason, "forwarding off") {
			t.Errorf("forwarding off: %+v", got)
		}
	})
	t.Run("no pool address", func(t *testing.T) {
		v, conn := connect(t, Options{})
		eth, _ := v.AddInterface("eth0", "")
		tap1, _ := v.AddInterface("tap1", "")
		enable(t, conn)
		send(t, v, conn, feature(tap1, true, true), feature(tap1, false, true),
			&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)},
			&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
		if got := v.Trace(p); got.Verdict != NotTranslated {
			t.Errorf("without a pool address: %+v", got)
		}
	})
}

// TestTraceServiceRoute: a DROP route for the service CIDR in the ingress
// interface's VRF drops an unmapped service address; mapped traffic is
// translated before the FIB lookup.
func TestTraceServiceRoute(t *testing.T) {
	v, conn := traceVPP(t, extLines{true, true})
	prefix, err := ip_types.ParsePrefix("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	route := func(vrf uint32) *ip_api.IPRouteAddDel {
		return &ip_api.IPRouteAddDel{IsAdd: true, Route: ip_api.IPRoute{
			TableID: vrf,
			Prefix:  prefix,
			Paths:   []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_DROP}},
		}}
	}
	r := route(1)
	if _, err := v.GetMsgID(r.GetMessageName(), r.GetCrcString()); err != nil {
		t.Skipf("the simulator has no FIB routes yet: %v", err)
	}
	pod := Packet{Src: ip("10.1.2.7"), Dst: ip("10.96.0.99"), Proto: 6, DstPort: 80, Ingress: "tap1"}
	outside := Packet{Src: ip("8.8.8.8"), Dst: ip("10.96.0.99"), Proto: 6, DstPort: 80, Ingress: "eth0"}
	send(t, v, conn, r)
	if got := v.Trace(pod); got.Verdict != Dropped || !strings.Contains(got.Reason, "service-CIDR route") {
		t.Errorf("from a pod, route in VRF 1: %+v", got)
	}
	if got := v.Trace(outside); got.Verdict != Leaked {
		t.Errorf("from outside, route in VRF 1 only: %+v", got)
	}
	send(t, v, conn, route(0))
	if got := v.Trace(outside); got.Verdict != Dropped {
		t.Errorf("from outside, route in VRF 0: %+v", got)
	}
	mapped := pod
	mapped.Dst = ip("10.96.0.10")
	if got := v.Trace(mapped); got.Verdict != Translated || got.Reply != Translated {
		t.Errorf("mapped ClusterIP under the route: %+v", got)
	}
}

func TestSetInterfaceVRF(t *testing.T) {
	v := New(Options{})
	if err := v.SetInterfaceVRF("nope", 1); err == nil {
		t.Errorf("VRF set on an unknown interface")
	}
}
