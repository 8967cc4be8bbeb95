// Package layout holds, as a test, the rule of the repository's layout
// (docs/architecture.md): packages sit in layers, and a package imports
// only from its own layer or the layers below it.
//
//  1. internal/: utilities without domain knowledge (backoff, retry loop,
//     etcd dialer and test servers, the VPP corpus reader, OCI images).
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
