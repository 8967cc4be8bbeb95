package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp"
)

// local0Tag is the tag of the simulated VPP's local0.
func (h *harness) local0Tag() string {
	for _, i := range h.vpp.Interfaces() {
		if i.Index == 0 {
			return i.Tag
		}
	}
	return ""
}

// markOwner tags the simulated VPP's local0 over its socket, as another
// agent would; the harness's agent must be stopped.
func (h *harness) markOwner(tag string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // bounds a hung test only (a loaded machine reconnects slowly)
	defer cancel()
	c := vpp.New(vpp.Config{Socket: h.srv.Path(), HealthInterval: time.Minute})
	c.Start(ctx)
	defer c.Close()
	// A VPP restarted a moment ago may still be replacing its socket.
	for {
		err := c.WaitConnected(ctx)
		if err == nil {
			if err = c.MarkOwner(ctx, tag); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			h.t.Fatalf("marking VPP as another agent's: %v", err)
		}
		time.Sleep(pollEvery)
	}
}

// TestOneVPPOneOwner: the agent marks the VPP it programs; against a VPP
// another agent marked it programs nothing and is not ready, naming the
// other owner; vpp.takeOver makes it take VPP over.
func TestOneVPPOneOwner(t *testing.T) {
	srv := etcdtest.Start(t)
	h := newHarness(t, srv.Endpoint(), testConfig(t, srv.Endpoint(), t.TempDir()))
	defer h.close()
	mine := vpp.OwnerTag(h.agent.cluster, "node-1")
	if got := h.local0Tag(); got != mine {
		t.Fatalf("local0 tagged %q after the first programming, want %q", got, mine)
	}

	// Another agent's VPP (restarted: empty), marked by it.
	h.stopAgent()
	h.vpp.Restart()
	other := vpp.OwnerTag("other-cluster", "node-9")
	h.markOwner(other)
	h.vpp.ResetCalls()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &tailBuffer{max: 16 << 10}
	a, err := New(ctx, Options{Config: h.cfg, Dataplane: SimulatedOverSocket(h.vpp), LogOutput: logs})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(strings.Join(a.notReady(), "; "), "VPP is managed by another agent (other-cluster/node-9)"); {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("not ready for another reason: %v\nlog tail:\n%s", a.notReady(), logs)
		}
		time.Sleep(pollEvery)
	}
	time.Sleep(300 * time.Millisecond) // what a wrong agent would write meanwhile
	if w := h.vpp.Writes(); w != 0 || h.local0Tag() != other || a.Ready() {
		t.Errorf("against another agent's VPP: %d writes, local0 %q, ready %v; want 0 writes, the other's mark, not ready", w, h.local0Tag(), a.Ready())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}

	// Told to take over: it programs VPP and marks it as its own.
	h.cfg.VPP.TakeOver = true
	h.startAgent()
	if got := h.local0Tag(); got != mine {
		t.Errorf("local0 tagged %q after taking over, want %q", got, mine)
	}
	if h.vpp.Writes() == 0 {
		t.Error("nothing programmed after taking over")
	}
}
