package readiness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/controller"
)

// observed is inner's apply step watched by obs, as the controller runs
// it (controller.Observe).
type observed struct {
	inner controller.Applier
	obs   []controller.ApplyObserver
}

func (o observed) Apply(ctx context.Context, full bool) error {
	return controller.Observe(o.obs, full, func() error { return o.inner.Apply(ctx, full) })
}

type applyFunc func(context.Context, bool) error

func (f applyFunc) Apply(ctx context.Context, full bool) error { return f(ctx, full) }

func TestReadinessFollowsVPP(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []Waiting
	r := &Tracker{Grace: 3 * time.Second, Pending: func() []Waiting { return waits }}
	var lostDuringApply bool
	fail := false
	app := observed{obs: []controller.ApplyObserver{&Observer{Tracker: r}}, inner: applyFunc(func(context.Context, bool) error {
		if lostDuringApply {
			r.VPPLost("disconnected") // VPP goes away while the apply runs
		}
		if fail {
			return errors.New("VPP said no")
		}
		return nil
	})}
	ready := func() []string { return r.Reasons(true, true, now) }

	if got := ready(); len(got) != 0 {
		t.Fatalf("fresh readiness not ready: %v", got)
	}
	if got := r.Reasons(false, false, now); len(got) != 2 {
		t.Errorf("before the first sync and without VPP: %v, want two reasons", got)
	}
	r.VPPLost("restarted")
	if got := ready(); len(got) != 1 || !strings.Contains(got[0], "VPP restarted") {
		t.Fatalf("after a VPP restart: %v", got)
	}
	_ = app.Apply(context.Background(), false)
	if len(ready()) == 0 {
		t.Error("an incremental apply made a restarted VPP trusted")
	}
	fail = true
	_ = app.Apply(context.Background(), true)
	if len(ready()) == 0 {
		t.Error("a failed full apply made a restarted VPP trusted")
	}
	fail, lostDuringApply = false, true
	_ = app.Apply(context.Background(), true)
	if len(ready()) == 0 {
		t.Error("a full apply during which VPP was lost again made it trusted")
	}
	lostDuringApply = false
	_ = app.Apply(context.Background(), true)
	if got := ready(); len(got) != 0 {
		t.Errorf("after a successful full apply: %v", got)
	}

	waits = []Waiting{{Name: "GigabitEthernet0/8/0", Since: now.Add(-time.Second)}}
	if got := ready(); len(got) != 0 {
		t.Errorf("an interface pending within the grace: %v", got)
	}
	waits[0].Since = now.Add(-5 * time.Second)
	if got := ready(); len(got) != 1 || !strings.Contains(got[0], "waiting for interface GigabitEthernet0/8/0 for 5s") {
		t.Errorf("an interface pending past the grace: %v", got)
	}

	// After a VPP restart, the reprogram is done only once the interfaces
	// it left pending are back, grace or not.
	waits = []Waiting{{Name: "tap0", Since: now.Add(-time.Second)}}
	r.VPPLost("restarted")
	_ = app.Apply(context.Background(), true)
	if got := ready(); len(got) != 1 || !strings.Contains(got[0], "VPP restarted: waiting for it to re-create interface tap0") {
		t.Errorf("reprogrammed with an interface pending: %v", got)
	}
	waits = nil
	if got := ready(); len(got) != 0 {
		t.Errorf("reprogrammed, nothing pending: %v", got)
	}
	waits = []Waiting{{Name: "tap0", Since: now.Add(-time.Second)}}
	if got := ready(); len(got) != 0 {
		t.Errorf("an interface pending within the grace after the reprogram was complete: %v", got)
	}
}

// TestReadinessWaitsForHeldMappings: after a VPP restart, the reprogram
// is complete only once the NAT44 mappings held for the node's interface
// features are applied too, even when no interface is pending any more
// (the apply that releases them runs after the features' answers).
func TestReadinessWaitsForHeldMappings(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held := 0
	r := &Tracker{Grace: 3 * time.Second, Held: func() int { return held }}
	app := observed{obs: []controller.ApplyObserver{&Observer{Tracker: r}}, inner: applyFunc(func(context.Context, bool) error { return nil })}
	r.VPPLost("restarted")
	held = 11021
	_ = app.Apply(context.Background(), true)
	if got := r.Reasons(true, true, now); len(got) != 1 || !strings.Contains(got[0], "11021 NAT44 mappings wait") {
		t.Errorf("mappings held: %v", got)
	}
	held = 0
	if got := r.Reasons(true, true, now); len(got) != 0 {
		t.Errorf("mappings applied: %v", got)
	}
}
