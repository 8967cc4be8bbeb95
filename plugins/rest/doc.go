// Package rest serves the agent's HTTP endpoints: JSON views of its state
// for operators and contivctl, Prometheus metrics, and the /healthz and
// /readyz probes. It reads state only through the small Source interfaces
// its callers provide and never changes anything.
package rest
