// Package e2evpp is the real-VPP suite: the agent binary against a real VPP
// built from source, with real TCP and UDP between network namespaces. It
// is for CI and for whoever changes how the agent programs VPP: what the
// wire shows here is the authority the simulated VPP (plugins/vpp/sim) must
// agree with.
//
// `make e2e-vpp` builds VPP (vpp-build.sh: from ../shared/vpp/src, or
// VPP_SRC, or an installed VPP_BIN) and runs the tests with
// CONTIV_E2E_VPP naming the build; without it every test skips, so
// `make test` runs none of them. It needs root (namespaces, veths, VPP).
//
// Each run makes a cluster of two nodes. A node is a network namespace
// holding one VPP, attached with af_packet to an uplink veth on a shared
// bridge (the fabric namespace), a host-interconnect veth, a VXLAN tunnel to
// the other node and one veth per pod; a pod is a namespace of its own. An
// outside client sits on the fabric. etcd is embedded in the test; each
// node's agent is the real contiv-agent binary, run in the root namespace,
// talking to its VPP's API socket. The cluster's objects are written with
// contivctl load, as an operator would. Servers and clients are goroutines
// of the test whose sockets were opened inside the namespaces (setns on a
// locked thread), so every packet crosses VPP. Nothing is sent to an
// address outside the namespaces the test made.
//
// TestRealVPPCNI runs nodes without static pods instead: the agents wire
// every pod for contiv-cni, which the test calls through libcni as a
// container runtime does (cniruntime_test.go). TestRealVPPScale runs a
// service of 1000 endpoints and W(10000) (scale_test.go);
// TestRealVPPWeights the local-endpoint weight at the ends of its range
// and a change of it under counted flows (weights_test.go).
//
// Every scenario prints a line of the run's table (scenario, renderer, VPP
// version, result, figures) and keeps each process's log under
// $CONTIV_E2E_VPP_ARTIFACTS (default a temporary directory, named in the
// output).
package e2evpp
