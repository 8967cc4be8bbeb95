// Package e2e tests contiv against a real Kubernetes control plane: an etcd,
// kube-apiserver and kube-controller-manager v1.37.2 built from the Go
// module proxy (module ./kube, cached by version under the user's cache
// directory), a kubelet stand-in that reports pod status and finalizes
// terminating pods, a contiv etcd, two contiv-ksr processes authenticated
// only by a ServiceAccount token bound to deploy/base's ClusterRole, and two
// agents on simulated VPPs served over the VPP socket API.
//
// Pods are wired as on a real node: the agents run with cni.enabled (each
// its own CNI socket and pod records; af_packet pod interfaces, as the
// simulated VPP makes no kernel end of a tap), the contiv-cni binary built
// from this checkout installs itself and its conflist into per-node CNI
// directories (`contiv-cni install`, as the DaemonSet's init container),
// and the kubelet stand-in acts as a container runtime through libcni: a
// network namespace per pod sandbox, ADD (the pod's status IP taken from
// its result), CHECK of every sandbox after each pod scenario, DEL and the
// namespace removed when the pod is finalized or deleted at once. The pods' veths live in the test's
// network namespace, both agents' side by side: their names hash the
// sandbox's container ID (64 random hex digits here, as runtimes make
// them), so they do not collide. A node's VPP is compared with the
// offline render with each pod interface under the render's name for it
// (its tag tells the pod); the pod scenarios also read each pod's
// interface, tag, /32 route and neighbour back from the simulated VPP and
// IPAM's records from the contiv etcd, which must be exactly the running
// pods. Each CNI call's duration is a figure; a pod's readiness now waits
// for its ADD (a process each), so the steps wait up to settleLimit for
// the API to show their outcome.
//
// The API server runs its ServiceAccount admission, as a real cluster does:
// pods wait for their namespace's default account, get its token mounted,
// and the reflectors' token is the one a kubelet would get for the pod of
// deploy/base's contiv-ksr Deployment (bound to it, TokenRequest API).
//
// Every scenario changes the API and then waits until etcd holds exactly
// the API's objects and each agent's VPP holds a fresh offline render of
// them (offline.Render): how long that took is logged as a figure (see
// docs/PERFORMANCE.md), never asserted except where the issue names a
// bound. Faults are real: processes are killed with SIGKILL or stopped with
// SIGTERM, etcd servers are stopped, restarted and wiped.
//
// The module is separate (its own go.mod) so that the main module never
// requires k8s.io/kubernetes. Run it with `make e2e`; -short skips it.
package e2e
