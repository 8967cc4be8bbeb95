package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
)

type applyFunc func(context.Context, bool) error

func (f applyFunc) Apply(ctx context.Context, full bool) error { return f(ctx, full) }

func TestReadinessFollowsVPP(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []waiting
	r := &readiness{grace: 3 * time.Second, pending: func() []waiting { return waits }}
	var lostDuringApply bool
	fail := false
	app := observed{obs: []controller.ApplyObserver{&readyObserver{r: r}}, inner: applyFunc(func(context.Context, bool) error {
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

// TestReadinessWaitsForHeldMappings: after a VPP restart, the reprogram
// is complete only once the NAT44 mappings held for the node's interface
// features are applied too, even when no interface is pending any more
// (the apply that releases them runs after the features' answers).
func TestReadinessWaitsForHeldMappings(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held := 0
	r := &readiness{grace: 3 * time.Second, held: func() int { return held }}
	app := observed{obs: []controller.ApplyObserver{&readyObserver{r: r}}, inner: applyFunc(func(context.Context, bool) error { return nil })}
	r.vppLost("restarted")
	held = 11021
	_ = app.Apply(context.Background(), true)
	if got := r.reasons(true, true, now); len(got) != 1 || !strings.Contains(got[0], "11021 NAT44 mappings wait") {
		t.Errorf("mappings held: %v", got)
	}
	held = 0
	if got := r.reasons(true, true, now); len(got) != 0 {
		t.Errorf("mappings applied: %v", got)
	}
}

func TestStartupTimeoutFailsHealth(t *testing.T) {
	cfg := contivconf.Defaults()
	cfg.Controller.StartupTimeout = contivconf.Duration(time.Minute)
	a := &Agent{cfg: cfg, plan: &addrplan.Plan{NodeInterconnectIP: netip.MustParsePrefix("192.168.16.1/24")}, rd: &readiness{}}
	now := time.Now()
	if err := a.startupHealth(now); err != nil {
		t.Errorf("before Run: %v", err)
	}
	a.startedAt.Store(now.Add(-30 * time.Second).UnixNano())
	if err := a.startupHealth(now); err != nil {
		t.Errorf("within the startup timeout: %v", err)
	}
	a.startedAt.Store(now.Add(-2 * time.Minute).UnixNano())
	err := a.startupHealth(now)
	if err == nil || !strings.Contains(err.Error(), "controller.startupTimeout") || !strings.Contains(err.Error(), "192.168.16.1") {
		t.Errorf("past the startup timeout, not ready: %v", err)
	}
	a.everReady.Store(true)
	if err := a.startupHealth(now); err != nil {
		t.Errorf("once ready, the start is over: %v", err)
	}
}

// recordHandler is a slog.Handler that keeps every record.
type recordHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// take returns the records kept since the last take, as "LEVEL msg
// key=value ...".
func (h *recordHandler) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		out = append(out, s)
	}
	h.recs = nil
	return out
}

// TestHealthTurnsLogged (issue 37): the agent logs why /healthz fails
// once when it turns bad, once more when it recovers, and names the reason
// when it stops while failing (the kubelet's liveness probe stops it).
func TestHealthTurnsLogged(t *testing.T) {
	cfg := contivconf.Defaults()
	cfg.Controller.StartupTimeout = contivconf.Duration(time.Minute)
	rec := &recordHandler{}
	a := &Agent{cfg: cfg, log: slog.New(rec), plan: &addrplan.Plan{NodeInterconnectIP: netip.MustParsePrefix("192.168.16.1/24")}, rd: &readiness{},
		health: healthWatch{log: slog.New(rec)}}
	now := time.Now()
	a.startedAt.Store(now.Add(-30 * time.Second).UnixNano())
	if err := a.healthz(now); err != nil || len(rec.take()) != 0 {
		t.Fatalf("healthy within the startup timeout: %v, logged %v", err, rec.take())
	}
	a.startedAt.Store(now.Add(-2 * time.Minute).UnixNano())
	for range 3 {
		if err := a.healthz(now); err == nil {
			t.Fatal("healthy past the startup timeout, not ready")
		}
	}
	got := rec.take()
	if len(got) != 1 || !strings.HasPrefix(got[0], "ERROR /healthz fails") || !strings.Contains(got[0], "reason=") || !strings.Contains(got[0], "192.168.16.1") {
		t.Errorf("health turned bad, answered three times; logged %q, want one error with the reason", got)
	}
	a.logStopped()
	if got := rec.take(); len(got) != 1 || !strings.HasPrefix(got[0], "WARN agent stopped while /healthz failed") || !strings.Contains(got[0], "controller.startupTimeout") {
		t.Errorf("stopped while unhealthy; logged %q, want the reason", got)
	}
	a.everReady.Store(true)
	for range 2 {
		if err := a.healthz(now); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.take(); len(got) != 1 || !strings.HasPrefix(got[0], "INFO /healthz healthy again") {
		t.Errorf("health recovered; logged %q, want it once", got)
	}
	a.logStopped()
	if got := rec.take(); len(got) != 1 || got[0] != "INFO agent stopped" {
		t.Errorf("stopped while healthy; logged %q", got)
	}
}
