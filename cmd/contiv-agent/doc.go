// Command contiv-agent implements Kubernetes Services on one node by
// programming VPP's NAT44-ED plugin. It runs as a DaemonSet beside VPP.
//
// It only wires the parts together: configuration, logger, etcd (embedded
// when no endpoint is configured), the node ID claim, the address plan, the
// VPP connection (the simulated VPP when no VPP socket exists), the
// controller with its handlers (nodesync, ipam, service processor) and the
// NAT44 renderer as its apply step, and the HTTP server.
package main
