// Package nodesync is NodeSync's controller handler: it gets this node its
// cluster-wide ID during the startup resync (so that IPAM, the next handler,
// can derive the address plan from it), keeps the table of all nodes from
// the node records and Kubernetes Nodes the controller watches, and turns
// each change of a node into a controller.NodeUpdate (previous and new
// state) for the handlers after it. It republishes this node's management
// addresses when its Kubernetes Node's addresses change, and publishes the
// VPP addresses it is given.
//
// It claims this node's ID again when the node's record is missing (lost
// with etcd's data) while its Kubernetes Node exists; a node whose
// Kubernetes Node was deleted is left released. (The reflector therefore
// deletes a node's Kubernetes Node before releasing its NodeSync record.)
//
// The etcd work is the nodesync library's; this package adds the controller
// wiring and knows nothing of VPP, IPAM or services.
package nodesync
