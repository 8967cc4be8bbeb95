package agent

import (
	"context"
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
