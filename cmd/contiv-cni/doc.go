// Command contiv-cni is the CNI plugin of contiv-vpp (CNI specification
// 1.1: ADD, DEL, CHECK, STATUS, GC, VERSION). The container runtime runs it
// for each pod sandbox; it forwards the call to the contiv agent of the
// node over the agent's unix socket (HTTP+JSON, package cniapi) and
// answers the runtime with the agent's result or a CNI error (code, msg,
// details). The agent does everything else: the pod's address from its
// IPAM, its VPP interface, its eth0 in the sandbox's netns, and undoing
// all of it when any step fails (plugins/pods).
//
// Its network configuration:
//
//	{"cniVersion": "1.1.0", "name": "contiv-vpp", "type": "contiv-cni",
//	 "socket": "/var/run/contiv/cni.sock", "timeout": "20s"}
//
// socket (default /var/run/contiv/cni.sock) is the agent's socket; timeout
// (default 25s) bounds one call to it. The pod's namespace and name come
// from CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME), as kubelet's runtimes
// give them.
//
// Errors: an agent that does not answer on its socket is "agent not
// running" (code 11, try again later; STATUS: 50, plugin not available);
// a field of the configuration that is wrong is code 7 naming the field;
// a missing or wrong CNI_* variable or pod name is code 4 naming it; the
// agent's own errors (no address left in the node's subnet, VPP refused
// the interface, VPP not connected, ...) are passed on as it gives them.
package main
