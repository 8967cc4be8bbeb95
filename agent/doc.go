// Package agent assembles contiv-agent from its parts: etcd (an embedded
// one only when etcd.embedded.enabled), the node ID claim, the IPAM address
// plan, the VPP connection (vppwire.go: VPP's socket, its interface events,
// the main NIC found by the node IP; or a Dataplane standing in for VPP,
// such as the simulated VPP, chosen by the caller), the controller with its
// handlers — nodesync, ipam, the service processor — and the renderer the
// configuration names (renderers.go: NAT44 or cnat) as its apply step,
// metrics and the HTTP server. Readiness (readiness.go) tells the truth
// about VPP: not ready from the moment it is lost until a full reprogram
// is applied and every interface it waits for is back; and on a node's
// first start, until this node's own VPP addresses have come back from etcd
// in its NodeSync record and their NodePorts are applied (ownaddrs.go).
// One VPP, one owner (owner.go): the agent marks the VPP it programs and
// programs none another agent marked, unless vpp.takeOver; after a VPP
// restart the NAT44 renderer's hold of mappings for the node's interfaces
// is bounded by a timer (holdwake.go).
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
// clients; package packettrace answers a trace from the states read over
// REST.
package agent
