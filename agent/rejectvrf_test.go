package agent

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestRejectsInMainVRF5: with routing.mainVRFID 5, the agent reads the
// release of the VPP it connects to. On the simulated 26.06 (which takes a
// reject route in any table) both renderers make the cluster IP's /32
// reject in table 5 and the pod VRF's service-CIDR route looks table 5 up:
// a pod's packet to an undefined port of the cart ClusterIP is refused. On
// the simulated 25.02 (which crashes on a reject outside table 0) there is
// no reject route and the packet is dropped, as before; neither crashes.
func TestRejectsInMainVRF5(t *testing.T) {
	cluster := netip.MustParseAddr("10.96.10.30")
	reject := sim.Route{VRF: 5, Prefix: netip.PrefixFrom(cluster, 32), Reject: true, Prohibit: true}
	podLookup := sim.Route{VRF: 1, Prefix: netip.MustParsePrefix("10.96.0.0/12"), Lookup: true, LookupVRF: 5}
	for _, c := range []struct {
		name, version, renderer string
		want                    bool // rejects
	}{
		{"nat44 on 25.02", "", contivconf.RendererNAT44, false},
		{"nat44 on 26.06", "26.06-release", contivconf.RendererNAT44, true},
		{"cnat on 25.02", "", contivconf.RendererCNAT, false},
		{"cnat on 26.06", "26.06-release", contivconf.RendererCNAT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			cfg := contivconf.Defaults()
			cfg.Renderer = c.renderer
			cfg.Routing.MainVRFID = 5
			v := sim.New(sim.Options{Version: c.version})
			defer v.Close()
			v.CreateTable(5)
			start(t, testConfigFrom(t, cfg, srv.Endpoint(), t.TempDir()), v, "../deploy/examples/cluster.yaml")
			if n := v.Crashes(); n != 0 {
				t.Fatalf("the simulated VPP crashed %d times: %s", n, v.LastCrash())
			}
			routes := v.Routes()
			if got := slices.Contains(routes, reject); got != c.want {
				t.Errorf("reject route %v in table 5: %v, want %v (routes %v)", reject, got, c.want, routes)
			}
			if got := slices.Contains(routes, podLookup); got != c.want {
				t.Errorf("pod VRF's lookup of table 5 %v: %v, want %v (routes %v)", podLookup, got, c.want, routes)
			}
			if c.want && slices.ContainsFunc(routes, func(r sim.Route) bool { return r.Reject && r.VRF != 5 }) {
				t.Errorf("a reject route outside the main VRF: %v", routes)
			}
			p := sim.Packet{Src: netip.MustParseAddr("10.1.1.77"), Dst: cluster, Proto: sim.TCP, DstPort: 9999,
				Ingress: "tap-shop-cart-5f6d7c8b9-q1r2s"}
			want := sim.Dropped
			if c.want {
				want = sim.Rejected
			}
			var got sim.Verdict
			var why string
			if c.renderer == contivconf.RendererCNAT {
				res := v.CnatTrace(p)
				got, why = res.Verdict, res.Reason
			} else {
				res := v.Trace(p)
				got, why = res.Verdict, res.Reason
			}
			if got != want {
				t.Errorf("pod to an undefined port of the cart ClusterIP: %v (%s), want %v", got, why, want)
			}
		})
	}
}

// TestWarnRejectRelease: a reconnection to a VPP whose release disagrees
// with the renderers about rejects outside table 0 (built on 25.02, now
// 26.06) is logged as an error naming the release, with a main VRF other
// than 0 only (in table 0 every release takes them); an agreeing one is
// not.
func TestWarnRejectRelease(t *testing.T) {
	v := sim.New(sim.Options{Version: "26.06-release"})
	defer v.Close()
	conn := vpp.New(vpp.Config{Adapter: v, Simulated: true, HealthInterval: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn.Start(ctx)
	defer conn.Close()
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mainVRF  uint32
		built    bool
		wantWarn bool
	}{{5, false, true}, {5, true, false}, {0, false, false}} {
		var logs bytes.Buffer
		a := &Agent{conn: conn, log: slog.New(slog.NewTextHandler(&logs, nil)), rejectAnyTable: c.built}
		a.cfg.Routing.MainVRFID = c.mainVRF
		a.warnRejectRelease()
		if got := strings.Contains(logs.String(), "release=26.06"); got != c.wantWarn {
			t.Errorf("main VRF %d, renderers built for rejects in any table %v: warned %v, want %v (%q)", c.mainVRF, c.built, got, c.wantWarn, logs.String())
		}
	}
}
