// Package deploy holds the deployment manifests and their tests: base/ (a
// complete kustomize base: namespace, RBAC, the contiv-bootstrap addresses,
// the agent's ConfigMap, the in-cluster etcd, the reflector and the agent),
// overlays/ (vxlan, nooverlay, external-etcd, dev-kind), docker/ (the
// programs' Dockerfiles), images/ (make images: the programs' OCI images,
// built without a daemon), grafana/ (a dashboard on kube-proxy's and the
// agent's metrics) and examples/ (the agent's configuration with every
// option, per-node overrides, a sample cluster and examples/vpp, a VPP
// startup configuration).
//
// The tests build every variant with kubectl's kustomize (the base alone
// without kubectl), decode it strictly into the Kubernetes API types and
// check that:
//   - everything the network needs before Services work (etcd, contiv-ksr,
//     the agents) is on the host network, uses the node's resolver,
//     tolerates not-ready nodes and addresses its peers by IP outside the
//     service CIDR;
//   - the agents run a real VPP (except in dev-kind) with the variant's
//     transport, and agents and reflector share one etcd whose members match
//     the endpoints;
//   - probes hit what the programs serve, on the ports they listen on (a
//     real agent and a real reflector are run);
//   - every flag and CONTIV_ variable in the manifests exists in the
//     programs, built with go build and asked with -h;
//   - the reflector's RBAC is exactly the API requests it makes, recorded
//     from a run against a fake API.
//   - every query of the Grafana dashboard names a metric a running agent
//     exports.
package deploy
