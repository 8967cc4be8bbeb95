// Package workload builds the standard benchmark workload W(N) of BENCH.md
// exactly: 100 nodes, N services with one EndpointSlice of 10 endpoints each,
// the deterministic churn of 1000 endpoint changes, and the joining node 101.
// It produces kubestate models only and knows nothing about the agent.
package workload
