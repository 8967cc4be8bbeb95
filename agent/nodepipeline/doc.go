// Package nodepipeline builds one node's service pipeline from the agent's
// configuration: the service processor (a controller handler) feeding the
// renderer the configuration names (NAT44 or cnat), which is the
// controller's apply step. The agent, the offline render (contivctl render
// and trace) and the benchmark harness all build it here, so each runs the
// renderer exactly as configured: the service CIDRs' drop routes, source
// NAT, the health-check target, the node's interface names, and the node's
// proxy health port (the processor's pseudo-service, service.ProxyHealthID).
//
// Node (node.go) derives each part's configuration from contivconf and the
// node's address plan, pure functions of both; Build (build.go) connects the
// parts to the VPP ports it is given. It starts no goroutine and reads
// nothing but its inputs.
package nodepipeline
