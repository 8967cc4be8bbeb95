// Package syncmetrics measures the agent's syncs as kube-proxy's users
// expect: network programming latency (Latency, the kube-proxy SLI, from an
// EndpointSlice's trigger time to VPP acknowledging its batch; REST view
// /v1/latency) and kube-proxy's sync metrics (KubeProxy: sync durations,
// last queued and synced times, failures, pending changes; NoLocalCollector:
// Local service ports without a local endpoint). Each is a controller
// handler that notes what arrives and an observer of the apply step
// (controller.ApplyObserver) that measures what it did.
package syncmetrics
