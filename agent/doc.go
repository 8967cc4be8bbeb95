// Package agent assembles contiv-agent from its parts: etcd (embedded when
// no endpoint is configured), the node ID claim, the IPAM address plan, the
// VPP connection (the simulated VPP when no VPP socket exists), the
// controller with its handlers — nodesync, ipam, the service processor —
// and the NAT44 renderer as its apply step, metrics and the HTTP server.
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
