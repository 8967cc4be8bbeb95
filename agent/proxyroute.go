package agent

import (
	"context"
	"net"
	"strconv"

	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// proxyHealthRoute brings kube-proxy's node health endpoint to the agent
// through VPP: load balancers probe nodeIP:10256, and the node IP lives on
// VPP's NIC, not on the host. On every resync (after the service
// processor's, which replaces the renderer's services) it gives the
// services renderer, nat44 or cnat alike, a pseudo-service whose only
// frontend is that port as a health-check NodePort, which each renderer
// sends like every other to the host end of the host interconnect, where
// the endpoint listens (a NAT44 static mapping, a cnat translation with
// is_real_ip). It is not the service processor's output: the health-check
// server (serviceHealth), which the processor also feeds, must not listen
// on that port (the proxy health server does).
type proxyHealthRoute struct {
	r    sr.Renderer
	port uint16
}

// newProxyHealthRoute is the route of the proxy health endpoint at addr
// into r; nil when there is none to bring (see proxyHealthPort).
func newProxyHealthRoute(r sr.Renderer, addr string) *proxyHealthRoute {
	port := proxyHealthPort(addr)
	if port == 0 {
		return nil
	}
	return &proxyHealthRoute{r: r, port: port}
}

// proxyHealthPort is the port of the proxy health address, 0 when there is
// none to bring (off, or a port picked at random).
func proxyHealthPort(addr string) uint16 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(n)
}

// proxyHealthService is the pseudo-service of the proxy health endpoint.
func proxyHealthService(port uint16) *sr.ContivService {
	return &sr.ContivService{
		ID:                  sr.ServiceID{Namespace: "contiv-system", Name: "node-proxy-health"},
		ExternalPolicy:      sr.PolicyLocal,
		HealthCheckNodePort: port,
	}
}

func (p *proxyHealthRoute) Name() string { return "proxy-health-route" }

// HandlesEvent implements controller.Handler: only resyncs.
func (p *proxyHealthRoute) HandlesEvent(controller.Event) bool { return false }

// Resync implements controller.Handler.
func (p *proxyHealthRoute) Resync(context.Context, *controller.ResyncEvent) error {
	return p.r.AddService(proxyHealthService(p.port))
}

// Update implements controller.Handler.
func (p *proxyHealthRoute) Update(context.Context, controller.Event) error { return nil }
