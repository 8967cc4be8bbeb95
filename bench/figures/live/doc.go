// Package live measures running agents taking changes from etcd: network
// programming latency through the whole agent (figure npl), the agent's
// CPU and allocations per change against a bare watch (agent-change), and
// K agents sharing one etcd (fanout). It is for whoever changes the etcd
// feed, the controller's loop or what a change costs on its way to VPP.
// The changes written are W(N)'s churn and its undoing, in turn, so that
// every write is a change; its results are the keys npl, fanout,
// agent_change_cpu_us and agent_change of bench/results.json.
package live
