package agent

import (
	"testing"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestCNATRestartWritesNothing (issue 34 F4): under cnat an agent restart
// and the periodic resyncs write nothing to a VPP that holds the right
// state, on 25.02 and 26.06. A translated ClusterIP's /32 carries cnat's
// FIB source, which hides an API route there, and a dump of the API
// source does not list a hidden route (records-e2evpp/cnat.jsonl): a
// reject route on a translated ClusterIP is neither seen again nor of any
// use, and re-adding it at every start (10 011 routes at W(10000) on the
// real 25.02) was the defect.
func TestCNATRestartWritesNothing(t *testing.T) {
	for _, version := range []string{"25.02-release", "26.06-release"} {
		t.Run(version, func(t *testing.T) {
			srv := etcdtest.Start(t)
			dir := t.TempDir()
			cfg := contivconf.Defaults()
			cfg.Renderer = contivconf.RendererCNAT
			cfg.Controller.ResyncInterval = contivconf.Duration(200 * time.Millisecond)
			vpp := sim.New(sim.Options{Version: version})
			defer vpp.Close()
			c := testConfigFrom(t, cfg, srv.Endpoint(), dir)
			r := start(t, c, vpp, "../deploy/examples/cluster.yaml")
			resyncs := r.a.Controller().Status().Resyncs
			vpp.ResetCalls()
			waitFor(t, "three resyncs", func() bool { return r.a.Controller().Status().Resyncs >= resyncs+3 })
			if w := vpp.Writes(); w != 0 {
				t.Errorf("three periodic resyncs made %d writes: %v", w, vpp.CallCounts())
			}
			if err := r.stop(); err != nil {
				t.Fatalf("agent stop: %v", err)
			}
			vpp.ResetCalls()
			start(t, c, vpp, "")
			if w := vpp.Writes(); w != 0 {
				t.Errorf("agent restart made %d writes: %v", w, vpp.CallCounts())
			}
		})
	}
}
