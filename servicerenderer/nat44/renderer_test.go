package nat44

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

// logRecorder keeps the messages logged at warn level and above.
type logRecorder struct {
	mu   *sync.Mutex
	msgs *[]string
}

func newLogRecorder() logRecorder { return logRecorder{mu: &sync.Mutex{}, msgs: new([]string)} }

func (l logRecorder) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }
func (l logRecorder) Handle(_ context.Context, rec slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.msgs = append(*l.msgs, rec.Level.String()+" "+rec.Message)
	return nil
}
func (l logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logRecorder) WithGroup(string) slog.Handler      { return l }

// count is how many records with this level and message were logged.
func (l logRecorder) count(levelAndMsg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range *l.msgs {
		if m == levelAndMsg {
			n++
		}
	}
	return n
}

// webService is a ClusterIP service with n backends on other nodes.
func webService(ns, name string, i, n int) *servicerenderer.ContivService {
	ip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
	var bs []servicerenderer.Backend
	for j := range n {
		bs = append(bs, be(fmt.Sprintf("10.2.%d.%d", j/200, 2+j%200), 8080))
	}
	svc := service(ns, name, i, "", port("http", 80, 0, bs...))
	svc.ClusterIPs = []netip.Addr{ip}
	return svc
}

func resyncData(svcs ...*servicerenderer.ContivService) *servicerenderer.ResyncData {
	return &servicerenderer.ResyncData{
		Services: svcs,
		Interfaces: map[string]servicerenderer.InterfaceRole{
			"GbE": servicerenderer.RoleFrontend, "VXLAN-BVI": servicerenderer.RoleFrontend | servicerenderer.RoleBackend,
		},
		Node: testNode(),
	}
}

func mustApply(t tb, r *Renderer, full bool) {
	t.Helper()
	if err := r.Apply(context.Background(), full); err != nil {
		t.Fatalf("Apply(full=%v): %v", full, err)
	}
}

func TestEndpointChangeIsOneCall(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	svc := webService("default", "web", 1, 10)
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()

	steps := []struct {
		backends int
		calls    []string
	}{
		{11, []string{"add-local 10.96.0.1:80/TCP 10.2.0.12:8080 vrf=2 p=1"}},
		{10, []string{"del-local 10.96.0.1:80/TCP 10.2.0.12:8080 vrf=2 p=1"}},
		{9, []string{"del-local 10.96.0.1:80/TCP 10.2.0.11:8080 vrf=2 p=1"}},
		{9, nil},
	}
	old := svc
	for _, s := range steps {
		next := webService("default", "web", 1, s.backends)
		if err := r.UpdateService(old, next); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, false)
		if got := fake.takeCalls(); !slices.Equal(got, s.calls) {
			t.Errorf("%d backends: calls %q, want %q", s.backends, got, s.calls)
		}
		old = next
	}
	if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
	}
	st := r.Stats()
	if st.LocalsChanged != 3 || st.MappingsUpdated != 3 || st.Invalid != 0 || st.Transient != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestTwoBackendsToOneAndBack(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(webService("default", "web", 1, 3))); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	tag := "tag=contiv:default/web"
	steps := []struct {
		backends int
		calls    []string
	}{
		{2, []string{"del-local 10.96.0.1:80/TCP 10.2.0.4:8080 vrf=2 p=1"}},
		// 2→1: the placeholder comes in, then the leaving backend goes.
		{1, []string{
			"add-local 10.96.0.1:80/TCP 0.0.0.0:0 vrf=0 p=0",
			"del-local 10.96.0.1:80/TCP 10.2.0.3:8080 vrf=2 p=1",
		}},
		{0, []string{"del-mapping 10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.0.2:8080 vrf=2 p=1"}},
		{1, []string{"add-mapping 10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.0.2:8080 vrf=2 p=1"}},
		// 1→2: the new backend comes in, then the placeholder goes.
		{2, []string{
			"add-local 10.96.0.1:80/TCP 10.2.0.3:8080 vrf=2 p=1",
			"del-local 10.96.0.1:80/TCP 0.0.0.0:0 vrf=0 p=0",
		}},
		{3, []string{"add-local 10.96.0.1:80/TCP 10.2.0.4:8080 vrf=2 p=1"}},
	}
	for _, s := range steps {
		if err := r.UpdateService(nil, webService("default", "web", 1, s.backends)); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, false)
		if got := fake.takeCalls(); !slices.Equal(got, s.calls) {
			t.Errorf("%d backends: calls:\n%s\nwant:\n%s", s.backends, join(got), join(s.calls))
		}
	}
	if f := r.Failures(); len(f) != 0 {
		t.Errorf("failures: %+v", f)
	}
}

// manyServices is n services with 1 to 12 backends, some with NodePorts
// and external IPs.
func manyServices(n int) []*servicerenderer.ContivService {
	var out []*servicerenderer.ContivService
	for i := range n {
		svc := webService("ns", fmt.Sprintf("svc-%03d", i), i, 1+i%12)
		if i%10 == 5 {
			svc.Ports[0].NodePort = uint16(30000 + i)
		}
		if i%7 == 3 {
			svc.ExternalIPs = ips(fmt.Sprintf("20.0.%d.%d", i>>8, i&0xff))
			svc.ExternalPolicy = servicerenderer.TrafficPolicy(i % 2)
		}
		svc.Ports[0].Backends[0].IP = servicerenderer.IPOf(netip.AddrFrom4([4]byte{10, 1, 1, byte(2 + i%200)}))
		svc.Ports[0].Backends[0].Local = true
		sortBackends(svc.Ports[0].Backends)
		out = append(out, svc)
	}
	return out
}

func TestAgentRestartMakesNoCalls(t *testing.T) {
	svcs := manyServices(300)
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	want := fake.dump()
	if len(fake.takeCalls()) < 300 {
		t.Fatal("first sync programmed too little")
	}

	// The agent restarts: a new renderer, the same cluster state.
	r2 := newTestRenderer(t, testConfig(), fake)
	if err := r2.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("restart against a programmed VPP made %d calls, first %q", len(calls), calls[0])
	}
	if fake.dumps != 2 {
		t.Errorf("%d dumps", fake.dumps)
	}
	// A periodic resync changes nothing either.
	mustApply(t, r2, true)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("periodic resync made %d calls", len(calls))
	}

	// VPP restarts: its state is empty, everything is programmed again.
	fake.state = NewState()
	if err := r2.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	if got := fake.dump(); !slices.Equal(got, want) {
		t.Errorf("after VPP restart:\n%s\nwant:\n%s", join(got), join(want))
	}
	if got := r2.Applied().Lines(); !slices.Equal(got, want) {
		t.Error("applied state differs from VPP's")
	}
}

// A full apply against a VPP that holds what is desired keeps the desired
// mappings and routes as what VPP holds, not the dump's copies of them,
// and so does an apply that adds them: the renderer holds each value once.
func TestAppliedSharesTheDesiredValues(t *testing.T) {
	svcs := manyServices(50)
	fake := newFakeVPP()
	check := func(r *Renderer, when string) {
		t.Helper()
		d, a := r.Desired(), r.Applied()
		if len(d.Mappings) < 50 || len(d.Routes) == 0 {
			t.Fatalf("%s: %d mappings, %d routes desired", when, len(d.Mappings), len(d.Routes))
		}
		for k, m := range d.Mappings {
			if a.Mappings[k] != m {
				t.Errorf("%s: mapping %s applied %p, desired %p: want the desired value", when, k, a.Mappings[k], m)
			}
		}
		for k, rt := range d.Routes {
			if a.Routes[k] != rt {
				t.Errorf("%s: route %s applied %p, desired %p: want the desired value", when, k.Prefix, a.Routes[k], rt)
			}
		}
	}
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	check(r, "programmed")
	r2 := newTestRenderer(t, testConfig(), fake)
	if err := r2.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r2, true)
	check(r2, "restarted against a programmed VPP")
}

func TestForeignMappingsNeverTouched(t *testing.T) {
	fake := newFakeVPP()
	foreign := &Mapping{MappingKey: MappingKey{IP: MustParseIPv4("10.200.0.1"), Port: 80, Proto: servicerenderer.TCP},
		Tag: "other-agent", Locals: []Local{{IP: MustParseIPv4("10.5.5.5"), Port: 80}}}
	squatter := &Mapping{MappingKey: MappingKey{IP: MustParseIPv4("10.96.0.2"), Port: 80, Proto: servicerenderer.TCP},
		Tag: "", Locals: []Local{{IP: MustParseIPv4("10.5.5.6"), Port: 80}}}
	fake.state.Mappings[foreign.MappingKey] = foreign
	fake.state.Mappings[squatter.MappingKey] = squatter
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(webService("default", "a", 1, 2), webService("default", "b", 2, 2))); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	dump := join(fake.dump())
	for _, want := range []string{
		"mapping 10.200.0.1:80/TCP static twice-nat=off tag=other-agent -> 10.5.5.5:80 vrf=0",
		"mapping 10.96.0.2:80/TCP static twice-nat=off tag= -> 10.5.5.6:80 vrf=0",
		"mapping 10.96.0.1:80/TCP lb twice-nat=self affinity=0 tag=contiv:default/a",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("VPP lacks %q:\n%s", want, dump)
		}
	}
	fs := r.Failures()
	if len(fs) != 1 || fs[0].Object.Mapping != squatter.MappingKey || fs[0].Service.Name != "b" ||
		!strings.Contains(fs[0].Reason, "foreign") {
		t.Errorf("failures %+v", fs)
	}
	// Deleting every service leaves the foreign mappings.
	if err := r.Resync(resyncData()); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	if got := fake.dump(); len(got) == 0 || !strings.Contains(join(got), "10.200.0.1:80/TCP") ||
		!strings.Contains(join(got), "10.96.0.2:80/TCP") || strings.Contains(join(got), "10.96.0.1:80") {
		t.Errorf("after deleting every service:\n%s", join(got))
	}
}

func TestInvalidCallsReportedPerObjectAndNotRetried(t *testing.T) {
	fake := newFakeVPP()
	bad := MappingKey{IP: MustParseIPv4("10.96.0.2"), Port: 80, Proto: servicerenderer.TCP}
	fake.reject = func(m *Mapping) bool { return m.MappingKey == bad }
	rec := newLogRecorder()
	r, err := New(Params{Config: testConfig(), VPP: fake, Log: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	svcs := []*servicerenderer.ContivService{webService("default", "a", 1, 2), webService("default", "b", 2, 3), webService("default", "c", 3, 4)}
	if err := r.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(context.Background(), true); err != nil {
		t.Fatalf("invalid calls made Apply fail (the controller would retry): %v", err)
	}
	fs := r.Failures()
	if len(fs) != 1 || fs[0].Object.Mapping != bad || fs[0].Service.Name != "b" || fs[0].Op != OpAddMapping ||
		!strings.Contains(fs[0].Reason, "rejected") {
		t.Fatalf("failures %+v", fs)
	}
	dump := join(fake.dump())
	if !strings.Contains(dump, "10.96.0.1:80/TCP") || !strings.Contains(dump, "10.96.0.3:80/TCP") || strings.Contains(dump, "10.96.0.2:80") {
		t.Errorf("the rest of the batch was not applied:\n%s", dump)
	}
	if st := r.Stats(); st.Invalid != 1 {
		t.Errorf("stats %+v", st)
	}
	fake.takeCalls()

	// Another service changes: the failed one is not retried.
	if err := r.UpdateService(svcs[0], webService("default", "a", 1, 3)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if calls := fake.takeCalls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "add-local 10.96.0.1:80/TCP") {
		t.Errorf("calls %q", calls)
	}
	mustApply(t, r, false)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("idle apply made calls %q", calls)
	}
	// The failed service changes: it is tried again, fails again, once.
	if err := r.UpdateService(svcs[1], webService("default", "b", 2, 4)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if calls := fake.takeCalls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "add-mapping 10.96.0.2:80/TCP") {
		t.Errorf("calls %q", calls)
	}
	if n := rec.count("WARN VPP refused a NAT44 call"); n != 2 {
		t.Errorf("%d warnings for 2 refusals", n)
	}
	// VPP accepts it now: a full resync retries it.
	fake.reject = nil
	mustApply(t, r, true)
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures after resync: %+v", fs)
	}
	if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
	}
}

func TestTransientFailuresConverge(t *testing.T) {
	svcs := manyServices(150)
	ref := newFakeVPP()
	rr := newTestRenderer(t, testConfig(), ref)
	if err := rr.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, rr, true)

	fake := newFakeVPP()
	fake.failRate = 0.1
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(svcs...)); err != nil {
		t.Fatal(err)
	}
	failures := 0
	// Incremental changes keep coming while VPP fails.
	for i, svc := range svcs[:40] {
		if err := r.Apply(context.Background(), i%5 == 0); err != nil {
			failures++
			if errors.Is(err, ErrInvalid) {
				t.Fatalf("transient failure reported as invalid: %v", err)
			}
		}
		next := webService(svc.ID.Namespace, svc.ID.Name, i, 1+(i+3)%12)
		next.Ports[0].NodePort, next.ExternalIPs, next.ExternalPolicy = svc.Ports[0].NodePort, svc.ExternalIPs, svc.ExternalPolicy
		if err := r.UpdateService(svc, next); err != nil {
			t.Fatal(err)
		}
		if err := rr.UpdateService(svc, next); err != nil {
			t.Fatal(err)
		}
	}
	mustApply(t, rr, false)
	if failures == 0 {
		t.Fatal("the fake never failed")
	}
	// The controller's healing resyncs: Apply(true) until it succeeds.
	clean := false
	for range 50 {
		if err := r.Apply(context.Background(), true); err == nil {
			clean = true
			break
		}
	}
	if !clean {
		t.Fatal("never converged")
	}
	fake.failRate = 0
	if got, want := fake.dump(), ref.dump(); !slices.Equal(got, want) {
		t.Errorf("converged state:\n%s\nwant:\n%s", join(got), join(want))
	}
	if got, want := r.Applied().Lines(), ref.dump(); !slices.Equal(got, want) {
		t.Error("applied state differs from VPP's")
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %+v", fs)
	}
	fake.takeCalls()
	mustApply(t, r, true)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("converged state still makes calls: %q", calls)
	}
}

func TestFrontendConflicts(t *testing.T) {
	rec := newLogRecorder()
	fake := newFakeVPP()
	r, err := New(Params{Config: testConfig(), VPP: fake, Log: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Resync(resyncData()); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	// old (created first) and young claim 10.96.0.1:80/TCP; young arrives first.
	old := webService("default", "old", 1, 2)
	young := webService("default", "young", 1, 3)
	old.Created, young.Created = t0, t0.Add(1)
	sameAge := webService("default", "a-same-age", 1, 4)
	sameAge.Created = t0.Add(1)

	if err := r.AddService(young); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if err := r.AddService(old); err != nil {
		t.Fatal(err)
	}
	if err := r.AddService(sameAge); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	ownerTag := regexp.MustCompile(`^mapping 10\.96\.0\.1:80/TCP .* tag=contiv:default/(\S+) `)
	owner := func() string {
		for _, l := range fake.dump() {
			if m := ownerTag.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
		return ""
	}
	if got := owner(); got != "old" {
		t.Errorf("frontend served by %q, want old", got)
	}
	cs := r.Conflicts()
	if len(cs) != 1 || cs[0].Winner.Name != "old" || len(cs[0].Losers) != 2 ||
		cs[0].Losers[0].Name != "a-same-age" || cs[0].Losers[1].Name != "young" {
		t.Fatalf("conflicts %+v", cs)
	}
	// Updates of a loser and resyncs do not log the conflict again.
	fake.takeCalls()
	youngUpdated := webService("default", "young", 1, 5)
	youngUpdated.Created = young.Created
	if err := r.UpdateService(young, youngUpdated); err != nil {
		t.Fatal(err)
	}
	young = youngUpdated
	mustApply(t, r, false)
	if calls := fake.takeCalls(); len(calls) != 0 {
		t.Errorf("a loser's update made calls %q", calls)
	}
	if err := r.Resync(resyncData(young, sameAge, old)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	if n := rec.count("WARN frontend claimed by two services: the oldest wins"); n != 2 {
		t.Errorf("conflict logged %d times, want 2 (once per loser)", n)
	}
	// The winner goes away: the next oldest (then lower ID) takes over.
	if err := r.DeleteService(old); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if got := owner(); got != "a-same-age" {
		t.Errorf("frontend served by %q, want a-same-age", got)
	}
	if err := r.DeleteService(sameAge); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if got := owner(); got != "young" {
		t.Errorf("frontend served by %q, want young", got)
	}
	if cs := r.Conflicts(); len(cs) != 0 {
		t.Errorf("conflicts left: %+v", cs)
	}
	if n := rec.count("INFO frontend conflict resolved"); n != 2 {
		t.Errorf("resolution logged %d times", n)
	}
	if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
	}
}

func TestRecreatedServiceLosesItsFrontend(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	a := webService("default", "a", 1, 2)
	b := webService("default", "b", 1, 3)
	a.Created, b.Created = t0, t0.Add(time.Hour)
	if err := r.Resync(resyncData(a, b)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	if cs := r.Conflicts(); len(cs) != 1 || cs[0].Winner.Name != "a" {
		t.Fatalf("conflicts %+v", cs)
	}
	// a is deleted and created again (the processor may see it as an
	// update): now b is the oldest.
	a2 := webService("default", "a", 1, 2)
	a2.Created = t0.Add(2 * time.Hour)
	if err := r.UpdateService(a, a2); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if cs := r.Conflicts(); len(cs) != 1 || cs[0].Winner.Name != "b" || cs[0].Losers[0].Name != "a" {
		t.Fatalf("conflicts %+v", cs)
	}
	if got := r.Desired().Mappings[MappingKey{IP: MustParseIPv4("10.96.0.1"), Port: 80, Proto: servicerenderer.TCP}]; got == nil || got.Tag != tagPrefix+"default/b" {
		t.Errorf("desired mapping %v", got)
	}
	if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
	}
}

func TestNodeAddressChangeTouchesOnlyNodePorts(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	np := webService("default", "np", 1, 2)
	np.Ports[0].NodePort = 30080
	plain := webService("default", "plain", 2, 2)
	if err := r.Resync(resyncData(np, plain)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	if err := r.UpdateLocalNode(servicerenderer.LocalNode{Name: "master", ID: 1, IPs: ips(nodeIP, "172.30.1.2")}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	want := []string{
		"del-mapping 172.30.1.1:30080/TCP lb twice-nat=on affinity=0 tag=contiv:default/np -> 10.2.0.2:8080 vrf=2 p=1, 10.2.0.3:8080 vrf=2 p=1",
		"add-mapping 172.30.1.2:30080/TCP lb twice-nat=on affinity=0 tag=contiv:default/np -> 10.2.0.2:8080 vrf=2 p=1, 10.2.0.3:8080 vrf=2 p=1",
	}
	if got := fake.takeCalls(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", join(got), join(want))
	}
	// The same addresses again: nothing.
	if err := r.UpdateLocalNode(servicerenderer.LocalNode{Name: "master", ID: 1, IPs: ips(nodeIP, "172.30.1.2")}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if got := fake.takeCalls(); len(got) != 0 {
		t.Errorf("calls %q", got)
	}
	// An IPv6 address joins them (a dual-stack node): NAT44 ignores it.
	if err := r.UpdateLocalNode(servicerenderer.LocalNode{Name: "master", ID: 1, IPs: ips(nodeIP, "172.30.1.2", "2001:db8:16::10")}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if got := fake.takeCalls(); len(got) != 0 {
		t.Errorf("an IPv6 node IP made calls %q", got)
	}
}

// withPodInterface is a renderer, fully applied, with the pod interface
// tap1 (frontend and backend).
func withPodInterface(t *testing.T) (*fakeVPP, *Renderer) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	data := resyncData()
	data.Interfaces["tap1"] = servicerenderer.RoleFrontend | servicerenderer.RoleBackend
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	return fake, r
}

func TestVanishedInterface(t *testing.T) {
	fake, r := withPodInterface(t)
	// The pod is deleted: its interface leaves VPP before the agent removes
	// its features.
	fake.missing = map[string]bool{"tap1": true, "tap2": true}
	if err := r.UpdateInterface("tap1", 0); err != nil {
		t.Fatal(err)
	}
	// An interface VPP lacks cannot get features yet: they wait for it,
	// which is no failure.
	if err := r.UpdateInterface("tap2", servicerenderer.RoleFrontend); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if _, ok := r.Applied().Interfaces["tap1"]; ok {
		t.Error("removed interface still applied")
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %+v", fs)
	}
	if p := r.Pending(); len(p) != 1 || p[0].Name != "tap2" || p[0].Features != FeatureOut {
		t.Errorf("pending %+v", p)
	}
}

// A loss of an interface delivered after a full apply set the features of
// the interface that took its name (another index) changes nothing; the
// loss of the interface the renderer configured still counts.
func TestLateInterfaceLoss(t *testing.T) {
	fake, r := withPodInterface(t)
	want := fake.state.Interfaces["tap1"]
	old := fake.recreate("tap1") // VPP restarted, say
	mustApply(t, r, true)
	fake.takeCalls()

	r.InterfaceLost("tap1", old)
	mustApply(t, r, false)
	if got := fake.takeCalls(); len(got) != 0 {
		t.Errorf("a late loss of the old interface made calls %q", got)
	}
	r.InterfaceLost("tap1", fake.recreate("tap1"))
	mustApply(t, r, false)
	if got := fake.takeCalls(); len(got) != 1 {
		t.Errorf("the loss of the configured interface made calls %q, want one", got)
	}
	if got := fake.state.Interfaces["tap1"]; got != want {
		t.Errorf("tap1 has features %s, want %s", got, want)
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %+v", fs)
	}
}

func TestIncrementalBeforeFullApplyIsFull(t *testing.T) {
	fake := newFakeVPP()
	fake.state.Mappings[lbMapping(2).MappingKey] = lbMapping(2) // stale, owned
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.AddService(webService("default", "x", 5, 2)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	if fake.dumps != 1 {
		t.Errorf("%d dumps", fake.dumps)
	}
	if got, want := fake.dump(), r.Desired().Lines(); !slices.Equal(got, want) {
		t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
	}
}

func TestDumpFailureLeavesStateAlone(t *testing.T) {
	fake := newFakeVPP()
	fake.failRate = 1
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(webService("default", "x", 5, 2))); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(context.Background(), true); err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply = %v, want a transient error", err)
	}
	if len(fake.takeCalls()) != 0 || len(r.Applied().Mappings) != 0 {
		t.Error("calls made or applied state changed without a dump")
	}
}

func TestIntrospectionReturnsCopies(t *testing.T) {
	fake := newFakeVPP()
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(webService("default", "x", 5, 2))); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	d, a := r.Desired(), r.Applied()
	clear(d.Mappings)
	clear(a.Interfaces)
	if len(r.Desired().Mappings) != 1 || len(r.Applied().Interfaces) == 0 {
		t.Error("introspection exposed the renderer's maps")
	}
}

// TestIncrementalEqualsResync: after any sequence of changes applied
// incrementally, VPP holds what a fresh agent would program from the final
// state, and a full resync then makes no call.
func TestIncrementalEqualsResync(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		// A weight of 200 serves a frontend with 2 local endpoints and
		// others by a subset (MaxProbabilitySum), one of 100 with 3.
		cfg.LocalEndpointWeight = uint8(rapid.SampledFrom([]int{1, 2, 3, 100, 200}).Draw(t, "weight"))
		fake := newFakeVPP()
		r := newTestRenderer(t, cfg, fake)
		data := resyncData()
		if err := r.Resync(data); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, true)
		services := map[servicerenderer.ServiceID]*servicerenderer.ContivService{}
		roles := maps.Clone(data.Interfaces)
		node := data.Node
		genBackend := rapid.Custom(func(t *rapid.T) servicerenderer.Backend {
			n := rapid.IntRange(0, 7).Draw(t, "backend")
			switch {
			case n < 3:
				return be(fmt.Sprintf("10.1.1.%d", 3+n), 8080, "local")
			case n < 6:
				return be(fmt.Sprintf("10.2.1.%d", n), 8080)
			case n == 6:
				return be(nodeIP, 8080, "local", "host")
			}
			return be("fd00::5", 8080)
		})
		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1, 2, 3, 4, 5:
				name := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "name")
				ip := rapid.SampledFrom([]string{"10.96.0.1", "10.96.0.2", "10.96.0.3"}).Draw(t, "clusterIP")
				bs := rapid.SliceOfN(genBackend, 0, 5).Draw(t, "backends")
				p := port("http", 80, uint16(rapid.SampledFrom([]int{0, 30080}).Draw(t, "nodePort")), bs...)
				svc := service("default", name, rapid.IntRange(0, 2).Draw(t, "age"), ip, p)
				if rapid.Bool().Draw(t, "external") {
					svc.ExternalIPs = ips("20.0.0.1")
				}
				svc.ExternalPolicy = servicerenderer.TrafficPolicy(rapid.IntRange(0, 1).Draw(t, "etp"))
				svc.InternalPolicy = servicerenderer.TrafficPolicy(rapid.IntRange(0, 1).Draw(t, "itp"))
				svc.AffinityTimeout = uint32(rapid.SampledFrom([]int{0, 10800}).Draw(t, "affinity"))
				var err error
				if prev := services[svc.ID]; prev != nil {
					err = r.UpdateService(prev, svc)
				} else {
					err = r.AddService(svc)
				}
				if err != nil {
					t.Fatal(err)
				}
				services[svc.ID] = svc
			case 6:
				id := servicerenderer.ServiceID{Namespace: "default", Name: rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "delete")}
				if svc := services[id]; svc != nil {
					if err := r.DeleteService(svc); err != nil {
						t.Fatal(err)
					}
					delete(services, id)
				}
			case 7:
				name := rapid.SampledFrom([]string{"tap1", "tap2", "GbE"}).Draw(t, "interface")
				role := servicerenderer.InterfaceRole(rapid.IntRange(0, 3).Draw(t, "role"))
				if err := r.UpdateInterface(name, role); err != nil {
					t.Fatal(err)
				}
				if role == 0 {
					delete(roles, name)
				} else {
					roles[name] = role
				}
			case 8:
				node = servicerenderer.LocalNode{Name: "master", IPs: ips(rapid.SampledFrom([]string{nodeIP, "192.168.16.11"}).Draw(t, "nodeIP"))}
				if err := r.UpdateLocalNode(node); err != nil {
					t.Fatal(err)
				}
			case 9:
			}
			if rapid.Bool().Draw(t, fmt.Sprintf("apply-%d", i)) {
				mustApply(t, r, false)
			}
		}
		mustApply(t, r, false)
		if fs := r.Failures(); len(fs) != 0 {
			t.Fatalf("failures %+v", fs)
		}

		fresh := newFakeVPP()
		r2 := newTestRenderer(t, cfg, fresh)
		final := &servicerenderer.ResyncData{Interfaces: roles, Node: node}
		for _, svc := range services {
			final.Services = append(final.Services, svc)
		}
		slices.SortFunc(final.Services, func(a, b *servicerenderer.ContivService) int { return strings.Compare(a.ID.Name, b.ID.Name) })
		if err := r2.Resync(final); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r2, true)
		if got, want := fake.dump(), fresh.dump(); !slices.Equal(got, want) {
			t.Fatalf("incremental:\n%s\nresync:\n%s", join(got), join(want))
		}
		if got, want := r.Desired().Lines(), r2.Desired().Lines(); !slices.Equal(got, want) {
			t.Fatalf("desired incremental:\n%s\nresync:\n%s", join(got), join(want))
		}
		if got, want := r.Subsets(), wantSubsets(final, cfg); !slices.Equal(got, want) {
			t.Fatalf("subsets incremental %+v, built %+v", got, want)
		}
		if got, want := r2.Subsets(), wantSubsets(final, cfg); !slices.Equal(got, want) {
			t.Fatalf("subsets resynced %+v, built %+v", got, want)
		}
		fake.takeCalls()
		if err := r.Resync(final); err != nil {
			t.Fatal(err)
		}
		mustApply(t, r, true)
		if calls := fake.takeCalls(); len(calls) != 0 {
			t.Fatalf("resync after incremental changes made calls %q", calls)
		}
	})
}

// TestHealthCheckFollowsNodeAddresses: a service whose only node-dependent
// mapping is its health-check NodePort follows this node's addresses.
func TestHealthCheckFollowsNodeAddresses(t *testing.T) {
	fake := newFakeVPP()
	cfg := testConfig()
	cfg.HealthCheckTarget = netip.MustParseAddr("172.30.9.2")
	r := newTestRenderer(t, cfg, fake)
	hc := webService("default", "hc", 1, 2)
	hc.ExternalPolicy, hc.HealthCheckNodePort = servicerenderer.PolicyLocal, 32000
	if err := r.Resync(resyncData(hc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	fake.takeCalls()
	if err := r.UpdateLocalNode(servicerenderer.LocalNode{Name: "master", ID: 1, IPs: ips(nodeIP, "172.30.1.2")}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, false)
	want := []string{
		"del-mapping 172.30.1.1:32000/TCP lb twice-nat=on affinity=0 tag=contiv:default/hc -> 0.0.0.0:0 vrf=0 p=0, 172.30.9.2:32000 vrf=1 p=1",
		"add-mapping 172.30.1.2:32000/TCP lb twice-nat=on affinity=0 tag=contiv:default/hc -> 0.0.0.0:0 vrf=0 p=0, 172.30.9.2:32000 vrf=1 p=1",
	}
	if got := fake.takeCalls(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", join(got), join(want))
	}
}

// wantSubsets are the frontends of data's services served by a subset of
// their endpoints, as the services' mappings are built one by one: a
// frontend several services claim is the oldest's.
func wantSubsets(data *servicerenderer.ResyncData, cfg Config) []SubsetStatus {
	svcs := slices.Clone(data.Services)
	slices.SortStableFunc(svcs, func(a, b *servicerenderer.ContivService) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID.Namespace, b.ID.Namespace), cmp.Compare(a.ID.Name, b.ID.Name))
	})
	claimed := map[MappingKey]bool{}
	out := []SubsetStatus{}
	for _, svc := range svcs {
		cut := map[MappingKey]Subset{}
		for _, m := range appendService(nil, svc, data.Node, &cfg, "", func(k MappingKey, s Subset) { cut[k] = s }) {
			if claimed[m.MappingKey] {
				continue
			}
			claimed[m.MappingKey] = true
			if s, ok := cut[m.MappingKey]; ok {
				out = append(out, SubsetStatus{Frontend: m.MappingKey, Service: svc.ID, Subset: s})
			}
		}
	}
	slices.SortFunc(out, func(a, b SubsetStatus) int { return compareMappingKeys(a.Frontend, b.Frontend) })
	return out
}
