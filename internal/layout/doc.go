// Package layout holds, as a test, the rule of the repository's layout
// (docs/architecture.md), for whoever adds a package or an import. A
// package, and its tests too, imports only from its own layer or the layers
// below it; a test may import from above only where the test's table
// (testImportsUp) names the pair with its reason.
//
//  1. internal/: utilities without domain knowledge (backoff, retry loop,
//     etcd dialer and test servers, the VPP corpus reader, OCI images).
//     internal/workload, the benchmark's workload W(N), builds kubestate
//     models and so sits in layer 2.
//  2. Libraries: the domain's models and pure logic — contivconf,
//     kubestate, addrplan, noderegistry, servicerenderer and its
//     renderers. They start no goroutine of their own except to talk to
//     etcd, and know nothing of the processes that use them.
//  3. plugins/: the parts of the running processes — the controller and
//     its handlers, the VPP port and the simulated VPP, the reflector,
//     the REST server.
//  4. agent/: contiv-agent's wiring (New, Run) and the node features it
//     wires, each a package of its own.
//  5. Programs and whole-system tests: cmd/, bench/, chaos/, deploy/, e2evpp/.
//
// The simulated VPP (plugins/vpp/sim) models VPP, not the agent: it
// imports nothing of the project but internal/.
package layout
