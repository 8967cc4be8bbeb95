package cnat

import (
	"context"
	"net/netip"
	"slices"
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
// translation takes, as the NAT44 renderer builds them.
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
		{"endpoints: the cluster IP rejects what no translation takes (undefined ports)", nil, nil, []string{reject}},
		{"no endpoints: reject", nil, func(s *sr.ContivService) { s.Ports[0].Backends, s.Ports[0].LocalBackends = nil, nil },
			[]string{reject}},
		{"Local internal policy, no local endpoint: the service CIDR's drop route drops", nil, func(s *sr.ContivService) {
			s.InternalPolicy, s.Ports[0].LocalBackends = sr.PolicyLocal, nil
		}, nil},
		{"Local internal policy with local endpoints: reject", nil, func(s *sr.ContivService) { s.InternalPolicy = sr.PolicyLocal },
			[]string{reject}},
		{"external IPs get no route; IPv6 and out-of-CIDR cluster IPs neither", nil, func(s *sr.ContivService) {
			s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::10"), addr("10.200.0.1"))
		}, []string{reject}},
		{"main VRF not table 0: an ICMP_UNREACH path would crash VPP", func(c *Config) { c.MainVRF = 3 }, nil, nil},
		{"pod VRF is table 0: the reject alone", func(c *Config) { c.PodVRF = 0 }, nil, []string{reject}},
		{"no service CIDR", func(c *Config) { c.ServiceCIDRs = nil }, nil, nil},
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
	want := []string{"10.96.0.10/32 vrf=0 reject"}
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
	if got := f.Writes() - w; got != 3 { // the three translations
		t.Errorf("endpoints added: %d writes, want 3", got)
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
	if got, want := verdicts(), []string{want[0], foreign.String()}; !slices.Equal(got, want) {
		t.Errorf("after restart %q, want %q", got, want)
	}
	if got := routeStrings(again.AppliedNode().Verdicts); !slices.Equal(got, want) {
		t.Errorf("applied view %q, want %q", got, want)
	}

	if err := again.DeleteService(web()); err != nil {
		t.Fatal(err)
	}
	apply(t, again, false)
	if got := verdicts(); !slices.Equal(got, []string{foreign.String()}) {
		t.Errorf("service deleted: %q", got)
	}
}

// TestVerdictRoutesShared: two services claiming one cluster IP share its
// routes: they go with the last one.
func TestVerdictRoutesShared(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	a, b := web(), web()
	b.ID.Name, b.ExternalIPs = "web2", nil
	_ = r.Resync(resyncData(a, b))
	apply(t, r, true)
	_ = r.DeleteService(a)
	w := f.Writes()
	apply(t, r, false)
	if got := len(r.AppliedNode().Verdicts); got != 1 {
		t.Errorf("%d verdict routes left, want 1 (web2's)", got)
	}
	if f.Writes()-w != 2 { // web's external IP and NodePort translations
		t.Errorf("%d writes, want 2", f.Writes()-w)
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
	_ = r.Resync(resyncData(web()))
	if err := r.Apply(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if fs := r.Failures(); len(fs) != 1 || fs[0].Object != (ObjectID{Kind: ObjectRoute, Route: bad}) || fs[0].Op != OpVerdictRoute {
		t.Fatalf("failures %+v, want the reject route", fs)
	}
	if s := f.state(); len(s.Trans) != 3 || len(s.Routes) != 2 {
		t.Errorf("the rest not applied: %+v", s)
	}
}
