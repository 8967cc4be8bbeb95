// Package core is what every figure of the standard benchmark shares:
// its options, node 1's environment (the agent's own pipeline over W(N),
// W(N)'s decoded events, embedded etcd, child processes, the
// socket-served simulated VPP), the measuring and profiling helpers, and
// the results with the table they print. It is for whoever writes or
// changes a family of figures under bench/figures. It imports no family
// and holds no figure: a family describes its figures with NewFigure and
// keeps its results in one type of its own (Part), whose JSON fields are
// keys of bench/results.json; like every part of bench/, it measures the
// project through its exported APIs and holds no product logic.
package core
