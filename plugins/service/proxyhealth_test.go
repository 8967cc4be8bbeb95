package service

import (
	"testing"

	"contiv.dev/vpp/kubestate"

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
