package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type applyFunc func(context.Context, bool) error

func (f applyFunc) Apply(ctx context.Context, full bool) error { return f(ctx, full) }

func TestReadinessFollowsVPP(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []waiting
	r := &readiness{grace: 3 * time.Second, pending: func() []waiting { return waits }}
	var lostDuringApply bool
	fail := false
	app := readyApplier{r: r, inner: applyFunc(func(context.Context, bool) error {
		if lostDuringApply {
			r.vppLost("disconnected") // VPP goes away while the apply runs
		}
		if fail {
			return errors.New("VPP said no")
		}
		return nil
	})}
	ready := func() []string { return r.reasons(true, true, now) }

	if got := ready(); len(got) != 0 {
		t.Fatalf("fresh readiness not ready: %v", got)
	}
	if got := r.reasons(false, false, now); len(got) != 2 {
		t.Errorf("before the first sync and without VPP: %v, want two reasons", got)
	}
	r.vppLost("restarted")
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

	waits = []waiting{{Name: "GigabitEthernet0/8/0", Since: now.Add(-time.Second)}}
	if got := ready(); len(got) != 0 {
		t.Errorf("an interface pending within the grace: %v", got)
	}
	waits[0].Since = now.Add(-5 * time.Second)
	if got := ready(); len(got) != 1 || !strings.Contains(got[0], "waiting for interface GigabitEthernet0/8/0 for 5s") {
		t.Errorf("an interface pending past the grace: %v", got)
	}

	// After a VPP restart, the reprogram is done only once the interfaces
	// it left pending are back, grace or not.
	waits = []waiting{{Name: "tap0", Since: now.Add(-time.Second)}}
	r.vppLost("restarted")
	_ = app.Apply(context.Background(), true)
	if got := ready(); len(got) != 1 || !strings.Contains(got[0], "VPP restarted: waiting for it to re-create interface tap0") {
		t.Errorf("reprogrammed with an interface pending: %v", got)
	}
	waits = nil
	if got := ready(); len(got) != 0 {
		t.Errorf("reprogrammed, nothing pending: %v", got)
	}
	waits = []waiting{{Name: "tap0", Since: now.Add(-time.Second)}}
	if got := ready(); len(got) != 0 {
		t.Errorf("an interface pending within the grace after the reprogram was complete: %v", got)
	}
}
