package kubestate

import (
	"encoding/json"
	"time"
)

// Object is one stored model.
type Object interface {
	// Key is where the object is stored.
	Key() Key
}

// Service is the compact model of a core/v1 Service (176 bytes): the
// fields few services set are behind one pointer, ServiceRare.
type Service struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Type is ClusterIP, NodePort, LoadBalancer or ExternalName.
	Type string `json:"type,omitempty"`
	// ClusterIPs holds spec.clusterIPs (spec.clusterIP first); "None" for headless.
	ClusterIPs []string      `json:"clusterIPs,omitempty"`
	Ports      []ServicePort `json:"ports,omitempty"`
	// ExternalTrafficPolicy and InternalTrafficPolicy are "Cluster" or "Local".
	ExternalTrafficPolicy string `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy string `json:"internalTrafficPolicy,omitempty"`
	// SessionAffinity is "None" or "ClientIP".
	SessionAffinity string `json:"sessionAffinity,omitempty"`
	// Created is metadata.creationTimestamp: the oldest of two services
	// claiming one frontend wins.
	Created time.Time `json:"created,omitzero"`
	// ServiceRare holds the fields few services set; nil when none is
	// (as JSON decoding leaves it when none is given). Embedded, its
	// fields are stored as the service's own. Read them through the
	// methods of their names, which a nil ServiceRare allows.
	*ServiceRare
}

// ServiceRare are the fields of a Service that few services set.
type ServiceRare struct {
	ExternalIPs []string `json:"externalIPs,omitempty"`
	// LBIngressIPs holds the ip of each status.loadBalancer.ingress entry
	// whose ipMode is VIP (or unset): traffic to it reaches the node with
	// the IP as its destination.
	LBIngressIPs []string `json:"lbIngressIPs,omitempty"`
	// LBProxyIPs holds the ip of each ingress entry with ipMode Proxy: the
	// load balancer rewrites the destination, so the IP is not a frontend.
	LBProxyIPs []string `json:"lbProxyIPs,omitempty"`
	// HealthCheckNodePort is spec.healthCheckNodePort (LoadBalancer with
	// externalTrafficPolicy Local); 0 when unset.
	HealthCheckNodePort int32 `json:"healthCheckNodePort,omitempty"`
	// LoadBalancerSourceRanges is spec.loadBalancerSourceRanges.
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// TrafficDistribution is spec.trafficDistribution (PreferClose,
	// PreferSameZone, PreferSameNode); "" when unset.
	TrafficDistribution string `json:"trafficDistribution,omitempty"`
	// SessionAffinityTimeout is the ClientIP affinity's timeout in seconds.
	SessionAffinityTimeout int32 `json:"sessionAffinityTimeout,omitempty"`
	// ProxyName is the service.kubernetes.io/service-proxy-name label.
	ProxyName string `json:"proxyName,omitempty"`
}

// Rare returns s's ServiceRare, allocated when nil: to set its fields.
func (s *Service) Rare() *ServiceRare {
	if s.ServiceRare == nil {
		s.ServiceRare = new(ServiceRare)
	}
	return s.ServiceRare
}

// rareOrZero returns s's ServiceRare or, when nil, a zero one.
func (s *Service) rareOrZero() *ServiceRare {
	if s.ServiceRare == nil {
		return &noRare
	}
	return s.ServiceRare
}

var noRare ServiceRare

// The fields of ServiceRare, read through a nil one as zero.
func (s *Service) ExternalIPs() []string              { return s.rareOrZero().ExternalIPs }
func (s *Service) LBIngressIPs() []string             { return s.rareOrZero().LBIngressIPs }
func (s *Service) LBProxyIPs() []string               { return s.rareOrZero().LBProxyIPs }
func (s *Service) HealthCheckNodePort() int32         { return s.rareOrZero().HealthCheckNodePort }
func (s *Service) LoadBalancerSourceRanges() []string { return s.rareOrZero().LoadBalancerSourceRanges }
func (s *Service) TrafficDistribution() string        { return s.rareOrZero().TrafficDistribution }
func (s *Service) SessionAffinityTimeout() int32      { return s.rareOrZero().SessionAffinityTimeout }
func (s *Service) ProxyName() string                  { return s.rareOrZero().ProxyName }

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

// isZero tells whether r sets none of its fields.
func (r *ServiceRare) isZero() bool {
	return len(r.ExternalIPs) == 0 && len(r.LBIngressIPs) == 0 && len(r.LBProxyIPs) == 0 &&
		r.HealthCheckNodePort == 0 && len(r.LoadBalancerSourceRanges) == 0 &&
		r.TrafficDistribution == "" && r.SessionAffinityTimeout == 0 && r.ProxyName == ""
}

// serviceJSON is a Service's stored form: its fields in the order they
// had before ServiceRare, so that stored values keep their bytes (the
// Writer compares them to tell what changed).
type serviceJSON struct {
	Namespace                string        `json:"namespace"`
	Name                     string        `json:"name"`
	Type                     string        `json:"type,omitempty"`
	ClusterIPs               []string      `json:"clusterIPs,omitempty"`
	ExternalIPs              []string      `json:"externalIPs,omitempty"`
	LBIngressIPs             []string      `json:"lbIngressIPs,omitempty"`
	LBProxyIPs               []string      `json:"lbProxyIPs,omitempty"`
	Ports                    []ServicePort `json:"ports,omitempty"`
	HealthCheckNodePort      int32         `json:"healthCheckNodePort,omitempty"`
	LoadBalancerSourceRanges []string      `json:"loadBalancerSourceRanges,omitempty"`
	TrafficDistribution      string        `json:"trafficDistribution,omitempty"`
	ExternalTrafficPolicy    string        `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy    string        `json:"internalTrafficPolicy,omitempty"`
	SessionAffinity          string        `json:"sessionAffinity,omitempty"`
	SessionAffinityTimeout   int32         `json:"sessionAffinityTimeout,omitempty"`
	ProxyName                string        `json:"proxyName,omitempty"`
	Created                  time.Time     `json:"created,omitzero"`
}

// MarshalJSON stores s in its stored form.
func (s Service) MarshalJSON() ([]byte, error) { return json.Marshal(s.stored()) }

// stored is s's stored form.
func (s *Service) stored() serviceJSON {
	r := s.rareOrZero()
	return serviceJSON{
		Namespace: s.Namespace, Name: s.Name, Type: s.Type, ClusterIPs: s.ClusterIPs,
		ExternalIPs: r.ExternalIPs, LBIngressIPs: r.LBIngressIPs, LBProxyIPs: r.LBProxyIPs,
		Ports: s.Ports, HealthCheckNodePort: r.HealthCheckNodePort,
		LoadBalancerSourceRanges: r.LoadBalancerSourceRanges, TrafficDistribution: r.TrafficDistribution,
		ExternalTrafficPolicy: s.ExternalTrafficPolicy, InternalTrafficPolicy: s.InternalTrafficPolicy,
		SessionAffinity: s.SessionAffinity, SessionAffinityTimeout: r.SessionAffinityTimeout,
		ProxyName: r.ProxyName, Created: s.Created,
	}
}
