// Package chaos holds fault tests of the whole system against a real,
// multi-member etcd: agents (package agent, on simulated VPPs) watch a
// three-member embedded etcd cluster (internal/etcdtest.StartCluster) while
// EndpointSlices churn and members are killed, restarted and paused; at the
// end every agent's simulated VPP must hold what a fresh render of etcd's
// final state gives (agent.Render), with no change lost.
//
// The tests are slow (a minute or more) and run only when the environment
// variable CONTIV_CHAOS is set and -short is not given: `make chaos`. They
// log how long the agents took to converge after each fault; they never
// assert on timing.
//
// The package has no non-test code. It knows the agent only through its
// exported API and etcd only through its clients.
package chaos
