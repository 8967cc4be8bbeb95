package cnat

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	sr "contiv.dev/vpp/servicerenderer"
)

func routeStrings(rs []Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

// TestBuildRoutes: kube-proxy's verdicts for cluster-IP traffic no
// translation takes, as the NAT44 renderer builds them, but for a cluster
// IP a translation holds in table 0 (cnat's FIB entry hides a reject
// route there).
func TestBuildRoutes(t *testing.T) {
	// One route per cluster IP: the pod VRF reaches it through its
	// service-CIDR lookup of table 0 (ServiceRoutes).
	const reject = "10.96.0.10/32 vrf=0 reject"
	cases := []struct {
		name   string
		cfg    func(*Config)
		mutate func(*sr.ContivService)
		want   []string
	}{
		{"endpoints: the translated cluster IP gets no reject (cnat's entry in table 0 would hide it)", nil, nil, nil},
		{"no endpoints: reject, and the external IP's reject sink", nil, func(s *sr.ContivService) { s.Ports[0].Backends, s.Ports[0].LocalBackends = nil, nil },
			[]string{"10.96.0.0/32 vrf=0 reject", reject}},
		{"no endpoints, no external IP: the NodePort's reject sink", nil, func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends, s.ExternalIPs = nil, nil, nil
		}, []string{"10.96.0.0/32 vrf=0 reject", reject}},
		{"no endpoints, no external IP, no NodePort: reject alone", nil, func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends, s.ExternalIPs, s.Ports[0].NodePort = nil, nil, nil, 0
		}, []string{reject}},
		{"no endpoints, main VRF not table 0: no route", func(c *Config) { c.MainVRF = 3 },
			func(s *sr.ContivService) { s.Ports[0].Backends, s.Ports[0].LocalBackends = nil, nil }, nil},
		{"Local internal policy, no local endpoint: the service CIDR's drop route drops", nil, func(s *sr.ContivService) {
			s.InternalPolicy, s.Ports[0].LocalBackends = sr.PolicyLocal, nil
		}, nil},
		{"Local internal policy with local endpoints: translated, no reject", nil, func(s *sr.ContivService) { s.InternalPolicy = sr.PolicyLocal },
			nil},
		{"Local internal policy, no endpoint at all: reject", nil, func(s *sr.ContivService) {
			s.InternalPolicy, s.Ports[0].Backends, s.Ports[0].LocalBackends, s.ExternalIPs, s.Ports[0].NodePort = sr.PolicyLocal, nil, nil, nil, 0
		}, []string{reject}},
		{"a UDP port without endpoints beside a translated TCP one: no reject (hidden; dropped, as measured)", nil, func(s *sr.ContivService) {
			s.Ports = append(s.Ports, sr.Port{Name: "dns", Protocol: sr.UDP, Port: 53})
		}, []string{"10.96.0.0/32 vrf=0 reject"}}, // the external IP's UDP port goes to the reject sink
		{"external IPs get no route; IPv6 and out-of-CIDR cluster IPs neither", nil, func(s *sr.ContivService) {
			s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::10"), addr("10.200.0.1"))
			s.Ports[0].Backends, s.Ports[0].LocalBackends, s.ExternalIPs, s.Ports[0].NodePort = nil, nil, nil, 0
		}, []string{reject}},
		{"main VRF not table 0: an ICMP_UNREACH path would crash VPP", func(c *Config) { c.MainVRF = 3 }, nil, nil},
		{"main VRF 3 on a VPP that takes rejects in any table: the reject in the main VRF", func(c *Config) { c.MainVRF, c.RejectAnyTable = 3, true },
			nil, []string{"10.96.0.10/32 vrf=3 reject"}},
		{"main VRF 3, rejects in any table, no endpoints: the reject sink in the main VRF too", func(c *Config) { c.MainVRF, c.RejectAnyTable = 3, true },
			func(s *sr.ContivService) { s.Ports[0].Backends, s.Ports[0].LocalBackends = nil, nil },
			[]string{"10.96.0.0/32 vrf=3 reject", "10.96.0.10/32 vrf=3 reject"}},
		{"pod VRF is table 0: the reject alone", func(c *Config) { c.PodVRF = 0 }, func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends, s.ExternalIPs, s.Ports[0].NodePort = nil, nil, nil, 0
		}, []string{reject}},
		{"no service CIDR", func(c *Config) { c.ServiceCIDRs = nil }, nil, nil},
		{"an IPv6 external IP without IPv6 endpoints: the IPv6 reject sink (IPv6 cluster IPs get no reject)", func(c *Config) {
			c.ServiceCIDRs = append(c.ServiceCIDRs, netip.MustParsePrefix("fd00:96::/108"))
		}, func(s *sr.ContivService) {
			s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::10"))
			s.ExternalIPs = append(s.ExternalIPs, addr("2001:db8::5"))
		}, []string{"fd00:96::/128 vrf=0 reject"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			svc := web()
			if c.mutate != nil {
				c.mutate(svc)
			}
			if got := routeStrings(BuildRoutes(svc, &cfg)); !slices.Equal(got, c.want) {
				t.Errorf("routes %q, want %q", got, c.want)
			}
		})
	}
}

// TestVerdictRoutesApplied: the renderer adds a service's verdict routes
// with it (1 write), keeps them over endpoint changes (no route write),
// a restarted renderer finds them (no write), a stale one (its service
// deleted while the agent was down) goes at the full apply, a foreign
// route outside the service CIDR stays, and deleting the service deletes
// its routes.
func TestVerdictRoutesApplied(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, &MemStore{})
	empty := web()
	empty.Ports[0].Backends, empty.Ports[0].LocalBackends = nil, nil
	_ = r.Resync(resyncData(empty))
	apply(t, r, true)
	// The external IP goes to the reject sink, which gets its route.
	want := []string{"10.96.0.0/32 vrf=0 reject", "10.96.0.10/32 vrf=0 reject"}
	verdicts := func() []string {
		return routeStrings(slices.DeleteFunc(f.state().Routes, func(r Route) bool { return r.Prefix.Bits() != 32 }))
	}
	if got := verdicts(); !slices.Equal(got, want) {
		t.Fatalf("verdict routes %q, want %q", got, want)
	}
	checkState(t, f, wantState(r))

	w := f.Writes()
	if err := r.UpdateService(empty, web()); err != nil {
		t.Fatal(err)
	}
	apply(t, r, false)
	// The three translations; the sink's route deleted, and the cluster
	// IP's, which its translation now hides (BuildRoutes).
	if got := f.Writes() - w; got != 5 {
		t.Errorf("endpoints added: %d writes, want 5", got)
	}
	if got := verdicts(); len(got) != 0 {
		t.Errorf("verdict routes %q beside the translations, want none", got)
	}

	stale := Route{Prefix: netip.MustParsePrefix("10.96.0.99/32"), VRF: 0, Kind: RouteReject}
	foreign := Route{Prefix: netip.MustParsePrefix("10.200.0.1/32"), VRF: 0, Kind: RouteReject}
	f.setRoute(stale, true)
	f.setRoute(foreign, true)
	w = f.Writes()
	again := newRenderer(t, f, &MemStore{})
	_ = again.Resync(resyncData(web()))
	apply(t, again, true)
	if got := f.Writes() - w; got != 1 {
		t.Errorf("restart: %d writes, want 1 (the stale route deleted)", got)
	}
	if got, want := verdicts(), []string{foreign.String()}; !slices.Equal(got, want) {
		t.Errorf("after restart %q, want %q", got, want)
	}
	if got := routeStrings(again.AppliedNode().Verdicts); len(got) != 0 {
		t.Errorf("applied view %q, want none", got)
	}

	// Endpoints gone: the cluster IP's reject is added before its last
	// translation is deleted, the sink's before the external IP's and
	// NodePort's translations go to it.
	n0 := len(f.callLog())
	if err := again.UpdateService(web(), empty); err != nil {
		t.Fatal(err)
	}
	apply(t, again, false)
	if got := verdicts(); !slices.Equal(got, []string{want[0], want[1], foreign.String()}) {
		t.Errorf("endpoints gone: %q", got)
	}
	calls := f.callLog()[n0:]
	if len(calls) != 6 || !strings.Contains(calls[0], "route") || !strings.Contains(calls[1], "route") {
		t.Errorf("endpoints gone: calls %q, want the two reject routes first", calls)
	}

	if err := again.DeleteService(web()); err != nil {
		t.Fatal(err)
	}
	apply(t, again, false)
	if got := verdicts(); !slices.Equal(got, []string{foreign.String()}) {
		t.Errorf("service deleted: %q", got)
	}
}

// TestVerdictRoutesMainVRF: with a main VRF other than 0 on a VPP that
// takes a reject in any table (Config.RejectAnyTable: 26.02 and later),
// the cluster IP's reject and the reject sink's route are in the main VRF,
// the pod VRF's service-CIDR route looks the main VRF up, and the external
// IP without endpoints goes to the sink; a restarted renderer finds them
// all (no write). Without it (VPP 25.02, whose fake refuses a reject
// outside table 0) there is no reject route, both VRFs drop the service
// CIDR and the external IP gets no translation (as before).
func TestVerdictRoutesMainVRF(t *testing.T) {
	for _, anyTable := range []bool{false, true} {
		t.Run(map[bool]string{false: "25.02", true: "26.02+"}[anyTable], func(t *testing.T) {
			cfg := testConfig()
			cfg.MainVRF, cfg.PodVRF, cfg.RejectAnyTable = 3, 1, anyTable
			f := newFake(t, allIfaces...)
			f.rejectAnyTable = anyTable
			newR := func() *Renderer {
				r, err := New(Params{Config: cfg, VPP: f, Store: &MemStore{}, Log: quiet})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			r := newR()
			empty := web()
			empty.Ports[0].Backends, empty.Ports[0].LocalBackends = nil, nil
			_ = r.Resync(resyncData(empty))
			apply(t, r, true)
			want := []string{"10.96.0.0/12 vrf=1", "10.96.0.0/12 vrf=3"}
			if anyTable {
				want = []string{"10.96.0.0/12 vrf=1 lookup table=3", "10.96.0.0/12 vrf=3", "10.96.0.0/32 vrf=3 reject", "10.96.0.10/32 vrf=3 reject"}
			}
			if got := routeStrings(f.state().Routes); !slices.Equal(got, want) {
				t.Errorf("routes %q, want %q", got, want)
			}
			sink := slices.ContainsFunc(r.Desired(), func(tr *Translation) bool {
				return tr.Key.IP == addr("192.168.16.100") && slices.Equal(tr.Paths, []Path{path("10.96.0.0", 80)})
			})
			if sink != anyTable {
				t.Errorf("external IP to the reject sink: %v, want %v", sink, anyTable)
			}
			checkState(t, f, wantState(r))
			w := f.Writes()
			again := newR()
			_ = again.Resync(resyncData(empty))
			apply(t, again, true)
			if got := f.Writes() - w; got != 0 {
				t.Errorf("restart: %d writes, want 0", got)
			}
		})
	}
}

// TestVerdictRoutesShared: two services claiming one cluster IP share its
// routes: they go with the last one.
func TestVerdictRoutesShared(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	a, b := web(), web()
	// Without endpoints (a translated cluster IP gets no reject route).
	a.Ports[0].Backends, a.Ports[0].LocalBackends, a.Ports[0].NodePort = nil, nil, 0
	b.Ports[0].Backends, b.Ports[0].LocalBackends, b.Ports[0].NodePort = nil, nil, 0
	b.ID.Name, b.ExternalIPs = "web2", nil
	_ = r.Resync(resyncData(a, b))
	apply(t, r, true)
	_ = r.DeleteService(a)
	w := f.Writes()
	apply(t, r, false)
	if got := len(r.AppliedNode().Verdicts); got != 1 {
		t.Errorf("%d verdict routes left, want 1 (web2's)", got)
	}
	// web's external IP's translation (its id read back by an update,
	// then deleted) and the reject sink's route.
	if f.Writes()-w != 3 {
		t.Errorf("%d writes, want 3: %q", f.Writes()-w, f.callLog())
	}
	_ = r.DeleteService(b)
	apply(t, r, false)
	if got := r.AppliedNode().Verdicts; len(got) != 0 {
		t.Errorf("verdict routes %v outlived both services", got)
	}
	checkState(t, f, wantState(r))
}

// TestVerdictRouteRefused: a verdict route VPP refuses is a failure of
// that route alone; the rest is applied.
func TestVerdictRouteRefused(t *testing.T) {
	f := newFake(t, allIfaces...)
	bad := Route{Prefix: netip.MustParsePrefix("10.96.0.10/32"), VRF: 0, Kind: RouteReject}
	f.failRoute = map[Route]error{bad: ErrInvalid}
	r := newRenderer(t, f, nil)
	empty := web() // the cluster IP untranslated, so rejected
	empty.Ports[0].Backends, empty.Ports[0].LocalBackends = nil, nil
	_ = r.Resync(resyncData(empty))
	if err := r.Apply(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if fs := r.Failures(); len(fs) != 1 || fs[0].Object != (ObjectID{Kind: ObjectRoute, Route: bad}) || fs[0].Op != OpVerdictRoute {
		t.Fatalf("failures %+v, want the reject route", fs)
	}
	// The external IP's and the NodePort's translations to the reject
	// sink, the service CIDR's two routes and the sink's.
	if s := f.state(); len(s.Trans) != 2 || len(s.Routes) != 3 {
		t.Errorf("the rest not applied: %+v", s)
	}
}

// TestSinkPaths: the one path of an external IP no backend can take.
func TestSinkPaths(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:96::/108")
	none := sr.Port{Protocol: sr.TCP, Port: 80}
	elsewhere := sr.Port{Protocol: sr.TCP, Port: 80, Backends: []sr.Backend{be("10.1.2.5", 8080, false), be("fd00:1:2::5", 8080, false)}}
	cases := []struct {
		name     string
		cidrs    []netip.Prefix
		main     uint32
		anyTable bool
		port     sr.Port
		ip       string
		want     []Path
	}{
		{"no endpoint: the reject sink (first address)", []netip.Prefix{v4}, 0, false, none, "203.0.113.5", []Path{path("10.96.0.0", 80)}},
		{"no endpoint, main VRF 3: no reject route, no sink (as before: routed on)", []netip.Prefix{v4}, 3, false, none, "203.0.113.5", nil},
		{"no endpoint, main VRF 3 on a VPP that takes rejects in any table: the reject sink", []netip.Prefix{v4}, 3, true, none, "203.0.113.5", []Path{path("10.96.0.0", 80)}},
		{"endpoints elsewhere (Local): the drop sink (last address)", []netip.Prefix{v4}, 0, false, elsewhere, "203.0.113.5", []Path{path("10.111.255.255", 80)}},
		{"IPv6, no endpoint: the IPv6 reject sink", []netip.Prefix{v4, v6}, 0, false, none, "2001:db8::5", []Path{path("fd00:96::", 80)}},
		{"IPv6, endpoints elsewhere: no IPv6 drop sink (Kubernetes allocates the last address)", []netip.Prefix{v4, v6}, 0, false, elsewhere, "2001:db8::5", nil},
		{"no service CIDR of the family", []netip.Prefix{v4}, 0, false, none, "2001:db8::5", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ServiceCIDRs, cfg.MainVRF, cfg.RejectAnyTable = c.cidrs, c.main, c.anyTable
			svc := &sr.ContivService{ClusterIPs: []netip.Addr{addr("10.96.0.5"), addr("fd00:96::5")}}
			if got := sinkPaths(&cfg, svc, &c.port, addr(c.ip), 80, true); !slices.Equal(got, c.want) {
				t.Errorf("paths %v, want %v", got, c.want)
			}
			// A NodePort: the reject sink only (ip4-local drops the rest).
			want := c.want
			if c.port.HasBackend(addr(c.ip).Is4()) {
				want = nil
			}
			if got := sinkPaths(&cfg, svc, &c.port, addr(c.ip), 80, false); !slices.Equal(got, want) {
				t.Errorf("NodePort paths %v, want %v", got, want)
			}
			// A service without a cluster IP of the family does not serve it.
			svc.ClusterIPs = slices.DeleteFunc(svc.ClusterIPs, func(a netip.Addr) bool { return a.Is4() == addr(c.ip).Is4() })
			if got := sinkPaths(&cfg, svc, &c.port, addr(c.ip), 80, true); got != nil {
				t.Errorf("family not served: paths %v", got)
			}
		})
	}
}

// TestSinkTranslationsOwned: after a restart, a translation whose only
// path goes to a sink is the renderer's whatever its VIP: one left on the
// external IP of a service deleted while the agent was down is deleted; a
// foreign translation of such an address to a real backend stays.
func TestSinkTranslationsOwned(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, &MemStore{})
	empty := web()
	empty.Ports[0].Backends, empty.Ports[0].LocalBackends = nil, nil
	_ = r.Resync(resyncData(empty))
	apply(t, r, true)
	foreign := Translation{Key: key("198.51.100.7", 80, sr.TCP), Paths: []Path{path("10.1.2.7", 8080)}}
	f.addForeign(foreign)

	again := newRenderer(t, f, &MemStore{})
	_ = again.Resync(resyncData())
	apply(t, again, true)
	trans := f.state().Trans
	if len(trans) != 1 || !slices.Equal(trans[foreign.Key].Paths, foreign.Paths) {
		t.Errorf("translations %v, want the foreign one only", trans)
	}
	if routes := routeStrings(f.state().Routes); slices.Contains(routes, "10.96.0.0/32 vrf=0 reject") {
		t.Errorf("the reject sink's route stayed: %q", routes)
	}
}

// TestOwnedVerdict: which dumped routes are the renderer's verdict routes.
func TestOwnedVerdict(t *testing.T) {
	cfg := testConfig()
	cfg.ServiceCIDRs = append(cfg.ServiceCIDRs, netip.MustParsePrefix("fd00:96::/108"))
	for _, c := range []struct {
		route Route
		want  bool
	}{
		{Route{Prefix: netip.MustParsePrefix("10.96.0.10/32"), Kind: RouteReject}, true},
		{Route{Prefix: netip.MustParsePrefix("10.96.0.0/32"), Kind: RouteReject}, true},
		{Route{Prefix: netip.MustParsePrefix("10.96.0.10/32"), VRF: 1, Kind: RouteLookup}, true},
		{Route{Prefix: netip.MustParsePrefix("fd00:96::/128"), Kind: RouteReject}, true},
		{Route{Prefix: netip.MustParsePrefix("fd00:96::/128"), VRF: 1, Kind: RouteReject}, false},
		{Route{Prefix: netip.MustParsePrefix("fd00:96::10/128"), VRF: 1, Kind: RouteLookup}, false},
		{Route{Prefix: netip.MustParsePrefix("fd00:97::/128"), Kind: RouteReject}, false},
		{Route{Prefix: netip.MustParsePrefix("10.200.0.1/32"), Kind: RouteReject}, false},
	} {
		if got := cfg.ownedVerdict(c.route); got != c.want {
			t.Errorf("%v: owned %v, want %v", c.route, got, c.want)
		}
	}
}
