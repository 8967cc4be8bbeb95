// Package startup measures the agent starting against a VPP over its
// socket: W(N) programmed into an empty socket-served simulated VPP
// (figure vpp-program), the agent's start to ready (startup), the same at
// W(50 000) with etcd, the simulated VPP and the agent also each in a
// process of its own (large) and restarts of the agent and of VPP
// (restart). It is for whoever changes the agent's start, its resync
// against a programmed VPP or the VPP client's pipelining. A binary that
// measures the large figure calls core.RunChild(ChildRoles()) first thing
// (its children are that binary again); its results are the keys restart,
// vpp_program, startup and large of bench/results.json.
package startup
