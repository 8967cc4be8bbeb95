package cnat

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	sr "contiv.dev/vpp/servicerenderer"
)

func newRenderer(t testing.TB, vpp VPP, store Store) *Renderer {
	t.Helper()
	r, err := New(Params{Config: testConfig(), VPP: vpp, Store: store, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func resyncData(svcs ...*sr.ContivService) *sr.ResyncData {
	return &sr.ResyncData{Services: svcs, Interfaces: testInterfaces(), Node: testNode()}
}

func apply(t testing.TB, r *Renderer, full bool) {
	t.Helper()
	if err := r.Apply(context.Background(), full); err != nil {
		t.Fatal(err)
	}
	if f := r.Failures(); len(f) != 0 {
		t.Fatalf("failures: %v", f)
	}
}

// wantState is what VPP must hold for the desired state of r.
func wantState(r *Renderer) fakeState {
	d := r.DesiredNode()
	s := fakeState{SNAT4: unspec4(d.SNAT4), SNAT6: unspec6(d.SNAT6), Policy: d.Policy, Exclude: d.Exclude,
		Tables: d.Tables, Features: d.Features, Routes: slices.SortedFunc(slices.Values(slices.Concat(d.Routes, d.Verdicts)), Route.Compare),
		Trans: map[Key]Translation{}}
	for _, t := range r.Desired() {
		s.Trans[t.Key] = *t
	}
	return s
}

func checkState(t testing.TB, f *fakeVPP, want fakeState) {
	t.Helper()
	if got := f.state(); !reflect.DeepEqual(got, want) {
		t.Errorf("VPP holds\n%+v\nwant\n%+v", got, want)
	}
}

func TestFullApplyConfiguresNodeAndTranslations(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	if err := r.Resync(resyncData(web())); err != nil {
		t.Fatal(err)
	}
	apply(t, r, true)
	checkState(t, f, wantState(r))
	if n := len(f.state().Trans); n != 3 {
		t.Errorf("%d translations, want 3", n)
	}
	// Nothing changed: a full apply writes nothing.
	w := f.Writes()
	apply(t, r, true)
	if f.Writes() != w {
		t.Errorf("idle full apply wrote %d times", f.Writes()-w)
	}
}

// A fresh renderer (agent restart) over a VPP holding the state writes
// nothing: with a record, and without one (the SNAT address tells).
func TestAgentRestartZeroWrites(t *testing.T) {
	for _, store := range []Store{nil, &MemStore{}, FileStore{Path: filepath.Join(t.TempDir(), "cnat.json")}} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			f := newFake(t, allIfaces...)
			aff := web()
			aff.ID.Name, aff.ClusterIPs, aff.ExternalIPs, aff.AffinityTimeout = "aff", []netip.Addr{addr("10.96.0.11")}, nil, 60
			aff.Ports[0].NodePort = 30081
			first := newRenderer(t, f, store)
			_ = first.Resync(resyncData(web(), aff))
			apply(t, first, false)
			f.addForeign(Translation{Key: key("10.200.0.1", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}})
			before := f.state()
			w := f.Writes()
			second := newRenderer(t, f, store)
			_ = second.Resync(resyncData(web(), aff))
			apply(t, second, true)
			if f.Writes() != w {
				t.Errorf("restarted agent wrote %d times", f.Writes()-w)
			}
			checkState(t, f, before)
			if s := second.Stats(); s.Foreign != 1 {
				t.Errorf("foreign %d, want 1", s.Foreign)
			}
		})
	}
}

// After a VPP restart everything is configured again, each feature once;
// whether the agent says so (VPPRestarted) or not (the SNAT addresses
// tell), and for a fresh renderer with a stale record.
func TestVPPRestart(t *testing.T) {
	for _, tell := range []bool{true, false} {
		t.Run(fmt.Sprint("told=", tell), func(t *testing.T) {
			store := &MemStore{}
			f := newFake(t, allIfaces...)
			r := newRenderer(t, f, store)
			_ = r.Resync(resyncData(web()))
			apply(t, r, false)
			f.restart()
			if tell {
				r.VPPRestarted()
			}
			apply(t, r, true)
			checkState(t, f, wantState(r))
			f.restart()
			fresh := newRenderer(t, f, store)
			_ = fresh.Resync(resyncData(web()))
			apply(t, fresh, true)
			checkState(t, f, wantState(fresh))
		})
	}
}

// The loss of an interface may be delivered after a full apply has
// configured the interface that took its name (VPP restarted and the CNI
// re-created a pod's interface at another index before the agent handled
// the old one's deletion): it then changes nothing, where forgetting the
// configuration would enable the features twice (the fake fails the test
// on that). The loss of the interface the renderer configured still
// counts.
func TestLateInterfaceLoss(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	apply(t, r, false)
	f.restart()
	old := f.dropInterface("host-vcw1") // re-created at another index
	r.VPPRestarted()
	apply(t, r, true)
	checkState(t, f, wantState(r))

	before := f.Writes()
	r.InterfaceLost("host-vcw1", old)
	apply(t, r, false)
	if n := f.Writes() - before; n != 0 {
		t.Errorf("a late loss of the old interface made %d writes, want 0", n)
	}
	checkState(t, f, wantState(r))

	r.InterfaceLost("host-vcw1", f.dropInterface("host-vcw1"))
	apply(t, r, false)
	if n := f.Writes() - before; n == 0 {
		t.Error("the loss of the configured interface made no writes")
	}
	checkState(t, f, wantState(r))
}

func TestIncrementalChanges(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	apply(t, r, false)

	// Backends change: updates in place.
	svc := web()
	svc.Ports[0].Backends = svc.Ports[0].Backends[:1]
	_ = r.UpdateService(web(), svc)
	w := f.Writes()
	apply(t, r, false)
	if f.Writes()-w != 3 {
		t.Errorf("%d writes for 3 updated translations", f.Writes()-w)
	}
	checkState(t, f, wantState(r))

	// Affinity on: delete + re-add each (the id re-read by an update).
	aff := web()
	aff.AffinityTimeout = 30
	_ = r.UpdateService(svc, aff)
	apply(t, r, false)
	checkState(t, f, wantState(r))

	// No backends left: the cluster IP's translation goes (never 0
	// paths); the external IP's and the NodePort's go to the reject sink.
	none := web()
	none.Ports[0].Backends, none.Ports[0].LocalBackends = nil, nil
	_ = r.UpdateService(aff, none)
	apply(t, r, false)
	checkState(t, f, wantState(r))
	tr := f.state().Trans
	for _, k := range []Key{key("192.168.16.100", 80, sr.TCP), key("192.168.16.1", 30080, sr.TCP)} {
		if len(tr[k].Paths) != 1 || tr[k].Paths[0].IP != addr("10.96.0.0") {
			t.Errorf("%v: %v, want the reject sink", k, tr[k])
		}
	}
	if len(tr) != 2 {
		t.Errorf("translations left: %v, want the external IP's and the NodePort's", tr)
	}

	// Interfaces come and go; a lost one is configured again, once.
	_ = r.UpdateInterface("host-vccl", sr.RoleFrontend)
	_ = r.UpdateInterface("host-vcw3", 0)
	apply(t, r, false)
	checkState(t, f, wantState(r))
	r.InterfaceLost("host-vcw1", f.dropInterface("host-vcw1"))
	apply(t, r, false)
	checkState(t, f, wantState(r))

	// An interface VPP lacks yet: pending, not failed; the rest applied;
	// configured once it is there.
	_ = r.UpdateInterface("host-late", sr.RoleFrontend)
	_ = r.AddService(web())
	apply(t, r, false)
	if ps := r.Pending(); len(ps) != 1 || ps[0].Name != "host-late" {
		t.Errorf("pending %v", ps)
	}
	if n := len(f.state().Trans); n != 3 {
		t.Errorf("%d translations, want 3", n)
	}
	f.mu.Lock()
	f.addInterface("host-late")
	f.mu.Unlock()
	_ = r.UpdateInterface("host-late", sr.RoleFrontend)
	apply(t, r, false)
	if ps := r.Pending(); len(ps) != 0 {
		t.Errorf("still pending %v", ps)
	}
	checkState(t, f, wantState(r))
}

// Ids are reused last in, first out: deletes must hit the right key even
// when another translation took a deleted one's id meanwhile.
func TestDeleteNeverByStaleID(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	a, b := web(), web()
	b.ID.Name, b.ClusterIPs, b.ExternalIPs, b.Ports[0].NodePort = "b", []netip.Addr{addr("10.96.0.20")}, nil, 0
	_ = r.Resync(resyncData(a, b))
	apply(t, r, false)
	// Another program deletes b's translation and makes its own, which
	// takes b's id.
	var bid uint32
	for _, d := range mustDump(t, f) {
		if d.IP == addr("10.96.0.20") {
			bid = d.ID
		}
	}
	if err := f.DeleteTranslation(context.Background(), bid); err != nil {
		t.Fatal(err)
	}
	f.addForeign(Translation{Key: key("10.200.0.1", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}})
	_ = r.DeleteService(b)
	apply(t, r, false)
	if _, ok := f.state().Trans[key("10.200.0.1", 80, sr.TCP)]; !ok {
		t.Error("the foreign translation holding the reused id was deleted")
	}
	if _, ok := f.state().Trans[key("10.96.0.20", 80, sr.TCP)]; ok {
		t.Error("b's translation is still there")
	}
}

func mustDump(t testing.TB, f *fakeVPP) []Dumped {
	d, err := f.DumpTranslations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFullApplyRemovesOwnedLeavesForeign(t *testing.T) {
	f := newFake(t, allIfaces...)
	owned := []Translation{
		{Key: key("10.96.5.5", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}},       // service CIDR
		{Key: key("192.168.16.1", 31000, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}}, // NodePort
		{Key: key("192.168.16.100", 443, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}}, // known external IP
	}
	foreign := []Translation{
		{Key: key("10.200.0.1", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}},
		{Key: key("192.168.16.1", 22, sr.TCP), Paths: []Path{path("10.1.1.11", 22)}},
		{Key: key("192.168.16.200", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}},
	}
	for _, tr := range append(owned, foreign...) {
		f.addForeign(tr)
	}
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	apply(t, r, true)
	want := wantState(r)
	for _, tr := range foreign {
		want.Trans[tr.Key] = tr
	}
	checkState(t, f, want)
}

// Any sequence of changes applied one at a time leaves VPP as a fresh
// renderer resynced to the end state leaves an empty VPP, and a full apply
// then writes nothing.
func TestIncrementalEqualsResync(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFake(t, allIfaces...)
		r := newRenderer(t, f, nil)
		_ = r.Resync(resyncData())
		apply(t, r, false)
		services := map[string]*sr.ContivService{}
		ifaces := testInterfaces()
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0:
				name := rapid.SampledFrom(allIfaces).Draw(rt, "if")
				role := sr.InterfaceRole(rapid.IntRange(0, 3).Draw(rt, "role"))
				if role == 0 {
					delete(ifaces, name)
				} else {
					ifaces[name] = role
				}
				_ = r.UpdateInterface(name, role)
			case 1:
				name := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(rt, "del")
				if s := services[name]; s != nil {
					_ = r.DeleteService(s)
					delete(services, name)
				}
			default:
				s := genService(rt)
				old := services[s.ID.Name]
				services[s.ID.Name] = s
				if old == nil {
					_ = r.AddService(s)
				} else {
					_ = r.UpdateService(old, s)
				}
			}
			apply(t, r, false)
		}
		fresh := newFake(t, allIfaces...)
		fr := newRenderer(t, fresh, nil)
		data := &sr.ResyncData{Interfaces: ifaces, Node: testNode()}
		for _, n := range []string{"a", "b", "c", "d"} {
			if s := services[n]; s != nil {
				data.Services = append(data.Services, s)
			}
		}
		_ = fr.Resync(data)
		apply(t, fr, true)
		if got, want := f.state(), fresh.state(); !reflect.DeepEqual(got, want) {
			rt.Fatalf("incremental\n%+v\nresync\n%+v", got, want)
		}
		w := f.Writes()
		apply(t, r, true)
		if f.Writes() != w {
			rt.Fatalf("full apply after incremental ones wrote %d times", f.Writes()-w)
		}
	})
}

func genService(rt *rapid.T) *sr.ContivService {
	name := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(rt, "name")
	pool := []sr.Backend{be("10.1.1.11", 8080, true), be("10.1.1.12", 8080, true), be("10.1.2.11", 8080, false),
		be("10.1.2.12", 8080, false), be("fd00:1::11", 8080, true)}
	var bs, locals []sr.Backend
	for i, b := range pool {
		if rapid.Bool().Draw(rt, fmt.Sprint("b", i)) {
			bs = append(bs, b)
			if b.Local {
				locals = append(locals, b)
			}
		}
	}
	s := &sr.ContivService{
		ID:         sr.ServiceID{Namespace: "ns", Name: name},
		ClusterIPs: []netip.Addr{addr(rapid.SampledFrom([]string{"10.96.0.1", "10.96.0.2", "10.96.0.3"}).Draw(rt, "cip"))},
		Ports: []sr.Port{{Name: "p", Protocol: sr.TCP, Port: uint16(rapid.IntRange(80, 81).Draw(rt, "port")),
			Backends: bs, LocalBackends: locals}},
		Created: t0.Add(rapid.SampledFrom([]time.Duration{0, 1, 2}).Draw(rt, "age")),
	}
	if rapid.Bool().Draw(rt, "v6") {
		s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::1"))
	}
	if rapid.Bool().Draw(rt, "ext") {
		s.ExternalIPs = []netip.Addr{addr("192.168.16.100")}
	}
	if rapid.Bool().Draw(rt, "np") {
		s.Ports[0].NodePort = 30080
	}
	if rapid.Bool().Draw(rt, "aff") {
		s.AffinityTimeout = 60
	}
	if rapid.Bool().Draw(rt, "local") {
		s.ExternalPolicy = sr.PolicyLocal
	}
	if rapid.Bool().Draw(rt, "ilocal") {
		s.InternalPolicy = sr.PolicyLocal
	}
	return s
}

// Two services on one key: the oldest wins; when it goes, the other takes
// over (an update in place).
func TestConflictOldestWins(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	old, young := web(), web()
	young.ID.Name, young.Created = "young", t0.Add(time.Hour)
	young.ExternalIPs, young.Ports[0].NodePort = nil, 0
	young.Ports[0].Backends = []sr.Backend{be("10.1.2.99", 8080, false)}
	_ = r.Resync(resyncData(young, old))
	apply(t, r, false)
	k := key("10.96.0.10", 80, sr.TCP)
	if got := f.state().Trans[k].Paths; len(got) != 5 {
		t.Errorf("the young service won: %v", got)
	}
	cs := r.Conflicts()
	if len(cs) != 1 || cs[0].Key != k || cs[0].Winner != old.ID || len(cs[0].Losers) != 1 || cs[0].Losers[0] != young.ID {
		t.Errorf("conflicts: %+v", cs)
	}
	_ = r.DeleteService(old)
	apply(t, r, false)
	if got := f.state().Trans[k].Paths; len(got) != 1 || got[0] != path("10.1.2.99", 8080) {
		t.Errorf("after the old one left: %v", got)
	}
	if cs := r.Conflicts(); len(cs) != 0 {
		t.Errorf("conflicts after the old one left: %+v", cs)
	}
	checkState(t, f, wantState(r))
}

// The SNAT-address commit marker: a VPP holding another node's address is
// not taken as configured.
func TestOtherSNATAddressNotTrusted(t *testing.T) {
	f := newFake(t, allIfaces...)
	_ = f.SetSNATAddresses(context.Background(), addr("192.168.16.9"), netip.Addr{})
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	apply(t, r, true)
	checkState(t, f, wantState(r))
}

// TestIPv6NodeIP: this node's IPv6 address arriving (UpdateLocalNode)
// adds the dual-stack service's NodePort on it with is_real_ip; a
// restarted agent recognises it as its own and writes nothing; the address
// leaving deletes it.
func TestIPv6NodeIP(t *testing.T) {
	f := newFake(t, allIfaces...)
	svc := web()
	svc.ExternalIPs = nil
	svc.Ports[0].Backends = append(svc.Ports[0].Backends, be("fd00:2::11", 8080, false))
	dual := testNode()
	dual.IPs = append(dual.IPs, addr("fd00:16::1"))
	v6 := key("fd00:16::1", 30080, sr.TCP)

	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(svc))
	apply(t, r, true)
	if err := r.UpdateLocalNode(dual); err != nil {
		t.Fatal(err)
	}
	apply(t, r, false)
	if tr, ok := f.state().Trans[v6]; !ok || !tr.RealIP || !reflect.DeepEqual(tr.Paths, []Path{path("fd00:2::11", 8080)}) {
		t.Fatalf("IPv6 NodePort %+v (held: %v)", tr, ok)
	}
	checkState(t, f, wantState(r))

	w := f.Writes()
	again := newRenderer(t, f, nil)
	data := resyncData(svc)
	data.Node = dual
	_ = again.Resync(data)
	apply(t, again, true)
	if f.Writes() != w {
		t.Errorf("restarted agent wrote %d times", f.Writes()-w)
	}

	if err := again.UpdateLocalNode(testNode()); err != nil {
		t.Fatal(err)
	}
	apply(t, again, false)
	if _, ok := f.state().Trans[v6]; ok {
		t.Error("the IPv6 NodePort outlived the node's IPv6 address")
	}
	checkState(t, f, wantState(again))
}

// The service-CIDR routes (a drop in the main VRF, a lookup of table 0 in
// the pod VRF): added once, read back (an agent restart writes nothing),
// added again when VPP lost one (full apply), foreign drop routes left
// alone.
func TestServiceRoutes(t *testing.T) {
	f := newFake(t, allIfaces...)
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	apply(t, r, true)
	svc := netip.MustParsePrefix("10.96.0.0/12")
	want := []Route{{Prefix: svc, VRF: 0}, {Prefix: svc, VRF: 1, Kind: RouteLookup}}
	if got := cidrRoutes(f.state().Routes); !slices.Equal(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
	foreign := []Route{{Prefix: netip.MustParsePrefix("10.200.0.0/16"), VRF: 1}, {Prefix: svc, VRF: 7}}
	for _, rt := range foreign {
		f.setRoute(rt, true)
	}

	w := f.Writes()
	second := newRenderer(t, f, nil)
	_ = second.Resync(resyncData(web()))
	apply(t, second, true)
	if f.Writes() != w {
		t.Errorf("restarted agent wrote %d times", f.Writes()-w)
	}

	f.setRoute(want[1], false)
	apply(t, second, false)
	if f.Writes() != w {
		t.Errorf("incremental apply wrote %d times", f.Writes()-w)
	}
	apply(t, second, true)
	if f.Writes() != w+1 {
		t.Errorf("full apply wrote %d times, want 1 (the lost route)", f.Writes()-w)
	}
	if got := cidrRoutes(f.state().Routes); !slices.Equal(got, slices.SortedFunc(slices.Values(append(want, foreign...)), Route.Compare)) {
		t.Errorf("routes %v: want the lost one back and the foreign ones kept", got)
	}
	if n := second.AppliedNode(); !slices.Equal(n.Routes, want) {
		t.Errorf("applied routes %v, want %v", n.Routes, want)
	}
}

// A service CIDR no longer configured: its routes go when the record says
// the agent added them, and stay without a record (no tag tells).
func TestServiceRoutesOfOldCIDR(t *testing.T) {
	old := netip.MustParsePrefix("10.96.0.0/12")
	for _, store := range []Store{&MemStore{}, nil} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			f := newFake(t, allIfaces...)
			first := newRenderer(t, f, store)
			_ = first.Resync(resyncData(web()))
			apply(t, first, true)
			cfg := testConfig()
			cfg.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.97.0.0/16")}
			second, err := New(Params{Config: cfg, VPP: f, Store: store, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			_ = second.Resync(resyncData())
			apply(t, second, true)
			var got []string
			for _, rt := range cidrRoutes(f.state().Routes) {
				got = append(got, rt.String())
			}
			want := []string{"10.97.0.0/16 vrf=0", "10.97.0.0/16 vrf=1 lookup table=0"}
			if store == nil {
				want = []string{"10.96.0.0/12 vrf=0", "10.97.0.0/16 vrf=0", "10.96.0.0/12 vrf=1 lookup table=0", "10.97.0.0/16 vrf=1 lookup table=0"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("routes %q, want %q (old CIDR %v)", got, want, old)
			}
		})
	}
}

// A route VPP refuses is a failure of that route alone; the next full
// apply tries it again.
func TestServiceRouteFailure(t *testing.T) {
	f := newFake(t, allIfaces...)
	bad := Route{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1, Kind: RouteLookup}
	f.failRoute = map[Route]error{bad: fmt.Errorf("add route: %w", ErrInvalid)}
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	if err := r.Apply(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	fs := r.Failures()
	if len(fs) != 1 || fs[0].Object != (ObjectID{Kind: ObjectRoute, Route: bad}) || fs[0].Op != OpRoute {
		t.Fatalf("failures %+v, want the route in VRF 1", fs)
	}
	if s := f.state(); len(cidrRoutes(s.Routes)) != 1 || len(s.Trans) != 3 || s.SNAT4 != nodeIP {
		t.Errorf("the rest not applied: %+v", s)
	}
	f.failRoute = nil
	apply(t, r, true)
	checkState(t, f, wantState(r))
}

// After a VPP restart the pod VRF's table may not exist yet (FACTS §6:
// -3 for ~2-4 s until the startup configuration makes it): its
// service-CIDR lookup route is pending, not a failure and not an error to heal; the next apply
// after the table appears adds it, incremental as it may be.
func TestServiceRouteWaitsForTable(t *testing.T) {
	f := newFake(t, allIfaces...)
	missing := Route{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1, Kind: RouteLookup}
	noTable := fmt.Errorf("add route: %w: %w", ErrNoTable, ErrInvalid)
	f.failRoute = map[Route]error{missing: noTable}
	r := newRenderer(t, f, nil)
	_ = r.Resync(resyncData(web()))
	if err := r.Apply(context.Background(), true); err != nil {
		t.Fatalf("a missing table is no error: %v", err)
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %+v, want none", fs)
	}
	if p := r.PendingTables(); len(p) != 1 || p[0].VRF != 1 || !slices.Equal(p[0].Routes, []Route{missing}) || p[0].Since.IsZero() {
		t.Fatalf("pending tables %+v, want VRF 1 with its route", p)
	}
	f.failRoute = nil // the startup configuration made table 1
	_ = r.UpdateInterface("host-vcw1", sr.RoleBackend)
	apply(t, r, false)
	if p := r.PendingTables(); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}
	checkState(t, f, wantState(r))
}

// cidrRoutes are the routes among rs that are no cluster IP's (/32).
func cidrRoutes(rs []Route) []Route {
	return slices.DeleteFunc(slices.Clone(rs), func(r Route) bool { return r.Prefix.Bits() == 32 })
}

// A table made in the middle of an apply takes some routes into it and
// refuses those sent before: the table stays pending until every route
// into it is in (as nat44's TestTableMadeBehindTheRenderersBack), so that
// the next apply with interface news adds the refused ones. Forgetting the
// table at the first route added left the first service CIDR's route out,
// unreported.
func TestTableMadeMidApply(t *testing.T) {
	f := newFake(t, allIfaces...)
	drop := Route{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1, Kind: RouteLookup}
	other := Route{Prefix: netip.MustParsePrefix("10.97.0.0/16"), VRF: 1, Kind: RouteLookup} // a second service CIDR's
	noTable := fmt.Errorf("add route: %w: %w", ErrNoTable, ErrInvalid)
	f.failRoute = map[Route]error{drop: noTable, other: noTable}
	cfg := testConfig()
	cfg.ServiceCIDRs = append(cfg.ServiceCIDRs, other.Prefix)
	r, err := New(Params{Config: cfg, VPP: f, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Resync(resyncData(web()))
	apply(t, r, true)

	// The first CIDR's route is sent first, refused; the table is made;
	// the second's goes in.
	f.failRoute = map[Route]error{drop: noTable}
	_ = r.UpdateInterface("host-vcw1", sr.RoleBackend)
	apply(t, r, false)
	if p := r.PendingTables(); len(p) != 1 || p[0].VRF != 1 || !slices.Equal(p[0].Routes, []Route{drop}) {
		t.Fatalf("pending tables %+v, want VRF 1 with the drop route", p)
	}

	f.failRoute = nil
	_ = r.UpdateInterface("host-vcw2", sr.RoleBackend)
	apply(t, r, false)
	if p := r.PendingTables(); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}
	checkState(t, f, wantState(r))
}

// A conflict is logged once per frontend and losing service, as under
// nat44: not again by a resync that finds it again (the agent resyncs on
// every healing), and logged resolved when the winner goes.
func TestConflictLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	r, err := New(Params{Config: testConfig(), VPP: newFake(t, allIfaces...), Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	old, young := web(), web()
	young.ID.Name, young.Created = "young", t0.Add(time.Hour)
	for range 3 {
		_ = r.Resync(resyncData(young, old))
		apply(t, r, false)
	}
	cs := r.Conflicts()
	if n := strings.Count(buf.String(), "claimed by two services"); len(cs) == 0 || n != len(cs) {
		t.Errorf("%d conflicts logged %d times, want once each:\n%s", len(cs), n, buf.String())
	}
	_ = r.DeleteService(old)
	if n := strings.Count(buf.String(), "frontend conflict resolved"); n == 0 {
		t.Errorf("the end of the conflict not logged:\n%s", buf.String())
	}
}
