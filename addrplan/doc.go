// Package addrplan is this node's address plan and its pod IP allocator.
//
// NewPlan derives, from the cluster-wide configuration and the node's
// NodeSync ID, every address the agent needs: the node's pod subnet, the pod
// gateway, the NAT loopback (the last usable address of the pod subnet), the
// host interconnect subnet with its VPP and Linux ends, the node interconnect
// IP, the VXLAN IP and the service CIDR. The derivation is a pure function: the
// same configuration and ID always give the same plan, and an ID that does not
// fit the configured ranges is an error, never a silent overlap.
//
// Allocator hands out pod IPs from the node's pod subnet: idempotent per pod,
// written through a small Store (the agent stores allocations in etcd, so a
// restart keeps every pod's IP), released when the pod is gone (Sync
// releases gone pods and repairs the store; Prune only releases, reading
// nothing from the store).
//
// The package imports nothing of the project: it knows neither etcd's key
// layout, nor the controller, nor NodeSync, nor VPP. The agent maps its
// configuration into Config and gives it the node ID.
package addrplan
