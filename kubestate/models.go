package kubestate

import "time"

// Object is one stored model.
type Object interface {
	// Key is where the object is stored.
	Key() Key
}

// Service is the compact model of a core/v1 Service.
type Service struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Type is ClusterIP, NodePort, LoadBalancer or ExternalName.
	Type string `json:"type,omitempty"`
	// ClusterIPs holds spec.clusterIPs (spec.clusterIP first); "None" for headless.
	ClusterIPs  []string `json:"clusterIPs,omitempty"`
	ExternalIPs []string `json:"externalIPs,omitempty"`
	// LBIngressIPs holds the ip of each status.loadBalancer.ingress entry
	// whose ipMode is VIP (or unset): traffic to it reaches the node with
	// the IP as its destination.
	LBIngressIPs []string `json:"lbIngressIPs,omitempty"`
	// LBProxyIPs holds the ip of each ingress entry with ipMode Proxy: the
	// load balancer rewrites the destination, so the IP is not a frontend.
	LBProxyIPs []string      `json:"lbProxyIPs,omitempty"`
	Ports      []ServicePort `json:"ports,omitempty"`
	// HealthCheckNodePort is spec.healthCheckNodePort (LoadBalancer with
	// externalTrafficPolicy Local); 0 when unset.
	HealthCheckNodePort int32 `json:"healthCheckNodePort,omitempty"`
	// LoadBalancerSourceRanges is spec.loadBalancerSourceRanges.
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// TrafficDistribution is spec.trafficDistribution (PreferClose,
	// PreferSameZone, PreferSameNode); "" when unset.
	TrafficDistribution string `json:"trafficDistribution,omitempty"`
	// ExternalTrafficPolicy and InternalTrafficPolicy are "Cluster" or "Local".
	ExternalTrafficPolicy string `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy string `json:"internalTrafficPolicy,omitempty"`
	// SessionAffinity is "None" or "ClientIP"; the timeout is in seconds.
	SessionAffinity        string `json:"sessionAffinity,omitempty"`
	SessionAffinityTimeout int32  `json:"sessionAffinityTimeout,omitempty"`
	// ProxyName is the service.kubernetes.io/service-proxy-name label.
	ProxyName string `json:"proxyName,omitempty"`
	// Created is metadata.creationTimestamp: the oldest of two services
	// claiming one frontend wins.
	Created time.Time `json:"created,omitzero"`
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
	// TargetPort is the number or name of spec.ports[].targetPort.
	TargetPort string `json:"targetPort,omitempty"`
	NodePort   int32  `json:"nodePort,omitempty"`
}

// Key implements Object.
func (s *Service) Key() Key { return Key{Resource: ResService, Namespace: s.Namespace, Name: s.Name} }

// EndpointSlice is the compact model of a discovery.k8s.io/v1 EndpointSlice.
type EndpointSlice struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ServiceName is the kubernetes.io/service-name label.
	ServiceName string `json:"serviceName,omitempty"`
	// AddressType is IPv4, IPv6 or FQDN.
	AddressType string         `json:"addressType,omitempty"`
	Ports       []EndpointPort `json:"ports,omitempty"`
	Endpoints   []Endpoint     `json:"endpoints,omitempty"`
	// TriggerTime is the endpoints.kubernetes.io/last-change-trigger-time
	// annotation: when the change that produced this slice happened.
	TriggerTime time.Time `json:"triggerTime,omitzero"`
}

// EndpointPort is one port of an EndpointSlice.
type EndpointPort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
}

// Endpoint is one endpoint of an EndpointSlice. The conditions are resolved
// at conversion: an unset ready counts as ready, an unset serving as ready.
type Endpoint struct {
	Addresses   []string `json:"addresses"`
	Ready       bool     `json:"ready,omitempty"`
	Serving     bool     `json:"serving,omitempty"`
	Terminating bool     `json:"terminating,omitempty"`
	NodeName    string   `json:"nodeName,omitempty"`
	// TargetKind, TargetNamespace and TargetName are the endpoint's targetRef.
	TargetKind      string `json:"targetKind,omitempty"`
	TargetNamespace string `json:"targetNamespace,omitempty"`
	TargetName      string `json:"targetName,omitempty"`
	// Hints are the endpoint's topology hints, nil when it has none (as
	// most endpoints have): 8 bytes an endpoint instead of two slices'
	// 48. Embedded, its fields are stored as the endpoint's own. Read them
	// through ZoneHints and NodeHints, which a nil Hints allows.
	*Hints
}

// Hints are the topology hints of an Endpoint.
type Hints struct {
	// HintZones and HintNodes are hints.forZones and hints.forNodes: the
	// zones and nodes that should use this endpoint (topology-aware routing).
	HintZones []string `json:"hintZones,omitempty"`
	HintNodes []string `json:"hintNodes,omitempty"`
}

// ZoneHints are e's hints.forZones; nil when it has none.
func (e *Endpoint) ZoneHints() []string {
	if e.Hints == nil {
		return nil
	}
	return e.HintZones
}

// NodeHints are e's hints.forNodes; nil when it has none.
func (e *Endpoint) NodeHints() []string {
	if e.Hints == nil {
		return nil
	}
	return e.HintNodes
}

// hints are e's Hints, allocated when nil.
func (e *Endpoint) hints() *Hints {
	if e.Hints == nil {
		e.Hints = new(Hints)
	}
	return e.Hints
}

// Key implements Object.
func (s *EndpointSlice) Key() Key {
	return Key{Resource: ResEndpointSlice, Namespace: s.Namespace, Name: s.Name}
}

// Pod is the compact model of a core/v1 Pod: no spec beyond what the agents use.
type Pod struct {
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	NodeName    string   `json:"nodeName,omitempty"`
	IPs         []string `json:"ips,omitempty"`
	HostIP      string   `json:"hostIP,omitempty"`
	HostNetwork bool     `json:"hostNetwork,omitempty"`
}

// Key implements Object.
func (p *Pod) Key() Key {
	return Key{Resource: ResPod, Node: p.NodeName, Namespace: p.Namespace, Name: p.Name}
}

// Node is the compact model of a core/v1 Node.
type Node struct {
	Name      string        `json:"name"`
	PodCIDRs  []string      `json:"podCIDRs,omitempty"`
	Addresses []NodeAddress `json:"addresses,omitempty"`
	// Zone is the topology.kubernetes.io/zone label.
	Zone string `json:"zone,omitempty"`
	// Taints are spec.taints (their time added left out): the agent
	// drains the node (its proxy /healthz fails) while it carries
	// TaintToBeDeleted.
	Taints []Taint `json:"taints,omitempty"`
}

// Taint is one entry of a Node's spec.taints.
type Taint struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	Effect string `json:"effect,omitempty"`
}

// TaintToBeDeleted is the taint the cluster autoscaler puts on a node it
// is about to delete; kube-proxy (1.31+, KEP-3836) then fails its /healthz
// so that load balancers drain the node.
const TaintToBeDeleted = "ToBeDeletedByClusterAutoscaler"

// HasTaint tells whether n carries a taint with key.
func (n *Node) HasTaint(key string) bool {
	for _, t := range n.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// NodeAddress is one entry of status.addresses.
type NodeAddress struct {
	// Type is InternalIP, ExternalIP, Hostname, InternalDNS or ExternalDNS.
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Key implements Object.
func (n *Node) Key() Key { return Key{Resource: ResNode, Name: n.Name} }

// Namespace is the compact model of a core/v1 Namespace.
type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Key implements Object.
func (n *Namespace) Key() Key { return Key{Resource: ResNamespace, Name: n.Name} }

// VppNode is NodeSync's record of one node: its cluster-wide ID and the
// addresses other nodes reach it on.
type VppNode struct {
	Name string `json:"name"`
	ID   uint32 `json:"id"`
	// VppIPs are the node's VPP addresses in CIDR notation, IPv4 before
	// IPv6 (a node may have one of each): readers pick by family, not by
	// position.
	VppIPs []string `json:"vppIPs,omitempty"`
	// MgmtIPs are the node's management (host) addresses.
	MgmtIPs []string `json:"mgmtIPs,omitempty"`
}

// Key implements Object.
func (n *VppNode) Key() Key { return Key{Resource: ResVppNode, Name: n.Name} }
