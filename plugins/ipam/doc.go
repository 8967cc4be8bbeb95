// Package ipam is IPAM's controller handler and the etcd store of pod IP
// allocations.
//
// In the resync after NodeSync's (which gives this node its ID) it derives
// the node's address plan (ipam.NewPlan), loads the node's allocations from
// etcd, releases those of pods gone from the cluster state, and publishes
// the node's VPP address through NodeSync. A deleted pod's address is
// released when its change arrives.
//
// Allocations live under /contiv/v1/ipam/<node>/<namespace>/<pod>, the
// value being the address in text form; only the node's own agent writes
// them.
//
// It knows the controller's events, the kubestate keys and etcd; the
// address arithmetic is package ipam's. It knows nothing of VPP or services.
package ipam
