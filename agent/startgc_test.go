package agent

import (
	"runtime"
	"runtime/metrics"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// gcSettings are the collector's percent and soft memory limit now.
func gcSettings() (percent int64, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// TestHoldGC: the collector is off under the limit while held, the
// process's settings come back when the last holder releases, and a
// collection ends the hold.
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
	first := holdGC(4096)
	if p, l := gcSettings(); p >= 0 || l != min(l0, 4096<<20) {
		t.Fatalf("held: %d%%, limit %d bytes; want off, %d", p, l, min(l0, 4096<<20))
	}
	second := holdGC(4096)
	first()
	first() // a second call does nothing
	if p, _ := gcSettings(); p >= 0 {
		t.Fatalf("released by one of two holders: collector at %d%%, want still off", p)
	}
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
