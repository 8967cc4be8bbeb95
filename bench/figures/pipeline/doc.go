// Package pipeline measures node 1's service pipeline in process: the
// resync, per-change and node-join cost through NAT44 (figure pipeline)
// and through cnat with its programming over the socket (cnat), the
// binary-API calls per endpoint change (calls) and the decode of one
// stored EndpointSlice (decode). It is for whoever changes the processor,
// a renderer or kubestate's decoding and reads BENCH.md's per-N table. Its
// pipelines are built by the agent's own builder, every object decoded
// from its stored bytes first; its results are the keys n, decode_us,
// cnat and cnat_program of bench/results.json.
package pipeline
