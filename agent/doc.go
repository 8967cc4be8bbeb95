// Package agent assembles contiv-agent from its parts: etcd (an embedded
// one only when etcd.embedded.enabled), the node ID claim, the IPAM address
// plan, the VPP connection (vppwire.go: VPP's socket, its interface events,
// the main NIC found by the node IP; or a Dataplane standing in for VPP,
// such as the simulated VPP, chosen by the caller), the controller with its
// handlers — nodesync, ipam, the service pipeline nodepipeline builds (the
// service processor and the renderer the configuration names, renderers.go)
// — the renderer's apply step, metrics and the HTTP server.
//
// A VPP restart reaches the renderers as a controller event: the healing
// resync it asks for says so (controller.ResyncEvent.DataplaneRestarted),
// on the loop. What watches the apply step observes it
// (controller.ApplyObserver) rather than wrapping it: readiness
// (readiness.go: not ready from the moment VPP is lost until a full
// reprogram is applied and every interface it waits for is back; and on a
// node's first start, until this node's own VPP addresses have come back
// from etcd in its NodeSync record and their NodePorts are applied,
// ownaddrs.go), network programming latency (REST view /v1/latency) and
// kube-proxy's sync metrics (both in syncmetrics) and the node proxy
// health. One VPP, one owner (owner.go): the agent marks the VPP it
// programs (clusterName and node name) and programs none another agent
// marked, unless vpp.takeOver, checking the mark on every connection and
// at every full apply; the owner gate is the one applier. After a VPP restart the NAT44
// renderer's hold of mappings for the node's interfaces is bounded by a
// timer (holdwake.go).
//
// At start, the NAT44 renderer's first dump of VPP is read ahead while the
// controller lists etcd (prefetch.go; at W(50 000) ~55 000 dump replies
// that came after the listing and the resync). It stands for the dump only
// when nothing can have changed VPP since: VPP was this agent's when it
// was read and the ownership check found it still so (another agent writes
// only to a VPP it marked), on the same connection, and no write went
// through the renderer's port before; else the apply dumps VPP as always.
// ASSUMPTION (prefetch.go): VPP changes that state only when a client asks,
// and only an agent that marked VPP its own asks.
//
// From its start to its first full apply the agent collects no garbage
// while its memory grows by less than controller.startupHeapMiB
// (startgc.go): the start builds the whole state, and the collections that
// follow the heap's doublings would each mark it again. The hold stays
// within three quarters of the container's memory limit (cgroupmem.go:
// cgroup v1 or v2, the pod's limit included).
//
// Features live in their own packages: kube-proxy's health endpoints in
// healthcheck (the services' health checks, a renderer the processor
// feeds; the node-level proxy health on :10256 and its drain taint), wired
// by parity.go; the offline render in offline (Render here names it for
// its callers); the simulated node beside a simulated VPP (startup
// interfaces, CNI) in simnode.
//
// cmd/contiv-agent only parses the command line and calls New and Run.
// Tests and the benchmark harness use it to run the real pipeline. The
// types of the REST views are package restapi, which clients (contivctl)
// import without linking the agent; the agent fills them (adapters.go,
// rendererview.go). Package packettrace answers a trace from the states
// read over REST.
package agent
