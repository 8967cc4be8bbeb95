package nat44

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

// bigService is a ClusterIP service (cluster IP 10.96.1.i) with an
// external IP (20.1.0.i) and n backends 10.3.x.y, the window starting at
// offset off; backends whose index is a multiple of localEvery (0: none)
// are local.
func bigService(i, n, off, localEvery int, affinity uint32) *servicerenderer.ContivService {
	var bs []servicerenderer.Backend
	for j := off; j < off+n; j++ {
		var flags []string
		if localEvery > 0 && j%localEvery == 0 {
			flags = append(flags, "local")
		}
		bs = append(bs, be(fmt.Sprintf("10.3.%d.%d", j/250, 1+j%250), 8080, flags...))
	}
	svc := service("big", fmt.Sprintf("svc-%d", i), i, fmt.Sprintf("10.96.1.%d", i), port("http", 80, 0, bs...))
	svc.ExternalIPs = ips(fmt.Sprintf("20.1.0.%d", i))
	svc.AffinityTimeout = affinity
	return svc
}

// TestVPPRulesHoldForAnyBackendCounts: whatever sequence of backend counts
// (0 to 600) the services go through, applied incrementally or in full,
// with affinity and endpoint-weight changes and agent restarts between,
// no call breaks VPP 25.02's rules (the fake panics on a crash: more than
// 255 locals in one add, probabilities summing to a multiple of 256; and
// on a sum past 255, which skews VPP's pick; it refuses a mapping
// with fewer than 2 locals and a removal leaving fewer than 2), VPP ends
// holding exactly the desired state, and a full apply then makes no call.
func TestVPPRulesHoldForAnyBackendCounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		cfg.LocalEndpointWeight = 3
		fake := newFakeVPP()
		r := newTestRenderer(t, cfg, fake)
		const services = 3
		svcs := make([]*servicerenderer.ContivService, services)
		for i := range svcs {
			svcs[i] = bigService(i, 0, 0, 0, 0)
		}
		if err := r.Resync(resyncData(svcs...)); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, true)
		genCount := rapid.OneOf(rapid.SampledFrom([]int{0, 1, 2, 3}), rapid.IntRange(250, 260), rapid.IntRange(0, 600))
		steps := rapid.IntRange(1, 8).Draw(t, "steps")
		for range steps {
			i := rapid.IntRange(0, services-1).Draw(t, "service")
			n := genCount.Draw(t, "backends")
			off := rapid.IntRange(0, 1).Draw(t, "offset")
			local := rapid.SampledFrom([]int{0, 1, 2, 7}).Draw(t, "localEvery")
			affinity := uint32(rapid.SampledFrom([]int{0, 0, 10800}).Draw(t, "affinity"))
			svc := bigService(i, n, off, local, affinity)
			if err := r.UpdateService(svcs[i], svc); err != nil {
				t.Fatal(err)
			}
			svcs[i] = svc
			switch rapid.IntRange(0, 3).Draw(t, "apply") {
			case 0:
				mustApply(t, r, false)
			case 1:
				mustApply(t, r, true)
			case 2: // the agent restarts
				r = newTestRenderer(t, cfg, fake)
				if err := r.Resync(resyncData(svcs...)); err != nil {
					t.Fatal(err)
				}
				mustApply(t, r, true)
			}
			if fs := r.Failures(); len(fs) != 0 {
				t.Fatalf("failures %+v", fs)
			}
		}
		mustApply(t, r, false)
		if fs := r.Failures(); len(fs) != 0 {
			t.Fatalf("failures %+v", fs)
		}
		if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
			t.Fatalf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
		}
		for _, m := range fake.state.Mappings {
			if len(m.Locals) < 2 {
				t.Fatalf("mapping with %d locals: %s", len(m.Locals), m)
			}
		}
		fake.takeCalls()
		mustApply(t, r, true)
		if calls := fake.takeCalls(); len(calls) != 0 {
			t.Fatalf("full apply of a synced VPP made calls: %q", calls)
		}
	})
}

// Affinity is not in VPP's dump: a restarted agent reads it from the tags
// and makes no call; a real affinity change replaces just that mapping.
func TestRestartWithAffinityMakesNoCalls(t *testing.T) {
	svcs := []*servicerenderer.ContivService{webService("default", "a", 1, 3), webService("default", "b", 2, 1), webService("default", "c", 3, 4)}
	svcs[0].AffinityTimeout = 10800
	svcs[1].AffinityTimeout = 60
	long := webService(strings.Repeat("n", 40), strings.Repeat("s", 40), 4, 2)
	long.AffinityTimeout = 86400
	svcs = append(svcs, long)
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	for _, m := range fake.state.Mappings {
		if len(m.Tag) > MaxTagLen {
			t.Errorf("tag %q longer than VPP keeps", m.Tag)
		}
	}
	if d, err := fake.Dump(t.Context()); err != nil || d.Mappings[MappingKey{IP: MustParseIPv4("10.96.0.1"), Port: 80, Proto: servicerenderer.TCP}].Affinity != 0 {
		t.Fatalf("the fake's dump must not return affinity (%v)", err)
	}

	r2 := newTestRenderer(t, testConfig(), fake)
	if err := r2.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Fatalf("restart made calls: %q", calls)
	}
	if got, want := r2.Applied().Lines(), r2.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("applied:\n%s\ndesired:\n%s", join(got), join(want))
	}

	// A real affinity change: that mapping is replaced, nothing else.
	changed := webService("default", "a", 1, 3)
	changed.AffinityTimeout = 600
	if err := r2.UpdateService(svcs[0], changed); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, false)
	calls := fake.takeCalls()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "del-mapping 10.96.0.1:80/TCP") ||
		!strings.HasPrefix(calls[1], "add-mapping 10.96.0.1:80/TCP") || !strings.Contains(calls[1], "affinity=600 tag=contiv:default/a|a600") {
		t.Errorf("affinity change: %q", calls)
	}
}

// Mappings an older agent wrote (tags without the affinity part, static
// mappings for one backend) are owned: left alone while they translate as
// desired, converted when the backends change.
func TestOlderAgentsMappings(t *testing.T) {
	fake := newFakeVPP()
	key := func(ip string) MappingKey {
		return MappingKey{IP: MustIPv4(netip.MustParseAddr(ip)), Port: 80, Proto: servicerenderer.TCP}
	}
	static := &Mapping{MappingKey: key("10.96.0.1"), TwiceNAT: TwiceNATSelf, Tag: tagPrefix + "default/one",
		Locals: []Local{{IP: MustParseIPv4("10.2.0.2"), Port: 8080, VRF: 2}}}
	lb := &Mapping{MappingKey: key("10.96.0.2"), TwiceNAT: TwiceNATSelf, Tag: tagPrefix + "default/two",
		Locals: []Local{{IP: MustParseIPv4("10.2.0.2"), Port: 8080, VRF: 2, Probability: 1}, {IP: MustParseIPv4("10.2.0.3"), Port: 8080, VRF: 2, Probability: 1}}}
	fake.state.Mappings[static.MappingKey] = static
	fake.state.Mappings[lb.MappingKey] = lb
	one, two := webService("default", "one", 1, 1), webService("default", "two", 2, 2)
	one.AffinityTimeout = 10800 // meaningless with one backend
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(one, two)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	for _, c := range fake.takeCalls() {
		if strings.Contains(c, "mapping") || strings.Contains(c, "local") {
			t.Errorf("older agent's mapping touched: %s", c)
		}
	}
	oneMore := webService("default", "one", 1, 2)
	oneMore.AffinityTimeout = 10800
	if err := r.UpdateService(one, oneMore); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	calls := fake.takeCalls()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "del-mapping 10.96.0.1:80/TCP static") || !strings.HasPrefix(calls[1], "add-mapping 10.96.0.1:80/TCP lb") {
		t.Errorf("conversion: %q", calls)
	}
}

// 3→2→1→2→3 backends are local operations only: the mapping (and the
// sessions of the backends that stay) lives throughout.
func TestBackendCountsChangeInPlace(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	svc := webService("default", "web", 1, 3)
	svc.AffinityTimeout = 10800
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	for _, n := range []int{2, 1, 2, 3, 1, 3} {
		next := webService("default", "web", 1, n)
		next.AffinityTimeout = 10800
		if err := r.UpdateService(svc, next); err != nil {
			t.Fatal(err)
		}
		svc = next
		mustApply(t, r, false)
		calls := fake.takeCalls()
		if len(calls) == 0 {
			t.Errorf("%d backends: no call", n)
		}
		for _, c := range calls {
			if !strings.HasPrefix(c, "add-local ") && !strings.HasPrefix(c, "del-local ") {
				t.Errorf("%d backends: %s", n, c)
			}
		}
		if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
			t.Errorf("%d backends: VPP holds:\n%s\nwant:\n%s", n, join(got), join(want))
		}
	}
}

// A service with 1000 endpoints: VPP 25.02 sums a mapping's probabilities
// in a u8, so each frontend holds a subset of 255, created in one call.
func TestThousandEndpoints(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	svc := bigService(1, 1000, 0, 0, 0)
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	adds, locals := 0, 0
	for _, c := range fake.takeCalls() {
		switch {
		case strings.HasPrefix(c, "add-mapping "):
			adds++
		case strings.HasPrefix(c, "add-local "):
			locals++
		}
	}
	if adds != 2 || locals != 0 {
		t.Errorf("%d mapping adds, %d local adds", adds, locals)
	}
	for k, m := range fake.state.Mappings {
		if len(m.Locals) != MaxProbabilitySum || probabilitySum(m.Locals) != MaxProbabilitySum {
			t.Errorf("%s: %d locals summing to %d", k, len(m.Locals), probabilitySum(m.Locals))
		}
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %+v", fs)
	}
}

// The source-NAT objects of an external IP follow the services using it:
// added with the first, removed with the last, each change costing calls
// for that IP only.
func TestExternalIPObjectsAreRefCounted(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData()); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	ext := func(name string, i int, backends int) *servicerenderer.ContivService {
		svc := webService("default", name, i, backends)
		svc.ExternalIPs = ips("20.0.0.1")
		return svc
	}
	extLines := func() []string {
		var out []string
		for _, l := range fake.dump() {
			if strings.Contains(l, "20.0.0.1 ") {
				out = append(out, l)
			}
		}
		return out
	}
	want := []string{"pool 20.0.0.1 vrf=77", "identity 20.0.0.1 vrf=2 tag=contiv:snat"}
	step := func(name string, f func() error, wantLines []string, wantCalls ...string) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, false)
		calls := slices.DeleteFunc(fake.takeCalls(), func(c string) bool { return strings.Contains(c, "mapping") || strings.Contains(c, "local") })
		if !slices.Equal(calls, wantCalls) {
			t.Errorf("%s: calls %q, want %q", name, calls, wantCalls)
		}
		if got := extLines(); !slices.Equal(got, wantLines) {
			t.Errorf("%s: VPP holds %q, want %q", name, got, wantLines)
		}
	}
	a, b := ext("a", 1, 2), ext("b", 2, 2)
	step("first service", func() error { return r.AddService(a) }, want,
		"add-pool 20.0.0.1 vrf=77", "add-identity 20.0.0.1 vrf=2 tag=contiv:snat")
	step("second service", func() error { return r.AddService(b) }, want)
	step("first goes", func() error { return r.DeleteService(a) }, want)
	noEndpoints := ext("b", 2, 0)
	// Without endpoints the IP is still mapped (to the drop sink): its
	// objects stay.
	step("no endpoint left: dropped at the sink", func() error { return r.UpdateService(b, noEndpoints) }, want)
	step("endpoints back", func() error { return r.UpdateService(noEndpoints, b) }, want)
	step("last goes", func() error { return r.DeleteService(b) }, nil,
		"del-pool 20.0.0.1 vrf=77", "del-identity 20.0.0.1 vrf=2 tag=contiv:snat")

	// Without source NAT, external IPs get nothing.
	cfg := testConfig()
	cfg.SNAT = SNAT{}
	fake2 := newFakeVPP()
	r2 := newTestRenderer(t, cfg, fake2)
	if err := r2.Resync(resyncData(ext("a", 1, 2))); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	for _, l := range fake2.dump() {
		if strings.HasPrefix(l, "pool 20.") || strings.HasPrefix(l, "identity 20.") {
			t.Errorf("without source NAT: %s", l)
		}
	}
}

// The service CIDR's drop routes: programmed once, read back (VPP's own
// drop routes ignored), never touched again.
func TestDropRoutes(t *testing.T) {
	fake := newFakeVPP()
	vppOwn := Route{RouteKey: RouteKey{Prefix: MustParseIPv4Prefix("240.0.0.0/4"), VRF: 2}}
	fake.otherRoutes = []Route{vppOwn}
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData()); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	var routes []string
	for _, c := range fake.takeCalls() {
		if strings.Contains(c, "route") {
			routes = append(routes, c)
		}
	}
	if want := []string{"add-route 10.96.0.0/12 vrf=1 drop", "add-route 10.96.0.0/12 vrf=2 drop"}; !slices.Equal(routes, want) {
		t.Errorf("routes %q, want %q", routes, want)
	}
	if fake.routeDumps != 1 {
		t.Errorf("%d route dumps", fake.routeDumps)
	}
	r2 := newTestRenderer(t, testConfig(), fake)
	if err := r2.Resync(resyncData()); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("restart made calls %q", calls)
	}
	if _, ok := r2.Applied().Routes[vppOwn.RouteKey]; ok {
		t.Error("VPP's own route taken for the agent's")
	}
	// A route deleted behind the agent's back comes back at the next full apply.
	delete(fake.state.Routes, RouteKey{Prefix: MustParseIPv4Prefix("10.96.0.0/12"), VRF: 2})
	mustApply(t, r2, true)
	if calls := fake.takeCalls(); !slices.Equal(calls, []string{"add-route 10.96.0.0/12 vrf=2 drop"}) {
		t.Errorf("healing: %q", calls)
	}
}

// An interface VPP does not have yet waits (no failure) and is retried on
// every full apply and when the interface is updated again, even with an
// unchanged role.
func TestPendingInterfaces(t *testing.T) {
	fake := newFakeVPP()
	fake.missing = map[string]bool{"tap1": true}
	r := newTestRenderer(t, testConfig(), fake)
	data := resyncData()
	data.Interfaces["tap1"] = servicerenderer.RoleBackend
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	p := r.Pending()
	if len(p) != 1 || p[0].Name != "tap1" || p[0].Features != FeatureIn || p[0].Since.IsZero() {
		t.Fatalf("pending %+v", p)
	}
	if got := p[0].String(); got != "waiting for interface tap1 (features in)" {
		t.Errorf("pending says %q", got)
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("a missing interface is a failure: %+v", fs)
	}
	since := p[0].Since
	// A full apply tries again; still missing: still pending, since the first time.
	fake.takeCalls()
	mustApply(t, r, true)
	if calls := fake.takeCalls(); !slices.Equal(calls, []string{"set-interface tap1 none -> in"}) {
		t.Errorf("full apply: %q", calls)
	}
	if p := r.Pending(); len(p) != 1 || !p[0].Since.Equal(since) {
		t.Errorf("pending %+v", p)
	}
	// Incremental applies leave it alone until the interface is updated.
	mustApply(t, r, false)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("incremental apply: %q", calls)
	}
	delete(fake.missing, "tap1")
	if err := r.UpdateInterface("tap1", servicerenderer.RoleBackend); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if calls := fake.takeCalls(); !slices.Equal(calls, []string{"set-interface tap1 none -> in"}) {
		t.Errorf("after the update: %q", calls)
	}
	if p := r.Pending(); len(p) != 0 {
		t.Errorf("still pending %+v", p)
	}
	if got := r.Applied().Interfaces["tap1"]; got != FeatureIn {
		t.Errorf("tap1 applied %s", got)
	}
	// A pending interface that is no longer wanted is no longer pending.
	fake.missing = map[string]bool{"tap2": true}
	if err := r.UpdateInterface("tap2", servicerenderer.RoleFrontend); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if err := r.UpdateInterface("tap2", 0); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if p := r.Pending(); len(p) != 0 {
		t.Errorf("unwanted interface still pending %+v", p)
	}
}

// NodePort under the Local policy with no local endpoint: nothing maps it
// (ip4-local drops it); the external IP goes to the sink (dropped, as
// kube-proxy does), the cluster IP to the backend.
func TestLocalNodePortWithoutLocalEndpoint(t *testing.T) {
	svc := service("default", "np", 0, "10.96.0.5", port("http", 80, 30080, be("10.2.1.1", 8080)))
	svc.ExternalPolicy = servicerenderer.PolicyLocal
	svc.ExternalIPs = ips("20.0.0.9")
	cfg := testConfig()
	for _, m := range BuildService(svc, testNode(), cfg) {
		switch m.IP.Addr() {
		case netip.MustParseAddr("10.96.0.5"):
		case netip.MustParseAddr("20.0.0.9"):
			if len(m.Locals) != 2 || m.Locals[1].IP.Addr() != SinkAddress(&cfg) || m.Locals[1].VRF != cfg.MainVRF {
				t.Errorf("external IP not to the sink: %s", m)
			}
		default:
			t.Errorf("mapped: %s", m)
		}
	}
}

func TestAffinityTag(t *testing.T) {
	id := servicerenderer.ServiceID{Namespace: "default", Name: "web"}
	if got := AffinityTag("contiv:", id, 0); got != ServiceTag("contiv:", id) {
		t.Errorf("no affinity: %q", got)
	}
	ids := []servicerenderer.ServiceID{id,
		{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 63)},
		{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 62) + "b"},
		{Namespace: "kube-system", Name: "a-service-name-of-thirty-chars"},
	}
	prefixes := []string{"contiv:", strings.Repeat("p", maxTagPrefixLen)}
	seen := map[string]bool{}
	for _, p := range prefixes {
		for _, id := range ids {
			for _, a := range []uint32{0, 1, 10800, 86400, 1<<32 - 1} {
				tag := AffinityTag(p, id, a)
				if len(tag) > MaxTagLen || !strings.HasPrefix(tag, p) {
					t.Errorf("%q: %d bytes", tag, len(tag))
				}
				if got := TagAffinity(tag); got != a {
					t.Errorf("%q: affinity %d, want %d", tag, got, a)
				}
				if seen[tag] {
					t.Errorf("tag %q made twice", tag)
				}
				seen[tag] = true
			}
		}
	}
	for _, tag := range []string{"contiv:default/web", "contiv:x|a", "contiv:x|a0", "contiv:x|a12x", "contiv:x|a99999999999", "", "contiv:snat"} {
		if got := TagAffinity(tag); got != 0 {
			t.Errorf("TagAffinity(%q) = %d", tag, got)
		}
	}
}
