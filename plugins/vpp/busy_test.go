package vpp

import (
	"context"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestBusyVPPIsNotDead (issue 34, F3, seen on a real VPP 25.02 at
// W(10000)): while VPP's main thread walks the mappings for feature
// enables, one call after another, it answers no health probe in time;
// it answers the calls, so the connection is alive and must be kept.
// Before: three probe timeouts in a row dropped it mid-apply.
func TestBusyVPPIsNotDead(t *testing.T) {
	ev := newEvents()
	walk := 100 * time.Millisecond
	v, _, n := socketEnv(t, sim.Options{FeatureWalk: sim.FeatureWalk{Add: walk, Del: walk}}, Config{
		OnEvent: ev.add, HealthInterval: 20 * time.Millisecond, HealthTimeout: 20 * time.Millisecond,
		RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond,
	})
	if e := ev.next(t); e.Kind != Connected {
		t.Fatalf("first event %+v", e)
	}
	if _, err := v.AddInterface("up0", ""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m := &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.IPv4{10, 96, 0, byte(i + 1)}, Port: 80, Proto: servicerenderer.TCP},
			Locals: []nat44.Local{{IP: nat44.IPv4{10, 1, 1, byte(i + 2)}, Port: 8080, VRF: 1}}, Tag: "contiv-test"}
		if err := n.AddDelMapping(ctx, m, true); err != nil {
			t.Fatal(err)
		}
	}
	// Each change of the outside feature walks 3 mappings: 0.3 s busy, 2.4 s in all.
	features := nat44.Features(0)
	for range 8 {
		next := features ^ nat44.FeatureOut
		if err := setFeatures(ctx, n, "up0", features, next); err != nil {
			t.Fatalf("feature change while VPP is busy: %v", err)
		}
		features = next
	}
	for ev.pending() {
		if e := ev.next(t); e.Kind == Disconnected {
			t.Fatalf("the connection to a busy VPP that answered every call was dropped: %+v", e)
		}
	}
	if st := n.conn.Status(); st.Connects != 1 || !st.Connected {
		t.Errorf("status %+v, want one connection, still connected", st)
	}
}

// TestInFlightSettles: every call counted in flight is counted finished,
// whether answered, broken or dropped with its pipeline, so that a VPP
// that stops answering is not taken for a busy one for ever.
func TestInFlightSettles(t *testing.T) {
	ctx := context.Background()
	_, srv, n := socketEnv(t, sim.Options{}, Config{CallTimeout: 300 * time.Millisecond, HealthInterval: time.Hour})
	if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	// Answered: half the calls read, the rest dropped by Close.
	p, err := n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ops := pipelineOps()[:40]
	for i := range ops {
		_ = p.Send(&ops[i])
	}
	for range 20 {
		_ = p.Recv()
	}
	p.Close()
	if got := n.conn.inflight.Load(); got != 0 {
		t.Errorf("after a pipeline closed with answers unread: %d calls in flight, want 0", got)
	}
	// Broken: the socket goes away under a pipeline.
	p, err = n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Send(&ops[0])
	_ = srv.Close()
	for i := range ops[1:] {
		_ = p.Send(&ops[1+i])
	}
	for range 10 {
		_ = p.Recv()
	}
	p.Close()
	if got := n.conn.inflight.Load(); got != 0 {
		t.Errorf("after a broken pipeline: %d calls in flight, want 0", got)
	}
}
