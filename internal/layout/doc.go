// Package layout holds, as a test, the rule of the repository's layout
// (docs/architecture.md), for whoever adds a package or an import. A
// package, and its tests too, imports only from its own layer or the layers
// below it; a test may import from above only where the test's table
// (testImportsUp) names the pair with its reason.
//
//  1. internal/: utilities without domain knowledge (backoff, retry loop,
//     etcd's client (internal/etcd) and embedded member
//     (internal/etcd/embedded), test servers, the VPP corpus reader, OCI
//     images). internal/workload, the benchmark's workload W(N), builds
//     kubestate models and so sits in layer 2.
//  2. Libraries: the domain's models and pure logic — contivconf,
//     kubestate, addrplan, noderegistry, servicerenderer and its
//     renderers. They start no goroutine of their own except to talk to
//     etcd, and know nothing of the processes that use them.
//  3. plugins/: the parts of the running processes — the controller and
//     its handlers, the VPP port and the simulated VPP, the reflector,
//     the REST server.
//  4. agent/: contiv-agent's wiring (New, Run) and the parts it wires,
//     each a package of its own: the node features, readiness, own
//     addresses, the start's tuning (prefetch, startgc, holdwake) and the
//     types of its REST views (restapi).
//  5. Programs and whole-system tests: cmd/, bench/, chaos/, deploy/, e2evpp/.
//     The benchmark has levels of its own above: bench/core (5), the
//     families bench/figures/* (6; none imports another), bench/harness
//     (7), bench/cmd (8).
//
// The simulated VPP (plugins/vpp/sim) models VPP, not the agent: it
// imports nothing of the project but internal/.
//
// A second rule (links_test.go) holds programs to what they use: contivctl
// and contiv-ksr talk to etcd and read the agent's views, so neither links
// package agent, the embedded etcd member or etcd's server.
package layout
