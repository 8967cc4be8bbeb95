package packettrace_test

import (
	"net/netip"
	"reflect"
	"testing"

	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/agent/offline/offlinetest"
	"contiv.dev/vpp/agent/packettrace"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestNAT44AgreesWithOracle holds the trace of an applied state to the
// translation oracle of the simulated VPP the state was rendered into:
// for every mapping of the rendered example cluster, from an outside
// client and from each of its backends, and for addresses without a
// mapping and an interface without NAT.
func TestNAT44AgreesWithOracle(t *testing.T) {
	r := mustRender(t, offline.Params{Objects: offlinetest.ExampleObjects(t), Config: offlinetest.Config("node-1")})
	st := r.Applied
	var packets []sim.Packet
	outside := netip.MustParseAddr("192.0.2.1")
	for _, m := range st.Mappings {
		srcs := []netip.Addr{outside}
		for _, l := range m.Locals {
			srcs = append(srcs, l.IP.Addr())
		}
		for _, src := range srcs {
			packets = append(packets, sim.Packet{Src: src, Dst: m.IP.Addr(), Proto: ip_types.IPProto(m.Proto), DstPort: m.Port, Ingress: r.MainInterface})
		}
		packets = append(packets, sim.Packet{Src: outside, Dst: m.IP.Addr(), Proto: ip_types.IPProto(m.Proto), DstPort: m.Port + 1, Ingress: r.MainInterface})
	}
	packets = append(packets,
		sim.Packet{Src: outside, Dst: netip.MustParseAddr("10.96.99.99"), Proto: sim.UDP, DstPort: 53, Ingress: r.MainInterface},
		sim.Packet{Src: outside, Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080, Ingress: "local0"},
	)
	translated := 0
	for _, p := range packets {
		want := r.Translate(p)
		got, err := packettrace.NAT44(t.Context(), st, p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\ntrace  %+v\noracle %+v", p, got, want)
		}
		if want.Verdict == sim.Translated {
			translated++
		}
	}
	if translated < len(st.Mappings) {
		t.Errorf("only %d of %d packets translated", translated, len(packets))
	}

	// Forwarding off drops what no mapping matches; an empty ingress is an
	// outside interface.
	off := st.Clone()
	off.Global.Forwarding = false
	p := packets[len(packets)-2]
	if res, err := packettrace.NAT44(t.Context(), off, p); err != nil || res.Verdict != sim.Dropped {
		t.Errorf("forwarding off: %+v, %v", res, err)
	}
	p = packets[0]
	want := r.Translate(p)
	p.Ingress = ""
	if res, err := packettrace.NAT44(t.Context(), st, p); err != nil || !reflect.DeepEqual(res, want) {
		t.Errorf("no ingress: %+v, %v; want %+v", res, err, want)
	}
}

// BenchmarkNAT44 measures one trace over the example cluster's state.
func BenchmarkNAT44(b *testing.B) {
	r := mustRender(b, offline.Params{Objects: offlinetest.ExampleObjects(b), Config: offlinetest.Config("node-1")})
	p := sim.Packet{Src: netip.MustParseAddr("10.1.1.4"), Dst: netip.MustParseAddr("10.96.10.30"), Proto: sim.TCP, DstPort: 8080}
	for b.Loop() {
		if res, err := packettrace.NAT44(b.Context(), r.Applied, p); err != nil || res.Verdict != sim.Translated {
			b.Fatal(res, err)
		}
	}
}
