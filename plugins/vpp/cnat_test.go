package vpp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/fib_types"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// recorded is the request fields of a corpus step, checked to be the
// message named.
func recorded(t *testing.T, scenario string, n int, name string) string {
	t.Helper()
	rec := step(t, loadScenario(t, scenario), n)
	if rec.Request == nil || rec.Request.Name != name {
		t.Fatalf("%s step %d is not a %s", scenario, n, name)
	}
	return string(rec.Request.Fields)
}

// The cnat requests are exactly those the corpus recorded a real VPP 25.02
// accepting (fields read from corpus/cnat*.jsonl).
func TestCNATRequestsAsRecorded(t *testing.T) {
	a := netip.MustParseAddr
	p := func(s string, port uint16) cnat.Path { return cnat.Path{IP: a(s), Port: port} }
	tr := func(vip string, port uint16, paths ...cnat.Path) *cnat.Translation {
		return &cnat.Translation{Key: cnat.Key{IP: a(vip), Port: port, Proto: servicerenderer.TCP}, Paths: paths}
	}
	cases := []struct {
		scenario string
		step     int
		t        *cnat.Translation
	}{
		{"cnat", 1, tr("10.96.0.50", 80, p("10.1.1.11", 8080), p("10.1.1.12", 8080))},
		{"cnat_node", 32, tr("10.96.0.10", 80, p("10.1.1.11", 8080), p("10.1.1.12", 8080), p("10.1.1.13", 8080))},
		{"cnat_node", 33, tr("10.96.0.14", 80, p("10.1.1.31", 8080))},
		{"cnat_ipv6", 5, tr("fd00:96::10", 80, p("fd00:1::11", 8080))},
	}
	np := tr("192.168.16.1", 30080, p("10.1.1.11", 8080), p("10.1.1.12", 8080), p("10.1.1.13", 8080))
	np.RealIP = true
	cases = append(cases, struct {
		scenario string
		step     int
		t        *cnat.Translation
	}{"cnat_node", 34, np})
	mag := tr("10.96.0.50", 80, p("10.1.1.11", 8080), p("10.1.1.12", 8080))
	mag.LB = cnat.LBMaglev
	cases = append(cases, struct {
		scenario string
		step     int
		t        *cnat.Translation
	}{"cnat", 5, mag})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s step %d", c.scenario, c.step), func(t *testing.T) {
			req, err := translationRequest(c.t)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, req, recorded(t, c.scenario, c.step, "cnat_translation_update"))
		})
	}
	t.Run("affinity: maglev + SRC_IP (cnat_affinity step 3)", func(t *testing.T) {
		rec := recorded(t, "cnat_affinity", 3, "cnat_translation_update")
		var want cnatapi.CnatTranslationUpdate
		if err := json.Unmarshal([]byte(rec), &want); err != nil {
			t.Fatal(err)
		}
		x := &cnat.Translation{Key: cnat.Key{IP: a("10.96.2.2"), Port: 80, Proto: servicerenderer.TCP}, LB: cnat.LBMaglev, FlowHash: cnat.FlowHashSrcIP}
		for _, pt := range want.Translation.Paths {
			x.Paths = append(x.Paths, cnat.Path{IP: fromAddress(pt.DstEp.Addr), Port: pt.DstEp.Port})
		}
		req, err := translationRequest(x)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, rec)
	})
	t.Run("0 paths never sent", func(t *testing.T) {
		if _, err := translationRequest(tr("10.96.0.1", 80)); err == nil {
			t.Error("a translation without paths was built")
		}
		if _, err := translationRequest(tr("10.96.0.1", 80, p("fd00::1", 80))); err == nil {
			t.Error("a path of another family was built")
		}
	})
	t.Run("delete (cnat_edge step 22)", func(t *testing.T) {
		sameJSON(t, &cnatapi.CnatTranslationDel{ID: 11}, recorded(t, "cnat_edge", 22, "cnat_translation_del"))
	})
	t.Run("SNAT addresses (cnat_node step 1)", func(t *testing.T) {
		req, err := snatAddressesRequest(a("192.168.16.1"), netip.Addr{})
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, recorded(t, "cnat_node", 1, "cnat_set_snat_addresses"))
		req, err = snatAddressesRequest(a("192.168.16.1"), a("fd00::1"))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, recorded(t, "cnat_snat", 2, "cnat_set_snat_addresses"))
	})
	t.Run("SNAT policy K8S (cnat_node step 3)", func(t *testing.T) {
		sameJSON(t, &cnatapi.CnatSetSnatPolicy{Policy: cnatapi.CnatSnatPolicies(cnat.PolicyK8S)}, recorded(t, "cnat_node", 3, "cnat_set_snat_policy"))
	})
	t.Run("pod interface in INCLUDE_V4 and POD (cnat_node steps 4, 10)", func(t *testing.T) {
		sameJSON(t, snatInterfaceRequest(3, cnat.TableIncludeV4, true), recorded(t, "cnat_node", 4, "cnat_snat_policy_add_del_if"))
		sameJSON(t, snatInterfaceRequest(3, cnat.TablePod, true), recorded(t, "cnat_node", 10, "cnat_snat_policy_add_del_if"))
		sameJSON(t, snatInterfaceRequest(3, cnat.TableIncludeV4, false), recorded(t, "cnat_snat", 24, "cnat_snat_policy_add_del_if"))
	})
	t.Run("exclude prefixes (cnat_node steps 16, 17; cnat_snat 28, 30)", func(t *testing.T) {
		for _, c := range []struct {
			scenario string
			step     int
			prefix   string
			add      bool
		}{{"cnat_node", 16, "10.1.0.0/16", true}, {"cnat_node", 17, "10.96.0.0/12", true}, {"cnat_snat", 28, "fd00::/8", true}, {"cnat_snat", 30, "10.1.0.0/16", false}} {
			req, err := excludeRequest(netip.MustParsePrefix(c.prefix), c.add)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, req, recorded(t, c.scenario, c.step, "cnat_snat_policy_add_del_exclude_pfx"))
		}
	})
	t.Run("features (cnat_node 18, 25; cnat_ipv6 1, 2; cnat_snat 42)", func(t *testing.T) {
		for _, c := range []struct {
			scenario string
			step     int
			idx      uint32
			f        cnat.Feature
			enable   bool
		}{{"cnat_node", 18, 2, cnat.FeatureInput4, true}, {"cnat_node", 25, 2, cnat.FeatureOutput4, true},
			{"cnat_ipv6", 1, 4, cnat.FeatureInput6, true}, {"cnat_ipv6", 2, 4, cnat.FeatureOutput6, true},
			{"cnat_snat", 42, 3, cnat.FeatureInput4, false}} {
			req, err := featureRequest(c.idx, c.f, c.enable)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, req, recorded(t, c.scenario, c.step, "feature_enable_disable"))
		}
		if _, err := featureRequest(2, cnat.FeatureInput4|cnat.FeatureOutput4, true); err == nil {
			t.Error("two features in one request")
		}
	})
}

// dumpOf parses the translation details a corpus dump step replied.
func dumpOf(t *testing.T, scenario string, n int) []cnat.Dumped {
	t.Helper()
	rec := step(t, loadScenario(t, scenario), n)
	var out []cnat.Dumped
	for _, r := range rec.Replies {
		if r.Name != "cnat_translation_details" {
			continue
		}
		var d cnatapi.CnatTranslationDetails
		if err := json.Unmarshal(r.Fields, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, dumpedTranslation(&d))
	}
	return out
}

func TestCNATDumpAsRecorded(t *testing.T) {
	a := netip.MustParseAddr
	d := dumpOf(t, "cnat_node", 41)
	if len(d) != 8 {
		t.Fatalf("%d translations, want 8", len(d))
	}
	want := cnat.Dumped{ID: 2, Key: cnat.Key{IP: a("192.168.16.1"), Port: 30080, Proto: servicerenderer.TCP},
		Paths: []cnat.Path{{IP: a("10.1.1.11"), Port: 8080}, {IP: a("10.1.1.12"), Port: 8080}, {IP: a("10.1.1.13"), Port: 8080}}}
	if !reflect.DeepEqual(d[2], want) {
		t.Errorf("NodePort translation %+v, want %+v", d[2], want)
	}
	// Maglev is dumped; the flow hash is not (cnat_affinity step 4).
	for _, x := range dumpOf(t, "cnat_affinity", 4) {
		if x.IP == a("10.96.2.2") && x.LB != cnat.LBMaglev {
			t.Errorf("maglev translation dumped as lb %d", x.LB)
		}
	}
	// IPv6 VIP and paths (cnat_ipv6 step 6).
	found := false
	for _, x := range dumpOf(t, "cnat_ipv6", 6) {
		if x.IP == a("fd00:96::10") {
			found = true
			if x.ID != 10019 || len(x.Paths) != 1 || x.Paths[0].IP != a("fd00:1::11") {
				t.Errorf("v6 translation %+v", x)
			}
		}
	}
	if !found {
		t.Error("v6 translation not parsed")
	}
	// An interface-based path has no IP (cnat_edge step 23: loop0's).
	for _, x := range dumpOf(t, "cnat_edge", 23) {
		if x.IP == a("10.96.9.8") && (len(x.Paths) != 1 || x.Paths[0].IP.IsValid()) {
			t.Errorf("interface-based path read as %+v", x.Paths)
		}
	}
}

func TestClassifyCNAT(t *testing.T) {
	for _, c := range []struct {
		rv   api.VPPApiError
		want []error
	}{
		{api.NO_SUCH_ENTRY, []error{cnat.ErrNotFound, cnat.ErrInvalid}},
		{api.INVALID_SW_IF_INDEX, []error{cnat.ErrNoInterface, cnat.ErrInvalid}},
		{api.NO_SUCH_FIB, []error{cnat.ErrNoTable, cnat.ErrInvalid}},
		{api.INVALID_VALUE, []error{cnat.ErrInvalid}},
		{1, []error{cnat.ErrInvalid}},
	} {
		err := classifyCNAT(c.rv, "x")
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("retval %d: %v is not %v", c.rv, err, w)
			}
		}
	}
	if err := classifyCNAT(errors.New("broken pipe"), "x"); errors.Is(err, cnat.ErrInvalid) {
		t.Error("a transport error classified invalid")
	}
	// -3 is one sentinel for both renderers (noTable).
	if err := classify(api.NO_SUCH_FIB, "x", false); !errors.Is(err, cnat.ErrNoTable) || !errors.Is(err, nat44.ErrNoTable) || !errors.Is(err, nat44.ErrInvalid) {
		t.Errorf("NAT44's -3: %v, want ErrNoTable and nat44.ErrInvalid", err)
	}
	if len(CNATMessages()) != 18 {
		t.Errorf("%d cnat messages", len(CNATMessages()))
	}
}

// The cnat renderer's drop routes go through the request NAT44 sends and
// come back from the route dump, IPv4 and IPv6; VPP's own 240.0.0.0/4
// comes back too (the renderer tells it apart by prefix).
func TestCNATDropRoutes(t *testing.T) {
	e := setup(t, sim.Options{})
	e.connected(t)
	c := NewCNAT(e.conn, e.ifaces, nil)
	ctx := context.Background()
	v4 := cnat.Route{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1}
	v6 := cnat.Route{Prefix: netip.MustParsePrefix("fd00:96::/108"), VRF: 1}
	// Table 1 is not there until the startup configuration makes it.
	if err := c.AddDelFIBRoute(ctx, v4, true); !errors.Is(err, cnat.ErrNoTable) {
		t.Errorf("route in a missing table: %v, want ErrNoTable", err)
	}
	e.vpp.CreateTable(1)
	for _, r := range []cnat.Route{v4, v6} {
		if err := c.AddDelFIBRoute(ctx, r, true); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.DumpFIBRoutes(ctx, []uint32{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range got {
		s = append(s, r.String())
	}
	if want := []string{"240.0.0.0/4 vrf=1", "224.0.0.0/4 vrf=1", "10.96.0.0/12 vrf=1", "fd00:96::/108 vrf=1"}; !slices.Equal(s, want) {
		t.Errorf("dumped %q, want %q", s, want)
	}
	if got, _ := c.DumpFIBRoutes(ctx, []uint32{1}, false); slices.Contains(got, v6) {
		t.Error("IPv4-only dump returned the IPv6 route")
	}
	if err := c.AddDelFIBRoute(ctx, v6, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.DumpFIBRoutes(ctx, []uint32{1}, true); slices.Contains(got, v6) {
		t.Error("deleted route still dumped")
	}
	req, err := dropRouteRequest(netip.MustParsePrefix("fd00:96::1/108"), 0, true)
	if err != nil || req.Route.Prefix.String() != "fd00:96::/108" || req.Route.Paths[0].Type != fib_types.FIB_API_PATH_TYPE_DROP {
		t.Errorf("IPv6 request %+v, %v", req, err)
	}
	if err := c.AddDelFIBRoute(ctx, cnat.Route{}, true); !errors.Is(err, cnat.ErrInvalid) {
		t.Errorf("invalid prefix: %v", err)
	}
}

// The cnat renderer's verdict routes: a reject in table 0 and a lookup of
// table 0 in the pod VRF go through NAT44's requests and come back from
// the dump as they were sent; a reject outside table 0 is refused as
// invalid and never sent (it crashes VPP 25.02: the simulated VPP would
// crash too).
func TestCNATVerdictRoutes(t *testing.T) {
	e := setup(t, sim.Options{})
	e.connected(t)
	e.vpp.CreateTable(1)
	c := NewCNAT(e.conn, e.ifaces, nil)
	ctx := context.Background()
	host := netip.MustParsePrefix("10.96.0.10/32")
	reject := cnat.Route{Prefix: host, VRF: 0, Kind: cnat.RouteReject}
	lookup := cnat.Route{Prefix: host, VRF: 1, Kind: cnat.RouteLookup, Table: 0}
	for _, r := range []cnat.Route{reject, lookup} {
		if err := c.AddDelFIBRoute(ctx, r, true); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.DumpFIBRoutes(ctx, []uint32{0, 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []cnat.Route{reject, lookup} {
		if !slices.Contains(got, r) {
			t.Errorf("dump %v lacks %v", got, r)
		}
	}
	bad := cnat.Route{Prefix: host, VRF: 1, Kind: cnat.RouteReject}
	if err := c.AddDelFIBRoute(ctx, bad, true); !errors.Is(err, cnat.ErrInvalid) {
		t.Errorf("reject in table 1: %v, want ErrInvalid", err)
	}
	if e.vpp.Crashes() != 0 {
		t.Fatal("VPP crashed: the reject outside table 0 was sent")
	}
	for _, r := range []cnat.Route{lookup, reject} {
		if err := c.AddDelFIBRoute(ctx, r, false); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := c.DumpFIBRoutes(ctx, []uint32{0, 1}, false); slices.Contains(got, reject) || slices.Contains(got, lookup) {
		t.Errorf("deleted routes still dumped: %v", got)
	}
}

// Interface calls report the sw_if_index they addressed (the renderer
// tells a late loss of an older interface by it), and a missing interface
// is ErrNoInterface.
func TestCNATInterfaceCallsReportIndex(t *testing.T) {
	e := setup(t, sim.Options{})
	if _, err := e.vpp.AddInterface("tap0", ""); err != nil {
		t.Fatal(err)
	}
	want, err := e.vpp.AddInterface("tap1", "")
	if err != nil {
		t.Fatal(err)
	}
	e.connected(t)
	c := NewCNAT(e.conn, e.ifaces, nil)
	ctx := context.Background()
	if idx, err := c.EnableDisableFeature(ctx, "tap1", cnat.FeatureInput4, true); err != nil || idx != want {
		t.Errorf("enable: index %d, %v; want %d", idx, err, want)
	}
	if n := e.vpp.CnatFeatureCount("tap1", cnat.FeatureNode(cnat.FeatureInput4)); n != 1 {
		t.Errorf("feature on the arc %d times", n)
	}
	if idx, err := c.AddDelSNATInterface(ctx, "tap1", cnat.TablePod, true); err != nil || idx != want {
		t.Errorf("SNAT table: index %d, %v; want %d", idx, err, want)
	}
	if _, err := c.EnableDisableFeature(ctx, "nope", cnat.FeatureInput4, true); !errors.Is(err, cnat.ErrNoInterface) {
		t.Errorf("missing interface: %v", err)
	}
}
