// Package workload builds the standard benchmark workload W(N) of BENCH.md
// exactly: 100 nodes, N services with one EndpointSlice of 10 endpoints each,
// the deterministic churn of 1000 endpoint changes, and the joining node 101.
// It is for the benchmark (bench/figures) and for the tests and benchmarks
// of the packages W(N) exercises (kubestate, the controller, the etcd feed,
// the service processor). The contract: the same N always gives the same
// objects and the same churn; it produces kubestate models only and knows
// nothing about the agent (it sits in layer 2, beside kubestate).
package workload
