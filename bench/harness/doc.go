// Package harness measures the standard benchmark of BENCH.md on the
// workload W(N) of internal/workload: resync, per-change and node-join cost of
// node 1's service pipeline (the service processor and the NAT44 renderer
// wired as the agent wires them), binary-API calls per endpoint change
// through the real VPP client and the simulated VPP, decode cost, NodeSync
// with many joiners against embedded etcd (K, and 1000 in the nodesync-many
// figure), network programming latency through the whole agent, K agents
// (controller, processor, renderer over a counting VPP) sharing one
// embedded etcd holding W(10000) — the fan-out latency of a change, heap
// per agent and etcd's heap (fanout), and the same directly and through a
// tier of etcd gRPC proxies with etcd and each proxy in a process of its
// own (this binary again, RunChild), for their CPU per change and heap —
// and the running agent's CPU per
// change from the etcd watch event to the VPP calls (agent-change), and
// W(50 000) over a socket-served simulated VPP: its pipelined programming,
// the agent's start to ready (and the process's CPU until then) with etcd
// in the benchmark's process, again in a process of its own, as it is
// deployed, and a third time with the simulated VPP in a process of its
// own too (vppchild.go: the agent alone in its process, dialling VPP's
// socket as against a real VPP), and the running agent's live heap
// (large). Run
// returns the figures; Results prints the table and the JSON of
// results.json.
//
// It measures the project's parts from outside, through their exported
// APIs; nothing in the product imports it, and it must not hold product
// logic of its own.
package harness
