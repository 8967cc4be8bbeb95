package sim

import (
	"math"
	"net/netip"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// oracleVPP builds a simulated VPP holding a small service setup:
//   - eth0 outside, tap1 (pod) inside and outside, tap2 inside only, eth1
//     with the output feature;
//   - 10.96.0.10:80/TCP load-balanced, self-twice-NAT, to 10.1.1.2 (weight 2)
//     and 10.1.2.3 (weight 1), affinity 10800;
//   - 192.168.16.10:30080/TCP load-balanced, twice-NAT, to the same backends;
//   - 10.96.0.11:53/UDP static to 10.1.1.4:5353;
//   - identity mapping on 192.168.16.10 (address only);
//   - twice-NAT pool 10.1.1.254, forwarding on.
func oracleVPP(t *testing.T) (*VPP, *core.Connection) {
	t.Helper()
	v, conn := connect(t, Options{})
	eth, _ := v.AddInterface("eth0", "")
	tap1, _ := v.AddInterface("tap1", "default/client")
	tap2, _ := v.AddInterface("tap2", "default/web")
	eth1, _ := v.AddInterface("eth1", "")
	enable(t, conn)
	o2i := nat_types.NAT_IS_OUT2IN_ONLY
	svc := lb("10.96.0.10", 80, true, o2i|nat_types.NAT_IS_SELF_TWICE_NAT,
		nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.2.3"), Port: 8080, Probability: 1, VrfID: 1},
		nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.1.2"), Port: 8080, Probability: 2, VrfID: 1})
	svc.Affinity = 10800
	nodePort := lb("192.168.16.10", 30080, true, o2i|nat_types.NAT_IS_TWICE_NAT,
		nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.2.3"), Port: 8080, Probability: 1, VrfID: 1},
		nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.1.2"), Port: 8080, Probability: 2, VrfID: 1})
	dns := &nat44_ed.Nat44AddDelStaticMappingV2{
		IsAdd: true, Flags: o2i, ExternalIPAddress: a4("10.96.0.11"), ExternalPort: 53, Protocol: 17,
		LocalIPAddress: a4("10.1.1.4"), LocalPort: 5353, VrfID: 1, ExternalSwIfIndex: interface_types.InterfaceIndex(noIndex),
	}
	for _, req := range []api.Message{
		svc, nodePort, dns,
		identity("192.168.16.10", 0, true),
		pool("10.1.1.254", true, true),
		feature(eth, false, true),
		feature(tap1, true, true), feature(tap1, false, true),
		feature(tap2, true, true),
		&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth1)},
		&nat44_ed.Nat44ForwardingEnableDisable{Enable: true},
	} {
		reply := api.Message(&nat44_ed.Nat44ForwardingEnableDisableReply{})
		if _, fwd := req.(*nat44_ed.Nat44ForwardingEnableDisable); !fwd {
			reply = replyFor(req)
		}
		if rv := call(t, conn, req, reply); rv != 0 {
			t.Fatalf("%s: %v", req.GetMessageName(), rv)
		}
	}
	return v, conn
}

func TestTranslate(t *testing.T) {
	v, conn := oracleVPP(t)
	backends := func(src1, src2 string) []Reach {
		return []Reach{
			{IP: ip("10.1.1.2"), Port: 8080, VRF: 1, Probability: 2.0 / 3, Src: ip(src1)},
			{IP: ip("10.1.2.3"), Port: 8080, VRF: 1, Probability: 1.0 / 3, Src: ip(src2)},
		}
	}
	tcp, udp := TCP, UDP
	tests := []struct {
		name string
		p    Packet
		want Result
	}{
		{
			name: "cluster IP from a pod: client address kept",
			p:    Packet{Src: ip("10.1.1.7"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "tap1"},
			want: Result{Verdict: Translated, Backends: backends("10.1.1.7", "10.1.1.7"), Affinity: 10800, Tag: "svc"},
		},
		{
			name: "cluster IP from a backend: self-twice-NAT towards itself only",
			p:    Packet{Src: ip("10.1.1.2"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "tap1"},
			want: Result{Verdict: Translated, Backends: backends("10.1.1.254", "10.1.1.2"), Affinity: 10800, Tag: "svc"},
		},
		{
			name: "node port from outside: twice-NAT rewrites the source",
			p:    Packet{Src: ip("8.8.8.8"), Dst: ip("192.168.16.10"), Proto: tcp, DstPort: 30080, Ingress: "eth0"},
			want: Result{Verdict: Translated, Backends: backends("10.1.1.254", "10.1.1.254"), Tag: "svc"},
		},
		{
			name: "node port arriving on the output-feature interface",
			p:    Packet{Src: ip("8.8.8.8"), Dst: ip("192.168.16.10"), Proto: tcp, DstPort: 30080, Ingress: "eth1"},
			want: Result{Verdict: Translated, Backends: backends("10.1.1.254", "10.1.1.254"), Tag: "svc"},
		},
		{
			name: "static mapping",
			p:    Packet{Src: ip("10.1.1.7"), Dst: ip("10.96.0.11"), Proto: udp, DstPort: 53, Ingress: "tap1"},
			want: Result{Verdict: Translated, Backends: []Reach{{IP: ip("10.1.1.4"), Port: 5353, VRF: 1, Probability: 1, Src: ip("10.1.1.7")}}},
		},
		{
			name: "wrong protocol: no mapping, forwarded",
			p:    Packet{Src: ip("10.1.1.7"), Dst: ip("10.96.0.11"), Proto: tcp, DstPort: 53, Ingress: "tap1"},
			want: Result{Verdict: NotTranslated},
		},
		{
			name: "identity mapping",
			p:    Packet{Src: ip("8.8.8.8"), Dst: ip("192.168.16.10"), Proto: tcp, DstPort: 22, Ingress: "eth0"},
			want: Result{Verdict: NotTranslated},
		},
		{
			name: "inside-only ingress",
			p:    Packet{Src: ip("10.1.1.9"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "tap2"},
			want: Result{Verdict: NotTranslated},
		},
		{
			name: "unknown ingress",
			p:    Packet{Src: ip("10.1.1.9"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "nope"},
			want: Result{Verdict: NotTranslated},
		},
	}
	for _, tc := range tests {
		got := v.Translate(tc.p)
		if !sameResult(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		if got.Reason == "" {
			t.Errorf("%s: no reason given", tc.name)
		}
	}

	// Forwarding off: a packet matching nothing is dropped.
	call(t, conn, &nat44_ed.Nat44ForwardingEnableDisable{Enable: false}, &nat44_ed.Nat44ForwardingEnableDisableReply{})
	got := v.Translate(Packet{Src: ip("10.1.1.7"), Dst: ip("10.1.2.3"), Proto: tcp, DstPort: 8080, Ingress: "tap1"})
	if got.Verdict != Dropped {
		t.Errorf("forwarding off: %+v", got)
	}

	// Twice-NAT without a twice-NAT pool address cannot translate.
	call(t, conn, pool("10.1.1.254", false, true), replyFor(pool("10.1.1.254", false, true)))
	got = v.Translate(Packet{Src: ip("8.8.8.8"), Dst: ip("192.168.16.10"), Proto: tcp, DstPort: 30080, Ingress: "eth0"})
	if got.Verdict != Dropped {
		t.Errorf("twice-NAT without pool: %+v", got)
	}
	// Self-twice-NAT still works for clients that are not backends.
	got = v.Translate(Packet{Src: ip("10.1.1.7"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "tap1"})
	if got.Verdict != Translated {
		t.Errorf("self-twice-NAT without pool, foreign client: %+v", got)
	}

	// A disabled plugin translates nothing.
	call(t, conn, &nat44_ed.Nat44EdPluginEnableDisable{Enable: false}, &nat44_ed.Nat44EdPluginEnableDisableReply{})
	got = v.Translate(Packet{Src: ip("10.1.1.7"), Dst: ip("10.96.0.10"), Proto: tcp, DstPort: 80, Ingress: "tap1"})
	if got.Verdict != NotTranslated {
		t.Errorf("plugin disabled: %+v", got)
	}
}

// sameResult compares results, probabilities within rounding, reasons aside.
func sameResult(a, b Result) bool {
	if a.Verdict != b.Verdict || a.Affinity != b.Affinity || a.Tag != b.Tag || len(a.Backends) != len(b.Backends) {
		return false
	}
	for i := range a.Backends {
		x, y := a.Backends[i], b.Backends[i]
		if x.IP != y.IP || x.Port != y.Port || x.VRF != y.VRF || x.Src != y.Src || math.Abs(x.Probability-y.Probability) > 1e-9 {
			return false
		}
	}
	return true
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{NotTranslated: "not translated", Translated: "translated", Dropped: "dropped", Leaked: "leaked"} {
		if v.String() != want {
			t.Errorf("%d: %q", v, v.String())
		}
	}
}
