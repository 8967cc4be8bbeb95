// Package pods is the agent's pod manager: it wires each pod of this node
// into VPP for the contiv-cni plugin, and keeps them wired across agent and
// VPP restarts.
//
// For whom: the agent (agent/pods.go) runs a Manager as a controller
// handler, before the service processor, and serves the plugin's requests
// on a unix socket (Server; wire contract in package cniapi).
//
// The contract:
//
//   - CNI ADD, DEL and CHECK are split (Manager.Submit): their IPAM, VPP
//     and record part is a blocking controller event (Call) the socket
//     pushes onto the controller's loop, waiting for its outcome until the
//     request's deadline; the loop runs it in order with every other
//     change, and a call taken in after its deadline does nothing. Their
//     kernel part (the veth pair before the loop's part, eth0 after it;
//     the veth's removal after DEL's) runs in the caller's goroutine, off
//     the loop, at most Params.KernelConcurrency pods at once; the
//     operations of one pod run one at a time. A failed kernel step after
//     the loop's part reverts it with a DEL on the loop. The ADDs queued
//     while the loop is busy run in its next turn together (addBatch):
//     their VPP interfaces made in two pipelines for them all, each pod's
//     failure its own.
//   - ADD allocates the pod's address from IPAM (addrplan.Allocator,
//     persisted in etcd by plugins/ipam; idempotent per pod, so the same
//     pod re-added after an agent restart gets the same address), makes
//     one VPP interface in the pod VRF (a tap v2 where /dev/vhost-net
//     exists, else an af_packet interface on a veth pair whose pod end is
//     made in the pod's netns at once, no move: ResolveKind; a tap's
//     pod end VPP makes in the netns the request names, at most
//     vpp.TapNetnsMax bytes long, and the agent configures it as eth0),
//     up, unnumbered to the pod gateway's loopback (GatewayTag), with a
//     static neighbour for the pod and a /32 route to it, tagged
//     "<namespace>/<pod>"; in the pod's netns it gives eth0 the address as
//     a /32, a link route to the gateway, the default route through it and
//     a permanent ARP entry for it (the NAT loopback is never on-link).
//     Then it re-reads the agent's interface cache and tells the service
//     processor (service.PodInterfaceEvent, the seed's ProcessNewPod) in
//     the same batch. A failed ADD undoes every step it made, in reverse,
//     the address released: no half pod is left.
//   - The same ADD again answers the same result and writes nothing;
//     another sandbox of the same pod replaces the first one's wiring and
//     keeps the address.
//   - DEL is idempotent: an unknown pod, a missing netns or interface are
//     success; a DEL naming a sandbox the pod no longer has does nothing.
//   - CHECK verifies the record, the VPP interface (up, tagged, its /32)
//     and eth0 (address, gateway route, default route).
//   - The netns work is the agent's, not the plugin's: one process owns a
//     pod's whole wiring, and so its undoing, and the agent must redo the
//     pod side anyway when VPP restarts with taps (their pod end dies with
//     VPP). The plugin stays a thin client of the socket.
//   - Restarts: each wired pod has a record (a JSON file in
//     Params.StateDir, /var/run: it dies with a reboot, as netns do).
//     Resync reconciles the records with VPP's dump: a pod in place costs
//     no write (an agent restart writes nothing to VPP), a pod whose VPP
//     interface is gone (VPP restarted) gets it again before the service
//     processor's resync reprograms services, once VPP's startup
//     configuration has made the node's own interfaces
//     (Params.StartupInterfaces; nothing is made before, and VPP's
//     interface events retry), a record whose veth or netns is gone is
//     swept and its address released. Ready (a ReadyHandler)
//     holds the first apply until the records were reconciled; Back says
//     whether every recorded pod is wired in VPP as of the last reconcile
//     (the agent is not ready until it is). Wired tells IPAM which pods
//     hold their address whatever the cluster state says.
//
// It knows the controller's events, IPAM's allocator, VPP through a small
// port (VPP, implemented by vpp.Pods) and the kernel's netlink; it knows
// nothing of services, NAT or etcd's key layout.
package pods
