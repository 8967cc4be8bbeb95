// Package e2e tests contiv against a real Kubernetes control plane: an etcd,
// kube-apiserver and kube-controller-manager v1.37.2 built from the Go
// module proxy (module ./kube, cached by version under the user's cache
// directory), a kubelet stand-in that reports pod status and finalizes
// terminating pods, a contiv etcd, two contiv-ksr processes authenticated
// only by a ServiceAccount token bound to deploy/base's ClusterRole, and two
// agents on simulated VPPs served over the VPP socket API.
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
