// Package service is the service processor: a controller handler that keeps
// indexes of Services, EndpointSlices (many per service, in any order) and
// this node's Pods, derives one servicerenderer.ContivService per Service
// with Kubernetes semantics (ready endpoints with the serving-and-terminating
// fallback, traffic policies, session affinity, local and host-network
// backends), maintains the frontend and backend interface sets, and hands
// every registered renderer only what changed.
//
// A change costs in proportion to what it touches: one EndpointSlice change
// derives one service again; another node's update touches nothing. A
// resync derives everything once. Output is sorted and deterministic.
// Input it cannot render is skipped with a reason readable through Skipped.
//
// It reads this node's facts through small interfaces (ThisNode from
// NodeSync, PodSubnets from IPAM, InterfaceLookup from the VPP layer) and
// knows nothing about etcd, VPP, NAT44 or the agent's configuration format.
package service
