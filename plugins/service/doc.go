// Package service is the service processor: a controller handler that keeps
// indexes of Services, EndpointSlices (many per service, in any order) and
// this node's Pods, derives one servicerenderer.ContivService per Service
// with Kubernetes semantics (ready endpoints with the serving-and-terminating
// fallback, traffic policies, session affinity, local and host-network
// backends), maintains the frontend and backend interface sets, and hands
// every registered renderer only what changed.
//
// kube-proxy parity: topology-aware routing from EndpointSlice hints
// (topology.go: node hints, then zone hints, only when every ready endpoint
// is hinted and one is for this node or zone; the Local policies ignore
// them; this node's zone comes from its Node's topology.kubernetes.io/zone
// label); a LoadBalancer's healthCheckNodePort under the Local policy;
// status ingress IPs with ipMode Proxy left out (reason ipmode-proxy);
// loadBalancerSourceRanges kept in the ContivService and reported as NOT
// enforced (reason source-ranges-not-enforced, a warning) unless
// Config.SourceRangesEnforced (NAT44's input ACL) and, when set,
// Config.SourceRangesNotEnforced has no reason against it now (VPP lacks
// its ACL plugin); the reason is in the skip's detail.
//
// A change costs in proportion to what it touches: one EndpointSlice change
// derives one service again; another node's update touches nothing; a
// change of this node's zone derives only the services with hints. A
// resync derives every service once, but keeps the output of those whose
// Service and EndpointSlices are the very objects it held, seen from an
// unchanged node (periodic and healing resyncs hand those over). Output
// is sorted and deterministic.
// Input it cannot render is skipped with a reason readable through Skipped.
// An EndpointSlice changed in place is found through the index of services
// and the event's Prev, compared by pointer with the slice held (the key
// whose bytes the check that it did not move reads anyway); other slice
// changes through the index of slices.
//
// The node's proxy health endpoint (kube-proxy's :10256) reaches renderers
// as processor output: with Config.ProxyHealthPort every resync hands them,
// after the services, the pseudo-service ProxyHealthID (proxyhealth.go). A
// resync whose event says VPP restarted tells the renderers that can hear
// it (servicerenderer.Restarter) first.
//
// One concept a file: processor.go dispatches the controller's events;
// index.go indexes Services and EndpointSlices and derives a service
// again; build.go derives a service's output, backends.go its backends,
// parse.go reads addresses and protocols; pods.go tracks this node's pods
// and the interface roles they give; nodeview.go follows this node's
// addresses and zone; views.go answers the REST views.
//
// This node's pods are those whose Pod object names this node, and those
// the agent's CNI wired here (Params.Wired) while VPP has their interface,
// their object known or not yet (a kubelet may run the CNI's ADD before
// the reflector's copy of the Pod reaches etcd: the seed's ProcessNewPod).
//
// It reads this node's facts through small interfaces (ThisNode from
// NodeSync, PodSubnets from IPAM, InterfaceLookup from the VPP layer,
// WiredPods from the pod manager) and
// knows nothing about etcd, VPP, NAT44 or the agent's configuration format.
package service
