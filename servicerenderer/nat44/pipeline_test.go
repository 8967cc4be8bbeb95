package nat44

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"contiv.dev/vpp/servicerenderer"
)

// pipelinedFake is fakeVPP with a Pipeline: each call is executed when
// sent (VPP executes in arrival order) and its result handed out by Recv,
// oldest first. It records how many calls were in flight at most.
type pipelinedFake struct {
	*fakeVPP
	results     []error
	maxInFlight int
	opened      int
}

func (p *pipelinedFake) Pipeline(context.Context) (Pipeline, error) {
	p.opened++
	return p, nil
}

func (p *pipelinedFake) Send(op *Op) error {
	if !Pipelined(op.Kind) {
		return errors.New("not a pipelined kind: " + op.Kind.String())
	}
	p.results = append(p.results, Call(context.Background(), p.fakeVPP, op))
	p.maxInFlight = max(p.maxInFlight, len(p.results))
	return nil
}

func (p *pipelinedFake) Recv() error {
	if len(p.results) == 0 {
		return errors.New("Recv with nothing in flight")
	}
	err := p.results[0]
	p.results = p.results[1:]
	return err
}

func (p *pipelinedFake) Close() { p.results = nil }

// TestPipelinedApplyMatchesSynchronous runs the same changes through a
// synchronous and a pipelined renderer over fakes that fail the same
// calls, transiently and as invalid: the calls made, their order, the
// failures, the counters and the resulting state are the same, and the
// pipelined one kept many calls in flight.
func TestPipelinedApplyMatchesSynchronous(t *testing.T) {
	bad := MappingKey{IP: MustParseIPv4("10.96.0.7"), Port: 80, Proto: servicerenderer.TCP}
	reject := func(m *Mapping) bool { return m.MappingKey == bad }
	syncFake, pipeFake := newFakeVPP(), &pipelinedFake{fakeVPP: newFakeVPP()}
	for _, f := range []*fakeVPP{syncFake, pipeFake.fakeVPP} {
		f.failRate, f.reject = 0.05, reject
	}
	rs, rp := newTestRenderer(t, testConfig(), syncFake), newTestRenderer(t, testConfig(), pipeFake)
	svcs := manyServices(120)
	for _, r := range []*Renderer{rs, rp} {
		if err := r.Resync(resyncData(svcs...)); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(full bool) {
		t.Helper()
		es, ep := rs.Apply(context.Background(), full), rp.Apply(context.Background(), full)
		if (es == nil) != (ep == nil) {
			t.Fatalf("synchronous apply: %v; pipelined: %v", es, ep)
		}
	}
	apply(true)
	for i, svc := range svcs[:30] {
		next := webService(svc.ID.Namespace, svc.ID.Name, i, 1+(i+5)%9)
		next.Ports[0].NodePort, next.ExternalIPs, next.ExternalPolicy = svc.Ports[0].NodePort, svc.ExternalIPs, svc.ExternalPolicy
		for _, r := range []*Renderer{rs, rp} {
			if err := r.UpdateService(svc, next); err != nil {
				t.Fatal(err)
			}
		}
		apply(i%7 == 0)
	}
	apply(true)
	if got, want := pipeFake.takeCalls(), syncFake.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("pipelined calls differ: %d calls, synchronous %d", len(got), len(want))
	}
	if got, want := rp.Failures(), rs.Failures(); !slices.EqualFunc(got, want, func(a, b Failure) bool {
		return a.Object == b.Object && a.Op == b.Op && a.Service == b.Service && a.Reason == b.Reason
	}) || len(got) == 0 {
		t.Errorf("failures: pipelined %+v, synchronous %+v", got, want)
	}
	if got, want := rp.Stats(), rs.Stats(); got != want {
		t.Errorf("stats: pipelined %+v, synchronous %+v", got, want)
	}
	if got, want := rp.Applied().Lines(), rs.Applied().Lines(); !slices.Equal(got, want) {
		t.Error("applied states differ")
	}
	if got, want := pipeFake.dump(), syncFake.dump(); !slices.Equal(got, want) {
		t.Error("VPP states differ")
	}
	if pipeFake.opened == 0 || pipeFake.maxInFlight < 10 {
		t.Errorf("pipelines opened %d, at most %d calls in flight", pipeFake.opened, pipeFake.maxInFlight)
	}
}

// TestPipelineWaitsForTheObject checks the per-object rule: an object's
// operation is not sent while the object's earlier one is in flight, and
// is skipped when that one failed.
func TestPipelineWaitsForTheObject(t *testing.T) {
	pf := &orderFake{pipelinedFake: pipelinedFake{fakeVPP: newFakeVPP()}}
	r := newTestRenderer(t, testConfig(), pf)
	svc := webService("default", "a", 1, 3)
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	// 3 -> 6 backends: three add-local calls on one mapping.
	if err := r.UpdateService(svc, webService("default", "a", 1, 6)); err != nil {
		t.Fatal(err)
	}
	pf.takeCalls()
	mustApply(t, r, false)
	if pf.violations != 0 {
		t.Errorf("%d operations sent while their object had one in flight", pf.violations)
	}
	calls := pf.takeCalls()
	if len(calls) < 3 {
		t.Fatalf("calls %q", calls)
	}
	// The first local add of the next change fails: the others are skipped.
	if err := r.UpdateService(svc, webService("default", "a", 1, 9)); err != nil {
		t.Fatal(err)
	}
	pf.failNext = true
	if err := r.Apply(context.Background(), false); err == nil {
		t.Fatal("a failed call did not fail the apply")
	}
	if calls := pf.takeCalls(); len(calls) != 1 {
		t.Errorf("after a failure the object's later operations were sent: %q", calls)
	}
}

// orderFake counts operations sent while their object has one in flight,
// and can fail the next call transiently.
type orderFake struct {
	pipelinedFake
	inflight   []ObjectID
	violations int
	failNext   bool
}

func (o *orderFake) Pipeline(context.Context) (Pipeline, error) { return o, nil }

func (o *orderFake) Send(op *Op) error {
	if slices.Contains(o.inflight, op.Object()) {
		o.violations++
	}
	o.inflight = append(o.inflight, op.Object())
	if o.failNext {
		o.failNext = false
		o.fakeVPP.calls = append(o.fakeVPP.calls, op.String())
		o.results = append(o.results, errTransient)
		return nil
	}
	return o.pipelinedFake.Send(op)
}

func (o *orderFake) Recv() error {
	o.inflight = o.inflight[1:]
	return o.pipelinedFake.Recv()
}

// A full apply of more calls than the run keeps in flight records the
// oldest answers as it goes: at most 1024 calls wait for theirs, and all
// are made.
func TestPipelinedApplyBoundsCallsInFlight(t *testing.T) {
	fake := &pipelinedFake{fakeVPP: newFakeVPP()}
	r := newTestRenderer(t, testConfig(), fake)
	if err := r.Resync(resyncData(manyServices(1500)...)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	if n := len(fake.takeCalls()); n < 1500 || fake.maxInFlight > 1024 {
		t.Errorf("%d calls, at most %d in flight; want every service's, at most 1024", n, fake.maxInFlight)
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Errorf("failures %v", fs)
	}
}

// A run keys each step by its object: two steps share a key exactly when
// their Op.Object is the same (every pair of a set of operations varying
// each field an object holds).
func TestRunKeyIsTheObject(t *testing.T) {
	var ops []Op
	for k := OpSetGlobal; k <= OpAddMapping; k++ {
		for _, ip := range []netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.2")} {
			for n := range 2 {
				for bits := 31; bits <= 32; bits++ {
					for _, twice := range []bool{false, true} {
						for _, name := range []string{"a", "b"} {
							proto := servicerenderer.TCP
							if twice {
								proto = servicerenderer.UDP
							}
							ops = append(ops, Op{Kind: k, Pool: PoolAddress{IP: ip, VRF: uint32(n), TwiceNAT: twice}, Interface: name,
								Identity: &Identity{IdentityKey: IdentityKey{IP: ip, Port: uint16(bits), Proto: proto, VRF: uint32(n)}},
								Route:    Route{RouteKey: RouteKey{Prefix: MustIPv4Prefix(netip.PrefixFrom(ip, bits)), VRF: uint32(n)}},
								Mapping:  &Mapping{MappingKey: MappingKey{IP: MustIPv4(ip), Port: uint16(bits), Proto: servicerenderer.Protocol(n)}}})
						}
					}
				}
			}
		}
	}
	var x runner
	for i := range ops {
		for j := range ops {
			a, b := &ops[i], &ops[j]
			if same, want := x.Object(&step{Op: *a}) == x.Object(&step{Op: *b}), a.Object() == b.Object(); same != want {
				t.Fatalf("%s and %s: same run key %v, same object %v", a.String(), b.String(), same, want)
			}
		}
	}
}
