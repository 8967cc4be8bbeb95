package nat44

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/servicerenderer"
)

// verdictSvc is a TCP :80 service on cluster IP 10.96.0.50 and external
// IP 203.0.113.5 with the given backends (local when in 10.1.1.0/24).
func verdictSvc(internal, external servicerenderer.TrafficPolicy, backends ...string) *servicerenderer.ContivService {
	var bs, local []servicerenderer.Backend
	for _, b := range backends {
		be := servicerenderer.Backend{IP: servicerenderer.IPOf(netip.MustParseAddr(b)), Port: 8080, Ready: true, Serving: true,
			Local: strings.HasPrefix(b, "10.1.1.")}
		bs = append(bs, be)
		if be.Local {
			local = append(local, be)
		}
	}
	return &servicerenderer.ContivService{
		ID:             servicerenderer.ServiceID{Namespace: "default", Name: "v"},
		ClusterIPs:     []netip.Addr{netip.MustParseAddr("10.96.0.50")},
		ExternalIPs:    []netip.Addr{netip.MustParseAddr("203.0.113.5")},
		InternalPolicy: internal,
		ExternalPolicy: external,
		Ports:          []servicerenderer.Port{{Name: "http", Protocol: servicerenderer.TCP, Port: 80, Backends: bs, LocalBackends: local}},
	}
}

func routeLines(rs []Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// TestBuildRoutes: kube-proxy's verdicts for traffic no mapping takes.
func TestBuildRoutes(t *testing.T) {
	const (
		cl, lo = servicerenderer.PolicyCluster, servicerenderer.PolicyLocal
		reject = "10.96.0.50/32 vrf=0 reject" // one route: the pod VRF's service-CIDR lookup reaches it
	)
	main0 := func(c *Config) { c.MainVRF = 0 }
	cases := []struct {
		name string
		cfg  func(*Config)
		svc  *servicerenderer.ContivService
		want []string
	}{
		{name: "endpoints: the cluster IP rejects what no mapping takes (undefined ports)", cfg: main0,
			svc: verdictSvc(cl, cl, "10.1.2.5"), want: []string{reject}},
		{name: "no endpoints: the cluster IP rejects (external IPs get no route)", cfg: main0,
			svc: verdictSvc(cl, cl), want: []string{reject}},
		{name: "Local internal policy, no local endpoint: the service CIDR's drop route drops (no reject)", cfg: main0,
			svc: verdictSvc(lo, cl, "10.1.2.5"), want: nil},
		{name: "Local internal policy with a local endpoint: reject", cfg: main0,
			svc: verdictSvc(lo, cl, "10.1.1.5"), want: []string{reject}},
		{name: "main VRF not table 0: ICMP_UNREACH would crash VPP, no reject routes",
			svc: verdictSvc(cl, cl), want: nil},
		{name: "main VRF not table 0 on a VPP that takes rejects in any table: the reject in the main VRF",
			cfg: func(c *Config) { c.RejectAnyTable = true }, svc: verdictSvc(cl, cl), want: []string{"10.96.0.50/32 vrf=1 reject"}},
		{name: "main VRF 0 on a VPP that takes rejects in any table: as before", cfg: func(c *Config) { c.MainVRF, c.RejectAnyTable = 0, true },
			svc: verdictSvc(cl, cl), want: []string{reject}},
		{name: "no service CIDR: no verdict routes", cfg: func(c *Config) { c.MainVRF = 0; c.ServiceCIDR = netip.Prefix{} },
			svc: verdictSvc(cl, cl), want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			got := routeLines(BuildRoutes(c.svc, testNode(), &cfg))
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("routes %q, want %q", got, c.want)
			}
		})
	}
}

// TestSinkAddress: the last address of the service CIDR.
func TestSinkAddress(t *testing.T) {
	for cidr, want := range map[string]string{"10.96.0.0/12": "10.111.255.255", "10.96.0.0/24": "10.96.0.255", "fd00::/108": "invalid IP"} {
		cfg := Config{ServiceCIDR: netip.MustParsePrefix(cidr)}
		if got := SinkAddress(&cfg).String(); got != want {
			t.Errorf("%s: %s, want %s", cidr, got, want)
		}
	}
}

// TestVerdictRoutesApplied: the renderer programs the verdict routes with
// the service, keeps them over endpoint changes (no route call), removes
// them with the service, and a restarted renderer finds them in place (no
// write).
func TestVerdictRoutesApplied(t *testing.T) {
	cfg := testConfig()
	cfg.MainVRF = 0
	fake := newFakeVPP()
	r := newTestRenderer(t, cfg, fake)
	s := verdictSvc(servicerenderer.PolicyCluster, servicerenderer.PolicyCluster)
	if err := r.Resync(resyncData(s)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	routes := func() []string {
		var out []string
		for _, c := range fake.takeCalls() {
			if strings.Contains(c, "route") {
				out = append(out, c)
			}
		}
		return out
	}
	if got, want := routes(), []string{"add-route 10.96.0.0/12 vrf=0 drop", "add-route 10.96.0.0/12 vrf=2 lookup table=0",
		"add-route 10.96.0.50/32 vrf=0 reject"}; !slices.Equal(got, want) {
		t.Fatalf("first apply: %q, want %q", got, want)
	}
	s2 := verdictSvc(servicerenderer.PolicyCluster, servicerenderer.PolicyCluster, "10.1.2.5")
	if err := r.UpdateService(s, s2); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if got := routes(); len(got) != 0 {
		t.Errorf("endpoints added: %q", got)
	}
	// A restarted renderer: everything is read back, nothing written.
	r2 := newTestRenderer(t, cfg, fake)
	if err := r2.Resync(resyncData(s2)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	if got := fake.takeCalls(); slices.ContainsFunc(got, func(c string) bool { return !strings.HasPrefix(c, "dump") }) {
		t.Errorf("restart wrote: %q", got)
	}
	if err := r2.DeleteService(s2); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, false)
	if got := routes(); !slices.Equal(got, []string{"del-route 10.96.0.50/32 vrf=0 reject"}) {
		t.Errorf("service deleted: %q", got)
	}
}

// TestVerdictRoutesMainVRF: with a main VRF other than 0, the renderer
// makes the verdict routes there only on a VPP that takes a reject in any
// table (Config.RejectAnyTable: 26.02 and later): the cluster IP's /32
// reject in the main VRF, which the pod VRF's service-CIDR route looks up;
// a restarted renderer finds them (no write) and deleting the service
// takes the reject away. Without it (VPP 25.02, whose fake refuses a reject
// outside table 0) both VRFs drop the service CIDR and no reject is sent.
func TestVerdictRoutesMainVRF(t *testing.T) {
	for _, anyTable := range []bool{false, true} {
		t.Run(map[bool]string{false: "25.02", true: "26.02+"}[anyTable], func(t *testing.T) {
			cfg := testConfig() // main VRF 1, pod VRF 2
			cfg.RejectAnyTable = anyTable
			fake := newFakeVPP()
			fake.rejectAnyTable = anyTable
			r := newTestRenderer(t, cfg, fake)
			s := verdictSvc(servicerenderer.PolicyCluster, servicerenderer.PolicyCluster)
			if err := r.Resync(resyncData(s)); err != nil {
				t.Fatal(err)
			}
			mustApply(t, r, true)
			routes := func() []string {
				var out []string
				for _, c := range fake.takeCalls() {
					if strings.Contains(c, "route") {
						out = append(out, c)
					}
				}
				return out
			}
			want := []string{"add-route 10.96.0.0/12 vrf=1 drop", "add-route 10.96.0.0/12 vrf=2 drop"}
			if anyTable {
				want = []string{"add-route 10.96.0.0/12 vrf=1 drop", "add-route 10.96.0.0/12 vrf=2 lookup table=1",
					"add-route 10.96.0.50/32 vrf=1 reject"}
			}
			if got := routes(); !slices.Equal(got, want) {
				t.Fatalf("first apply: %q, want %q", got, want)
			}
			if f := r.Failures(); len(f) != 0 {
				t.Fatalf("failures: %v", f)
			}
			r2 := newTestRenderer(t, cfg, fake)
			if err := r2.Resync(resyncData(s)); err != nil {
				t.Fatal(err)
			}
			mustApply(t, r2, true)
			if got := fake.takeCalls(); slices.ContainsFunc(got, func(c string) bool { return !strings.HasPrefix(c, "dump") }) {
				t.Errorf("restart wrote: %q", got)
			}
			if err := r2.DeleteService(s); err != nil {
				t.Fatal(err)
			}
			mustApply(t, r2, false)
			want = nil
			if anyTable {
				want = []string{"del-route 10.96.0.50/32 vrf=1 reject"}
			}
			if got := routes(); !slices.Equal(got, want) {
				t.Errorf("service deleted: %q, want %q", got, want)
			}
		})
	}
}

// TestDiffUpgradeRoutes: from an earlier version's route set (the pod
// VRF's service-CIDR drop, a /32 lookup of table 0 per cluster IP) to the
// new one: one add that replaces the pod VRF's route first, then the
// deletes, so that pod traffic to a cluster IP meets a reject route at
// every moment.
func TestDiffUpgradeRoutes(t *testing.T) {
	cfg := testConfig()
	cfg.MainVRF = 0
	cidr, host := cfg.ServiceCIDR, netip.MustParsePrefix("10.96.0.50/32")
	route := func(p netip.Prefix, vrf uint32, kind RouteKind) *Route {
		return &Route{RouteKey: RouteKey{Prefix: MustIPv4Prefix(p), VRF: vrf}, Kind: kind}
	}
	state := func(rs ...*Route) *State {
		s := &State{Routes: map[RouteKey]*Route{}}
		for _, r := range rs {
			s.Routes[r.RouteKey] = r
		}
		return s
	}
	desired := state(route(cidr, 0, RouteDrop), route(cidr, cfg.PodVRF, RouteLookup), route(host, 0, RouteReject))
	applied := state(route(cidr, 0, RouteDrop), route(cidr, cfg.PodVRF, RouteDrop), route(host, 0, RouteReject),
		route(host, cfg.PodVRF, RouteLookup))
	var got []string
	for _, op := range Diff(desired, applied, func(string) bool { return true }) {
		got = append(got, op.String())
	}
	want := []string{"add-route 10.96.0.0/12 vrf=2 lookup table=0", "del-route 10.96.0.50/32 vrf=2 lookup table=0"}
	if !slices.Equal(got, want) {
		t.Errorf("ops %q, want %q", got, want)
	}
}

// TestVerdictRoutesPerService: each service keeps its own routes while
// others are set after it (setService builds them in a buffer it reuses):
// deleting one service takes its route, and only its route, away.
func TestVerdictRoutesPerService(t *testing.T) {
	cfg := testConfig()
	cfg.MainVRF = 0
	fake := newFakeVPP()
	r := newTestRenderer(t, cfg, fake)
	a := service("default", "a", 0, "10.96.0.51", port("http", 80, 0))
	b := service("default", "b", 1, "10.96.0.52", port("http", 80, 0))
	if err := r.Resync(resyncData(a)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	if err := r.AddService(b); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteService(a); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	var got []string
	for k, rt := range r.Desired().Routes {
		if k.Prefix.Bits() == 32 {
			got = append(got, rt.String())
		}
	}
	if want := []string{"10.96.0.52/32 vrf=0 reject"}; !slices.Equal(got, want) {
		t.Errorf("reject routes after deleting a: %q, want %q", got, want)
	}
}
