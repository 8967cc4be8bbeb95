// Package chaos holds fault tests of the whole system against a real,
// multi-member etcd: three agents (package agent, each on its own simulated
// VPP) watch a three-member embedded etcd cluster
// (internal/etcdtest.StartCluster) while EndpointSlices churn, and members
// are killed and restarted: the leader, a follower, a member kept down for
// 10 s, then every member in turn. The churn is written into etcd either
// directly (kubestate.Writer, as contivctl load writes) or through the
// reflector (plugins/ksr) from a fake Kubernetes API.
//
// After each fault, with the churn paused, etcd must hold every slice's
// last version and every agent's VPP must come to hold what a fresh render
// of etcd's state gives (offline.Render): no change lost. How long that took,
// how long each write took to reach every agent, when a new leader was
// seen and whether the agents re-listed etcd is logged, never asserted.
//
// The tests are slow (about a minute) and run only when the environment
// variable CONTIV_CHAOS is set and -short is not given: `make chaos`.
//
// The package has no non-test code. It knows the agent and the reflector
// only through their exported API and etcd only through its clients.
package chaos
