// Package nodesync is NodeSync's controller handler: it keeps the table of
// all nodes from the node records and Kubernetes Nodes the controller
// watches, and turns each change of a node into a controller.NodeUpdate
// (previous and new state) for the handlers after it. It republishes this
// node's management addresses when its Kubernetes Node's addresses change,
// and publishes the VPP addresses it is given.
//
// This node's ID is normally claimed by the agent before the controller
// runs (noderegistry.Claim, bounded by its claim timeout) and handed over in
// Params.ID. Without it, the first resync asks for a claim and the handler
// is not ready until it has the ID; it then asks the controller for a
// resync so that IPAM, the next handler, derives the address plan. It
// claims the ID again when the node's record is missing (lost with etcd's
// data) while its Kubernetes Node exists, keeping the record it had meanwhile
// (so nothing of this node, such as its NodePorts, goes away); a node whose
// Kubernetes Node was deleted is left released. (The reflector therefore deletes a node's
// Kubernetes Node before releasing its NodeSync record.)
//
// Nodes and records are watched apart, so the controller may deliver a
// record's release before or after its Node's delete, after the Node's
// re-creation, or late. The outcome does not depend on it: the writer takes
// in its own finding that the ID is no longer held (a publish refused), and
// before claiming back an ID it held it checks that this node's Kubernetes
// Node is in etcd, where the reflector deletes it before the release: a
// release leaves the ID released until the Node is back, a loss of etcd's
// data (or a Node already back) has it claimed again. A record kept after it
// vanished is dropped when the Node's delete follows: it was released.
//
// ASSUMPTION (writer.go, nodeGone): that check and the claim are two
// requests; a Node deleted and released between them leaves a record that
// the reflector's next mark and sweep releases.
//
// # etcd down
//
// The handler never talks to etcd on the controller's goroutine: Resync,
// Update and PublishVppIPs only record what this node's record should hold
// and kick a background writer (package internal/retryloop), which claims
// and publishes with a deadline per request, retrying with a jittered
// backoff while etcd does not answer. Requests coalesce: the writer always
// writes the latest wanted addresses, once, and nsync.Publish writes only
// when the stored record differs. With etcd down, resyncs therefore
// succeed from what the handler holds, and the data plane can be
// reprogrammed; the record catches up when etcd is back. WriteStatus tells
// whether anything waits and the last error; the writer starts with the
// first request and stops with Close or the controller's ShutdownEvent
// (which first lets it finish, within the shutdown's deadline).
//
// The etcd work is the nodesync library's; this package adds the controller
// wiring and knows nothing of VPP, IPAM or services.
package nodesync
