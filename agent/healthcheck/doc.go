// Package healthcheck gives a VPP node kube-proxy's health endpoints:
//
//   - Services (services.go) answers load balancers' health checks of
//     LoadBalancer services under externalTrafficPolicy Local on each
//     healthCheckNodePort: 200 or 503 with the count of local ready
//     endpoints. It is a servicerenderer.Renderer the service processor
//     feeds; VPP maps nodeIP:healthCheckNodePort to where it listens (the
//     host end of the host interconnect). The node proxy health
//     pseudo-service (service.ProxyHealthID) is not its own.
//   - Proxy (proxy.go) is the node-level proxy health, /healthz and /livez
//     (kube-proxy's :10256): healthy while VPP is connected and no change
//     waited too long for a successful apply, which it observes
//     (controller.ApplyObserver); /healthz also fails while this node's
//     Node carries the cluster autoscaler's to-be-deleted taint, so that
//     load balancers drain it.
//
// Listeners that cannot be opened are logged and tried again; the agent
// works without them.
package healthcheck
