package agent

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// gcSettings are the collector's percent and soft memory limit now.
func gcSettings() (percent int64, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// TestHoldGC: the collector is off while held, under a limit of what the
// process used at the start plus the allowance (a process using more than
// the allowance is not made to collect at once), the process's settings
// come back when the last holder releases, and a collection ends the hold.
func TestHoldGC(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	if release := holdGC(0); true {
		release()
		if p, l := gcSettings(); p != p0 || l != l0 {
			t.Fatalf("holdGC(0) changed the settings to %d%%, %d bytes", p, l)
		}
	}
	// The process uses more than the allowance.
	ballast := make([]byte, 96<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	const allowance = 32
	before := memoryUsed()
	first := holdGC(allowance)
	after := memoryUsed()
	p, l := gcSettings()
	if lo, hi := uint64(before+(allowance-1)<<20), uint64(after+(allowance+1)<<20); p >= 0 || l < lo || l > hi {
		t.Fatalf("held: %d%%, limit %d bytes; want off, a limit in [%d, %d] (what the process used plus %d MiB)", p, l, lo, hi, allowance)
	}
	second := holdGC(allowance)
	first()
	first() // a second call does nothing
	if p, _ := gcSettings(); p >= 0 {
		t.Fatalf("released by one of two holders: collector at %d%%, want still off", p)
	}
	runtime.KeepAlive(ballast)
	second()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("released: %d%%, %d bytes; want %d%%, %d", p, l, p0, l0)
	}

	_ = holdGC(4096) // never released but by a collection
	waitFor(t, "a collection to end the hold", func() bool {
		runtime.GC()
		p, l := gcSettings()
		return p == p0 && l == l0
	})
}

// TestStartHoldsGCUntilFullApply: the agent's first full apply ends the
// start's hold of the collector, the agent still running.
func TestStartHoldsGCUntilFullApply(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), t.TempDir())
	cfg.Controller.StartupHeapMiB = 4096
	r := start(t, cfg, sim.New(sim.Options{}), "../deploy/examples/cluster.yaml")
	waitFor(t, "the collector's settings back after the first full apply", func() bool {
		p, l := gcSettings()
		return p == p0 && l == l0
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestFailedFullApplyEndsGCHold: a first full apply that fails (here:
// VPP is another agent's) ends the hold too: the state is built, and an
// agent waiting for its VPP must not go on without collecting.
func TestFailedFullApplyEndsGCHold(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	srv := etcdtest.Start(t)
	h := newHarness(t, srv.Endpoint(), testConfig(t, srv.Endpoint(), t.TempDir()))
	defer h.close()
	h.stopAgent()
	h.vpp.Restart()
	h.markOwner(vpp.OwnerTag("other-cluster", "node-9"))

	h.cfg.Controller.StartupHeapMiB = 4096
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := New(ctx, Options{Config: h.cfg, Dataplane: SimulatedOverSocket(h.vpp), LogOutput: &tailBuffer{max: 16 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, "the full apply refused for VPP's owner", func() bool {
		return strings.Contains(strings.Join(a.notReady(), "; "), "VPP is managed by another agent")
	})
	waitFor(t, "the collector's settings back after a failed first full apply", func() bool {
		p, l := gcSettings()
		return p == p0 && l == l0
	})
	if a.Ready() {
		t.Error("ready against another agent's VPP")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
