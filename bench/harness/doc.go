// Package harness measures the standard benchmark of BENCH.md on the
// workload W(N) of internal/workload, for whoever runs make bench or
// changes what a figure measures. Run measures the figures it is asked
// for, each by its entry in one table (registry: a Figure's name, what it
// measures, how it runs, the table rows it adds), and returns Results,
// which print the table and write the JSON of bench/results.json; bad
// options are refused with ErrOptions, naming what is wrong.
//
// The figures: the pipeline's resync, per-change and node-join cost (node
// 1's service processor and NAT44 renderer wired as the agent wires them)
// and the same with the cnat renderer; binary-API calls per endpoint
// change through the real VPP client and the simulated VPP; decode cost;
// NodeSync with many joiners against embedded etcd; restarts; W(N)
// programmed over a socket-served simulated VPP and the agent's start to
// ready there, at W(10000) and W(50 000) (large: etcd, the simulated VPP
// and the agent also each in a process of its own, this binary again:
// RunChild); K agents sharing one etcd (fanout); the running agent's CPU
// per change (agent-change); network programming latency through the whole
// agent (npl); and, only when named, W(N) into a real VPP.
//
// It measures the project's parts from outside, through their exported
// APIs; nothing in the product imports it, and it must not hold product
// logic of its own.
package harness
