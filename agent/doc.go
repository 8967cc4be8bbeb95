// Package agent assembles contiv-agent from its parts: etcd (embedded when
// no endpoint is configured), the node ID claim, the IPAM address plan, the
// VPP connection (the simulated VPP when no VPP socket exists), the
// controller with its handlers — nodesync, ipam, the service processor —
// and the NAT44 renderer as its apply step, metrics and the HTTP server.
//
// Beside the NAT44 mappings it gives kube-proxy's node-side behaviour
// (parity.go): the health checks of LoadBalancer services under the Local
// policy (healthcheck.go, a renderer: 200 or 503 with the local endpoint
// count on each healthCheckNodePort, which VPP's NAT44 maps to the host end
// of the host interconnect), the node-level proxy health on :10256
// (proxyhealth.go: /healthz and /livez), and network programming latency
// (latency.go: once per EndpointSlice trigger time, REST view /v1/latency).
//
// It holds no logic of its own beyond choosing and connecting the parts;
// cmd/contiv-agent only parses the command line and calls New and Run.
// Tests and the benchmark harness use it to run the real pipeline.
//
// Render connects the same parts offline, for one node, without etcd or a
// real VPP (contivctl render and trace). The types of the REST views
// (NAT44View, NAT44MappingsView, IPAMView, StatusView) are exported for
// clients, and TraceState answers the translation oracle's question from a
// NAT44 state read over REST.
package agent
