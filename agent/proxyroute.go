package agent

import (
	"context"
	"net"
	"strconv"

	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// proxyHealthRoute brings kube-proxy's node health endpoint to the agent
// through VPP: load balancers probe nodeIP:10256, and the node IP lives on
// VPP's NIC, not on the host. On every resync (after the service
// processor's, which replaces the renderer's services) it gives the NAT44
// renderer a pseudo-service whose only frontend is that port as a
// health-check NodePort, mapped like every other to the host end of the
// host interconnect, where the endpoint listens.
type proxyHealthRoute struct {
	r    *nat44.Renderer
	port uint16
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
