package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/readiness"
	"contiv.dev/vpp/contivconf"
)

func TestStartupTimeoutFailsHealth(t *testing.T) {
	cfg := contivconf.Defaults()
	cfg.Controller.StartupTimeout = contivconf.Duration(time.Minute)
	a := &Agent{cfg: cfg, plan: &addrplan.Plan{NodeInterconnectIP: netip.MustParsePrefix("192.168.16.1/24")}, rd: &readiness.Tracker{}}
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
	a := &Agent{cfg: cfg, log: slog.New(rec), plan: &addrplan.Plan{NodeInterconnectIP: netip.MustParsePrefix("192.168.16.1/24")}, rd: &readiness.Tracker{},
		health: readiness.HealthWatch{Log: slog.New(rec)}}
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
