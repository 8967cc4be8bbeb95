package service

import (
	"testing"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"

	sr "contiv.dev/vpp/servicerenderer"
)

// TestProxyHealthIsProcessorOutput: with a proxy health port, every resync
// hands each renderer, after the services, the node proxy health
// pseudo-service (the renderers map nodeIP:port to the health-check
// target); the views leave it out, and changes never touch it. Without a
// port, no renderer sees it.
func TestProxyHealthIsProcessorOutput(t *testing.T) {
	r := newRig(t)
	r.cfg.ProxyHealthPort = 10256
	r.p, r.rec = r.processor()
	r.put(svcM("web"))
	r.resync()
	for _, rec := range []*recorder{r.rec} {
		got := rec.services[ProxyHealthID]
		if got == nil || got.HealthCheckNodePort != 10256 || got.ExternalPolicy != sr.PolicyLocal || len(got.Ports) != 0 {
			t.Fatalf("renderer's proxy health service after resync: %+v", got)
		}
		if rec.services[sr.ServiceID{Namespace: "default", Name: "web"}] == nil {
			t.Fatal("the service itself is missing")
		}
	}
	for _, s := range r.p.Services() {
		if s.ID == ProxyHealthID {
			t.Error("Services lists the proxy health pseudo-service")
		}
	}
	r.put(svcM("web", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.11"} }))
	if r.rec.services[ProxyHealthID] == nil || len(r.rec.violations) > 0 {
		t.Errorf("after a change: proxy health %v, violations %v", r.rec.services[ProxyHealthID], r.rec.violations)
	}

	r = newRig(t)
	r.put(svcM("web"))
	r.resync()
	if r.rec.services[ProxyHealthID] != nil {
		t.Error("no proxy health port, yet the renderer got the pseudo-service")
	}
}

// restartRecorder is a recorder that counts VPPRestarted calls.
type restartRecorder struct {
	*recorder
	restarts int
	// resyncsThen is the recorder's resync count at the last restart.
	resyncsThen int
}

func (r *restartRecorder) VPPRestarted() { r.restarts++; r.resyncsThen = r.resyncs }

// TestRestartReachesRenderersInTheResync: a resync saying VPP restarted
// tells each renderer that can hear it, before handing it the state; other
// resyncs do not.
func TestRestartReachesRenderersInTheResync(t *testing.T) {
	r := newRig(t)
	rr := &restartRecorder{recorder: newRecorder()}
	plain := newRecorder()
	p, err := New(Params{Renderers: []sr.Renderer{rr, plain}, Node: r.node, Subnets: r.node, Interfaces: r.ifaces, Config: r.cfg})
	if err != nil {
		t.Fatal(err)
	}
	ev := r.snapshot()
	if err := p.Resync(t.Context(), ev); err != nil || rr.restarts != 0 {
		t.Fatalf("startup resync: err %v, restarts %d", err, rr.restarts)
	}
	ev.Kind, ev.DataplaneRestarted = controller.ResyncHealing, true
	if err := p.Resync(t.Context(), ev); err != nil || rr.restarts != 1 || rr.resyncsThen != 1 || plain.resyncs != 2 {
		t.Fatalf("restart resync: err %v, restarts %d (at resync %d), plain resyncs %d", err, rr.restarts, rr.resyncsThen, plain.resyncs)
	}
}
