// Package agent is contiv-agent's wiring: New builds the agent from its
// parts and Run runs them until the context ends. It is for
// cmd/contiv-agent, which only parses the command line and calls New and
// Run, and for tests and the benchmark harness, which run the real
// pipeline with it. The contract: the parts are the packages named below,
// each with its own contract; this package connects them (etcd, the node
// ID, VPP, the controller and its handlers, the service pipeline, HTTP)
// and decides nothing the parts decide.
//
// The parts, in the order New and Run wire them: etcd (the client of
// internal/etcd; an embedded member, internal/etcd/embedded, only when
// etcd.embedded.enabled), the node ID claim, the IPAM address plan, the
// VPP connection (vppwire.go: VPP's socket, its interface events, the
// main NIC found by the node IP; or a Dataplane standing in for VPP, such
// as the simulated VPP, chosen by the caller), the controller with its
// handlers — nodesync, ipam, the service pipeline nodepipeline builds (the
// service processor and the renderer the configuration names,
// renderers.go) — the renderer's apply step, metrics and the HTTP server.
//
// A VPP restart reaches the renderers as a controller event: the healing
// resync it asks for says so (controller.ResyncEvent.DataplaneRestarted),
// on the loop. What watches the apply step observes it
// (controller.ApplyObserver) rather than wrapping it: readiness (package
// readiness; health.go adds what only the agent knows), this node's own
// addresses (package ownaddrs), network programming latency and
// kube-proxy's sync metrics (both in syncmetrics) and the node proxy
// health. One VPP, one owner (owner.go): the agent marks the VPP it
// programs (clusterName and node name) and programs none another agent
// marked, unless vpp.takeOver, checking the mark on every connection and
// at every full apply; the owner gate is the one applier. After a VPP
// restart the NAT44 renderer's hold of mappings for the node's interfaces
// is bounded by a timer (package holdwake).
//
// At start, the NAT44 renderer's first dump of VPP is read ahead while the
// controller lists etcd (package prefetch, which says when the read-ahead
// may stand for a dump), and the collector is held off until the first
// full apply (package startgc).
//
// Features live in their own packages: kube-proxy's health endpoints in
// healthcheck, wired by parity.go; the offline render in offline; the
// simulated node beside a simulated VPP (startup interfaces, CNI) in
// simnode. The types of the REST views are package restapi, which clients
// (contivctl) import without linking the agent; the agent fills them
// (adapters.go, rendererview.go). Package packettrace answers a trace from
// the states read over REST.
package agent
