package vpp

import (
	"context"
	"errors"
	"go.fd.io/govpp/api"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// Tests of the per-release bindings (versions.go) against the simulated
// VPP at each release.

func TestReleaseFor(t *testing.T) {
	for v, want := range map[string]string{
		"25.02-simulated": "25.02", "v25.02-release": "25.02", "25.02": "25.02", "25.02.1-release": "25.02",
		"v26.06-release": "26.06", "26.06-rc0~12-gabcdef": "26.06", " 26.06 ": "26.06",
		"24.10-release": "", "25.06-release": "", "26.066": "", "": "", "vpp 25.02": "",
	} {
		r, err := ReleaseFor(v)
		switch {
		case want == "" && (!errors.Is(err, ErrUnsupportedVersion) || !errors.Is(err, ErrIncompatible) ||
			!strings.Contains(err.Error(), "25.02, 26.06") || !strings.Contains(err.Error(), strings.TrimSpace(v))):
			t.Errorf("%q: %v, %v; want a refusal naming it and the supported releases", v, r, err)
		case want != "" && (err != nil || r.Name != want):
			t.Errorf("%q: %v, %v; want %s", v, r, err, want)
		}
	}
}

// releaseEnv is a client of a simulated VPP of version, with the cnat
// messages checked and an interface tap1; it programs cnat on releases it
// is unsupported on (the bindings are what these tests check).
func releaseEnv(t *testing.T, opts sim.Options) (*env, *CNAT, *syncBuffer) {
	return releaseEnvAllow(t, opts, true)
}

func releaseEnvAllow(t *testing.T, opts sim.Options, allowUnsupported bool) (*env, *CNAT, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	e := &env{vpp: sim.New(opts), events: newEvents()}
	if _, err := e.vpp.AddInterface("tap1", ""); err != nil {
		t.Fatal(err)
	}
	e.vpp.CreateTable(1)
	e.conn = New(Config{Adapter: e.vpp, ExtraMessages: CNATMessages(), OptionalPlugins: []Plugin{ACLPlugin()}, AllowUnsupported: allowUnsupported,
		HealthInterval: 10 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond,
		OnEvent: e.events.add, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); e.conn.Close() })
	e.conn.Start(ctx)
	e.ifaces = NewInterfaces(e.conn, nil)
	e.nat = NewNAT44(e.conn, e.ifaces, nil)
	return e, NewCNAT(e.conn, e.ifaces, nil), logs
}

// TestCNATPerRelease programs cnat on VPP 25.02 and 26.06 through the
// same CNAT: the release is detected at connect (Status.Release), the
// SNAT policy goes with the release's binding, and the features are
// enabled with feature_enable_disable per node on 25.02 and with one
// feature_cnat_enable_disable (8 nodes) on 26.06.
func TestCNATPerRelease(t *testing.T) {
	for _, c := range []struct {
		version, release, featureMsg, snatMsg string
		calls                                 int
		nodes                                 []string
	}{
		{"25.02-simulated", "25.02", "feature_enable_disable", "cnat_set_snat_addresses", 2, []string{"cnat-input-ip4", "cnat-output-ip4"}},
		{"v26.06-release", "26.06", "feature_cnat_enable_disable", "cnat_set_snat_addresses_v2", 1,
			[]string{"cnat-input-ip4", "cnat-lookup-ip4", "cnat-output-ip4", "cnat-writeback-ip4", "cnat-input-ip6", "cnat-lookup-ip6", "cnat-output-ip6", "cnat-writeback-ip6"}},
	} {
		t.Run(c.release, func(t *testing.T) {
			e, cn, _ := releaseEnv(t, sim.Options{Version: c.version})
			e.connected(t)
			ctx := context.Background()
			if st := e.conn.Status(); st.Release != c.release || st.Version != c.version {
				t.Errorf("status %+v", st)
			}
			// The SNAT addresses first: 26.06 keeps the policy in their entry.
			if err := cn.SetSNATAddresses(ctx, netip.MustParseAddr("192.168.16.1"), netip.Addr{}); err != nil {
				t.Fatal(err)
			}
			if err := cn.SetSNATPolicy(ctx, cnat.PolicyK8S); err != nil {
				t.Fatal(err)
			}
			if n := e.vpp.Calls(c.snatMsg); n != 1 {
				t.Errorf("%d %s calls, want 1", n, c.snatMsg)
			}
			if p := e.vpp.CnatSnatState().Policy; uint8(p) != uint8(cnat.PolicyK8S) {
				t.Errorf("policy %d", p)
			}
			for _, f := range []cnat.Feature{cnat.FeatureInput4, cnat.FeatureOutput4} {
				if _, err := cn.EnableDisableFeature(ctx, "tap1", f, true); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range c.nodes {
				if got := e.vpp.CnatFeatureCount("tap1", n); got != 1 {
					t.Errorf("%s on the arc %d times", n, got)
				}
			}
			if n := e.vpp.Calls(c.featureMsg); n != c.calls {
				t.Errorf("%d %s calls", n, c.featureMsg)
			}
			for _, f := range slices.Backward([]cnat.Feature{cnat.FeatureInput4, cnat.FeatureOutput4}) {
				if _, err := cn.EnableDisableFeature(ctx, "tap1", f, false); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range c.nodes {
				if got := e.vpp.CnatFeatureCount("tap1", n); got != 0 {
					t.Errorf("%s on the arc %d times after disabling", n, got)
				}
			}
		})
	}
}

// TestRejectRoutePerRelease: a reject route in table 1 is refused before
// sending on 25.02 (it crashes that VPP) and added on 26.06.
func TestRejectRoutePerRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		sent    bool
	}{{"25.02-simulated", false}, {"26.06-simulated", true}} {
		t.Run(c.version, func(t *testing.T) {
			e, cn, _ := releaseEnv(t, sim.Options{Version: c.version})
			e.connected(t)
			r := cnat.Route{Prefix: netip.MustParsePrefix("10.96.0.9/32"), VRF: 1, Kind: cnat.RouteReject}
			err := cn.AddDelFIBRoute(context.Background(), r, true)
			if c.sent != (err == nil) || !c.sent && !errors.Is(err, cnat.ErrInvalid) {
				t.Fatalf("reject route in table 1: %v", err)
			}
			if n := e.vpp.Calls("ip_route_add_del"); n != map[bool]int{true: 1}[c.sent] {
				t.Errorf("%d routes sent", n)
			}
			if c.sent && !slices.ContainsFunc(e.vpp.Routes(), func(rt sim.Route) bool { return rt.VRF == 1 && rt.Reject }) {
				t.Errorf("routes %+v", e.vpp.Routes())
			}
		})
	}
}

// TestUnsupportedVersionRefused: a VPP of a release without bindings is
// refused loudly: WaitConnected fails at once, an Incompatible event, the
// status's lastError and the log name the version and the supported
// releases, and calls fail as not connected.
func TestUnsupportedVersionRefused(t *testing.T) {
	e, cn, logs := releaseEnv(t, sim.Options{Version: "24.10-release"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.conn.WaitConnected(ctx)
	if !errors.Is(err, ErrUnsupportedVersion) || !errors.Is(err, ErrIncompatible) {
		t.Fatalf("WaitConnected: %v", err)
	}
	if ev := e.events.next(t); ev.Kind != Incompatible || !errors.Is(ev.Err, ErrUnsupportedVersion) {
		t.Errorf("event %+v", ev)
	}
	st := e.conn.Status()
	if st.Connected || !strings.Contains(st.LastError, `"24.10-release"`) || !strings.Contains(st.LastError, "25.02, 26.06") {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(logs.String(), "24.10-release") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("log %s", logs.String())
	}
	if err := cn.SetSNATPolicy(context.Background(), cnat.PolicyK8S); !errors.Is(err, ErrNotConnected) {
		t.Errorf("call on a refused VPP: %v", err)
	}
}

// unsupportedCNAT marks release r as one the cnat renderer does not work
// on, for the test: no release is so marked today (VPP 26.06's mark was
// lifted), but the refusal stays for the next one found.
func unsupportedCNAT(t *testing.T, r *Release, why string) {
	t.Helper()
	old := r.cnatUnsupported
	r.cnatUnsupported = why
	t.Cleanup(func() { r.cnatUnsupported = old })
}

// TestCNATRefusedWhereUnsupported: the cnat renderer on a release where
// it is known not to work is refused as an unknown release is (not
// connected, lastError naming the release, the reason and nat44) unless
// the configuration allows it; nat44 on the same VPP connects.
func TestCNATRefusedWhereUnsupported(t *testing.T) {
	unsupportedCNAT(t, &release2606, "external traffic to a backend on another node gets no answer")
	e, cn, _ := releaseEnvAllow(t, sim.Options{Version: "26.06-release"}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.conn.WaitConnected(ctx)
	if !errors.Is(err, ErrUnsupportedRenderer) || !errors.Is(err, ErrIncompatible) {
		t.Fatalf("WaitConnected: %v", err)
	}
	st := e.conn.Status()
	for _, want := range []string{"26.06-release", "cnat renderer does not work", "another node", "renderer nat44"} {
		if st.Connected || !strings.Contains(st.LastError, want) {
			t.Errorf("status %+v lacks %q", st, want)
		}
	}
	if err := cn.SetSNATPolicy(context.Background(), cnat.PolicyK8S); !errors.Is(err, ErrNotConnected) {
		t.Errorf("call on a refused VPP: %v", err)
	}
	// nat44 on 26.06, and cnat on 25.02, connect.
	for _, c := range []struct {
		version string
		extra   []api.Message
	}{{"26.06-release", nil}, {"25.02-release", CNATMessages()}} {
		conn := New(Config{Adapter: sim.New(sim.Options{Version: c.version}), ExtraMessages: c.extra, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond})
		conn.Start(ctx)
		if err := conn.WaitConnected(ctx); err != nil {
			t.Errorf("VPP %s, cnat %v: %v", c.version, c.extra != nil, err)
		}
		conn.Close()
	}
}

// TestCNATOn2606Supported: the cnat renderer on VPP 26.06 connects
// without vpp.allowUnsupported (every real-VPP scenario passes there,
// docs/vpp-versions.md).
func TestCNATOn2606Supported(t *testing.T) {
	e, _, _ := releaseEnvAllow(t, sim.Options{Version: "26.06-release"}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.conn.WaitConnected(ctx); err != nil {
		t.Fatalf("cnat on VPP 26.06 without allowUnsupported: %v", err)
	}
	if st := e.conn.Status(); st.Release != "26.06" {
		t.Errorf("release %q, want 26.06", st.Release)
	}
}

// TestReleaseCRCsChecked: a VPP 26.06 lacking a message of its release's
// bindings (feature_cnat_enable_disable) is incompatible, named with
// the 26.06 CRC: the check uses the release's bindings.
func TestReleaseCRCsChecked(t *testing.T) {
	e, _, _ := releaseEnv(t, sim.Options{Version: "26.06-simulated", Without: []string{"feature_cnat_enable_disable"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.conn.WaitConnected(ctx)
	if !errors.Is(err, ErrIncompatible) || errors.Is(err, ErrUnsupportedVersion) ||
		!strings.Contains(err.Error(), "feature_cnat_enable_disable_5501adee") || !strings.Contains(err.Error(), "VPP 26.06's bindings") {
		t.Fatalf("WaitConnected: %v", err)
	}
}

// TestPipelineMixesBindings keeps VPP 26.06's feature_cnat_enable_disable
// (its own binding) in flight with govpp-bound calls on one pipeline:
// every answer is read as its call's (govpp resolves an answer in the
// binding of the stream's last request, so the pipeline reads the
// answers of one binding before sending another's).
func TestPipelineMixesBindings(t *testing.T) {
	ctx := context.Background()
	v, _, n := socketEnv(t, sim.Options{ServiceTime: time.Millisecond, Version: "26.06-simulated"}, Config{ExtraMessages: CNATMessages()})
	if _, err := v.AddInterface("tap1", ""); err != nil {
		t.Fatal(err)
	}
	if err := n.ifaces.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	c := NewCNAT(n.conn, n.ifaces, nil)
	// 26.06 keeps the interface tables in the entry the SNAT addresses make.
	if err := c.SetSNATAddresses(ctx, netip.MustParseAddr("192.168.16.1"), netip.Addr{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ops := []cnat.Op{
		{Kind: cnat.OpSNATInterface, Interface: "tap1", Table: cnat.TablePod, Add: true},
		{Kind: cnat.OpFeature, Interface: "tap1", Feature: cnat.FeatureInput4, Add: true},
		{Kind: cnat.OpFeature, Interface: "tap1", Feature: cnat.FeatureOutput4, Add: true},
		{Kind: cnat.OpSNATInterface, Interface: "tap1", Table: cnat.TableIncludeV4, Add: true},
		{Kind: cnat.OpRoute, Route: cnat.Route{Prefix: netip.MustParsePrefix("10.96.0.0/12"), Kind: cnat.RouteDrop}, Add: true},
	}
	for i := range ops {
		if err := p.Send(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ops {
		if _, err := p.Recv(); err != nil {
			t.Errorf("%d %v: %v", i, ops[i].Kind, err)
		}
	}
	if v.CnatFeatureCount("tap1", "cnat-writeback-ip4") != 1 || len(v.CnatSnatState().Pod) != 1 || len(v.CnatSnatState().IncludeV4) != 1 {
		t.Errorf("features %d, SNAT %+v", v.CnatFeatureCount("tap1", "cnat-writeback-ip4"), v.CnatSnatState())
	}
}
