package service

import sr "contiv.dev/vpp/servicerenderer"

// ProxyHealthID is the ID of the node proxy health pseudo-service.
var ProxyHealthID = sr.ServiceID{Namespace: "contiv-system", Name: "node-proxy-health"}

// ProxyHealthService is the pseudo-service that brings kube-proxy's node
// health endpoint to the node through VPP: load balancers probe
// nodeIP:port, and the node IP lives on VPP's NIC, not on the host. Its
// only frontend is port as a health-check NodePort, which every renderer
// sends, like any other, to the host end of the host interconnect where the
// endpoint listens (a NAT44 static mapping, a cnat translation with
// is_real_ip). It is no Service: Services and Skipped leave it out, and the
// services' health-check server must not listen on its port (the proxy
// health server does).
func ProxyHealthService(port uint16) *sr.ContivService {
	return &sr.ContivService{
		ID:                  ProxyHealthID,
		ExternalPolicy:      sr.PolicyLocal,
		HealthCheckNodePort: port,
	}
}
