package sim

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	featureapi "go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"

	cnat2606 "contiv.dev/vpp/internal/vppapi/vpp2606/cnat"
)

// Tests of the simulated VPP at both releases (release.go).

const v2606 = "26.06-simulated"

// TestReleaseMessageTable checks each release's message table with
// govpp's compatibility check: 25.02 knows govpp's cnat_set_snat_policy
// and not 26.06's, 26.06 the reverse and feature_cnat_enable_disable;
// 25.02 lacks feature_is_enabled, 26.06 ip_punt_police; both know the
// messages whose CRC did not change.
func TestReleaseMessageTable(t *testing.T) {
	for _, c := range []struct {
		version            string
		compatible, absent []api.Message
	}{
		{"", []api.Message{&cnat.CnatSetSnatPolicy{}, &cnat.CnatSessionDetails{}, &cnat.CnatTranslationUpdate{}, &nat44_ed.Nat44AddDelLbStaticMapping{}, &ipapi.IPPuntPolice{}},
			[]api.Message{&cnat2606.CnatSetSnatPolicy{}, &cnat2606.CnatSessionDetails{}, &cnat2606.FeatureCnatEnableDisable{}, &featureapi.FeatureIsEnabled{}}},
		{v2606, []api.Message{&cnat2606.CnatSetSnatPolicy{}, &cnat2606.CnatSessionDetails{}, &cnat2606.FeatureCnatEnableDisable{},
			&cnat2606.CnatSetSnatAddressesV2{}, &cnat2606.CnatSnatAddressesDump{}, &cnat.CnatTranslationUpdate{}, &nat44_ed.Nat44AddDelLbStaticMapping{},
			&featureapi.FeatureIsEnabled{}},
			[]api.Message{&cnat.CnatSetSnatPolicy{}, &cnat.CnatSessionDetails{}, &ipapi.IPPuntPolice{}}},
	} {
		t.Run(c.version, func(t *testing.T) {
			_, conn := connect(t, Options{Version: c.version})
			ch, err := conn.NewAPIChannel()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			if err := ch.CheckCompatiblity(c.compatible...); err != nil {
				t.Errorf("compatible: %v", err)
			}
			for _, m := range c.absent {
				var ce *api.CompatibilityError
				if err := ch.CheckCompatiblity(m); !errors.As(err, &ce) {
					t.Errorf("%s_%s: %v, want incompatible", m.GetMessageName(), m.GetCrcString(), err)
				}
			}
		})
	}
}

// TestFeatureCnatEnableDisable: on 26.06 one call puts the 8 cnat nodes
// on an interface's arcs and one takes them off; an unknown interface is
// -2.
func TestFeatureCnatEnableDisable(t *testing.T) {
	v, conn := cnatVPP(t, Options{Version: v2606})
	idx, ok := v.ifaceIndex(corpusInterfaces[0].Name)
	if !ok {
		t.Fatal("no interface")
	}
	name := corpusInterfaces[0].Name
	r := &cnat2606.FeatureCnatEnableDisableReply{}
	if rv := call(t, conn, &cnat2606.FeatureCnatEnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx), EnableDisable: true}, r); rv != 0 {
		t.Fatal(rv)
	}
	for _, f := range cnatFeatures2606 {
		if n := v.CnatFeatureCount(name, f.node); n != 1 {
			t.Errorf("%s on the arc %d times", f.node, n)
		}
	}
	if rv := call(t, conn, &cnat2606.FeatureCnatEnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx)}, r); rv != 0 {
		t.Fatal(rv)
	}
	for _, f := range cnatFeatures2606 {
		if n := v.CnatFeatureCount(name, f.node); n != 0 {
			t.Errorf("%s on the arc %d times after disabling", f.node, n)
		}
	}
	if rv := call(t, conn, &cnat2606.FeatureCnatEnableDisable{SwIfIndex: 999, EnableDisable: true}, r); rv != api.INVALID_SW_IF_INDEX {
		t.Errorf("unknown interface: %v", rv)
	}
}

// TestRejectRouteOutsideTable0: an ICMP_PROHIBIT route in table 1
// crashes VPP 25.02 and is a reject on 26.06.
func TestRejectRouteOutsideTable0(t *testing.T) {
	for _, version := range []string{"", v2606} {
		t.Run(version, func(t *testing.T) {
			v, conn := cnatVPP(t, Options{Version: version})
			req := prohibitRoute(1, "10.96.0.9/32")
			if version == "" {
				if err := conn.Invoke(t.Context(), req, &ipapi.IPRouteAddDelReply{}); err == nil {
					t.Fatal("VPP 25.02 took a reject route in table 1")
				}
				if v.Crashes() != 1 {
					t.Errorf("VPP 25.02 crashed %d times on a reject route in table 1, want 1", v.Crashes())
				}
				return
			}
			if rv := call(t, conn, req, &ipapi.IPRouteAddDelReply{}); rv != 0 {
				t.Fatal(rv)
			}
			if v.Crashes() != 0 {
				t.Errorf("VPP 26.06 crashed on a reject route in table 1: %s", v.LastCrash())
			}
			want := Route{VRF: 1, Prefix: netip.MustParsePrefix("10.96.0.9/32"), Reject: true, Prohibit: true}
			if !slices.Contains(v.Routes(), want) {
				t.Errorf("routes %+v lack %+v", v.Routes(), want)
			}
		})
	}
}

// TestCnatSessionDump2606 dumps the sessions in cnat.api 1.0.0's shape:
// each session twice, forward (client -> VIP) and return (backend ->
// client's source).
func TestCnatSessionDump2606(t *testing.T) {
	v, conn := cnatVPP(t, Options{Version: v2606})
	update(t, conn, ctr("10.96.1.1:80", "10.1.1.11:8080"))
	s, err := v.OpenCnatSession(podClient("10.96.1.1:80"), 40000)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	rc := ch.SendMultiRequest(&cnat2606.CnatSessionDump{})
	var got []cnat2606.Cnat5tuple
	for {
		d := &cnat2606.CnatSessionDetails{}
		last, err := rc.ReceiveReply(d)
		if err != nil {
			t.Fatal(err)
		}
		if last {
			break
		}
		got = append(got, d.Session.Tuple)
	}
	if len(got) != 2 {
		t.Fatalf("%d details, want 2", len(got))
	}
	fwd := got[0]
	if fwd.Addr[0].Un.GetIP4() != s.Client.Addr().As4() || fwd.Port[0] != 40000 || fwd.Addr[1].Un.GetIP4() != s.VIP.Addr().As4() ||
		fwd.Port[1] != 80 || fwd.IPProto != ip_types.IP_API_PROTO_TCP {
		t.Errorf("forward tuple %+v for %+v", fwd, s)
	}
	if got[1].Addr[0].Un.GetIP4() != s.Backend.Addr().As4() || got[1].Port[0] != 8080 {
		t.Errorf("return tuple %+v for %+v", got[1], s)
	}
}

// prohibitRoute is an ip_route_add_del of an ICMP_PROHIBIT path.
func prohibitRoute(vrf uint32, prefix string) *ipapi.IPRouteAddDel {
	p := netip.MustParsePrefix(prefix)
	return &ipapi.IPRouteAddDel{IsAdd: true, Route: ipapi.IPRoute{
		TableID: vrf, Prefix: ip_types.Prefix{Address: toAnyAddr(p.Addr()), Len: uint8(p.Bits())}, NPaths: 1,
		Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT}},
	}}
}
