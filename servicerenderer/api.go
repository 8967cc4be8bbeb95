package servicerenderer

import (
	"errors"
	"net/netip"
	"slices"
	"time"
)

// ErrNoTable marks a route into a routing table the data plane does not
// have (yet). Both renderers take it as pending, not as a failure: after a
// VPP restart its API answers seconds before the startup configuration has
// made the pod VRF's table (FACTS §6), and the route waits for the table
// as an interface's configuration waits for the interface.
var ErrNoTable = errors.New("VPP has no such FIB table")

// ErrInvalid marks a call the data plane refused as invalid: retrying the
// same call cannot succeed, so both renderers report it per object
// (Failures) and do not retry it until the object changes or a full apply
// runs. Errors not wrapping it are transient, healed by a resync.
var ErrInvalid = errors.New("rejected by VPP as invalid")

// ErrNoInterface marks a call naming an interface the data plane does not
// have (it wraps ErrInvalid too): what is configured on the interface
// waits for it, and removing it succeeds in effect (it went with the
// interface).
var ErrNoInterface = errors.New("VPP has no such interface")

// ServiceID identifies a service.
type ServiceID struct {
	Namespace string
	Name      string
}

// String is "namespace/name".
func (id ServiceID) String() string { return id.Namespace + "/" + id.Name }

// Protocol is a transport protocol NAT44 can translate.
type Protocol uint8

// The supported protocols (SCTP is skipped by the processor).
const (
	TCP Protocol = 6
	UDP Protocol = 17
)

// String names the protocol as Kubernetes does.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	}
	return "unknown"
}

// TrafficPolicy is a service's external or internal traffic policy.
type TrafficPolicy uint8

// The traffic policies.
const (
	// PolicyCluster spreads traffic over all endpoints.
	PolicyCluster TrafficPolicy = iota
	// PolicyLocal keeps traffic on this node's endpoints.
	PolicyLocal
)

// String names the policy as Kubernetes does.
func (p TrafficPolicy) String() string {
	if p == PolicyLocal {
		return "Local"
	}
	return "Cluster"
}

// ContivService is everything a renderer needs to know about one service.
// All slices are sorted; the same input gives the same value.
type ContivService struct {
	ID ServiceID
	// ClusterIPs holds the cluster IPs of all families.
	ClusterIPs []netip.Addr
	// ExternalIPs holds spec.externalIPs and LoadBalancer ingress IPs.
	ExternalIPs []netip.Addr
	// LoadBalancerIPs are the LoadBalancer ingress IPs among ExternalIPs
	// (sorted): the frontends SourceRanges apply to.
	LoadBalancerIPs []netip.Addr
	// Ports are sorted by name.
	Ports []Port
	// ExternalPolicy applies to NodePort, external and LoadBalancer frontends;
	// InternalPolicy to cluster IPs.
	ExternalPolicy TrafficPolicy
	InternalPolicy TrafficPolicy
	// AffinityTimeout is the ClientIP session-affinity timeout in seconds;
	// 0 means no affinity.
	AffinityTimeout uint32
	// Created is the service's creation time: when two services claim the
	// same frontend address:port/protocol, the oldest wins (then the lower ID).
	Created time.Time
	// HealthCheckNodePort is the TCP port on which every node answers the
	// load balancer's health checks (a LoadBalancer service under the Local
	// external policy); 0 when the service has none.
	HealthCheckNodePort uint16
	// SourceRanges are spec.loadBalancerSourceRanges, sorted: enforced on
	// the LoadBalancerIPs by the NAT44 renderer (an input ACL on the main
	// NIC), NOT enforced under cnat (only reported).
	SourceRanges []netip.Prefix
}

// Port is one service port with the backends that serve it.
type Port struct {
	Name     string
	Protocol Protocol
	Port     uint16
	// NodePort is 0 when the port has none.
	NodePort uint16
	// Backends are the endpoints traffic may go to, sorted by IP then port:
	// the ready ones, or the serving-and-terminating ones when none is ready.
	Backends []Backend
	// LocalBackends are the backends of frontends under the Local policy,
	// set only when ExternalPolicy or InternalPolicy is Local: this node's
	// ready endpoints, or this node's serving-and-terminating ones when none
	// of them is ready (so it may hold endpoints Backends leaves out, as
	// Kubernetes does for graceful termination). Sorted like Backends.
	LocalBackends []Backend
}

// BackendsFor returns the backends of a frontend under policy: Backends for
// Cluster, LocalBackends for Local. Renderers pass ExternalPolicy for
// NodePort, external and LoadBalancer frontends, InternalPolicy for cluster
// IPs.
func (p *Port) BackendsFor(policy TrafficPolicy) []Backend {
	if policy == PolicyLocal {
		return p.LocalBackends
	}
	return p.Backends
}

// Equal tells whether s and o describe the same service, field by field
// (nil and empty slices are equal; creation times compare as instants).
func (s *ContivService) Equal(o *ContivService) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.ID != o.ID || s.ExternalPolicy != o.ExternalPolicy || s.InternalPolicy != o.InternalPolicy ||
		s.AffinityTimeout != o.AffinityTimeout || !s.Created.Equal(o.Created) ||
		s.HealthCheckNodePort != o.HealthCheckNodePort || !slices.Equal(s.SourceRanges, o.SourceRanges) ||
		!slices.Equal(s.LoadBalancerIPs, o.LoadBalancerIPs) ||
		!slices.Equal(s.ClusterIPs, o.ClusterIPs) || !slices.Equal(s.ExternalIPs, o.ExternalIPs) ||
		len(s.Ports) != len(o.Ports) {
		return false
	}
	for i := range s.Ports {
		a, b := &s.Ports[i], &o.Ports[i]
		if a.Name != b.Name || a.Protocol != b.Protocol || a.Port != b.Port || a.NodePort != b.NodePort ||
			!slices.Equal(a.Backends, b.Backends) || !slices.Equal(a.LocalBackends, b.LocalBackends) {
			return false
		}
	}
	return true
}

// Backend is one endpoint of a port.
// It holds no pointer (IP is the compact form of an address).
type Backend struct {
	IP   IP
	Port uint16
	// Local is set when the backend runs on this node (in this node's pod
	// subnet, or one of this node's own addresses).
	Local bool
	// HostNetwork is set when the backend is not in the cluster's pod range.
	HostNetwork bool
	Ready       bool
	Serving     bool
	Terminating bool
}

// InterfaceRole says how NAT44 should treat one VPP interface.
type InterfaceRole uint8

// Roles combine: an interface may be both.
const (
	// RoleFrontend interfaces are where service clients enter VPP (NAT outside).
	RoleFrontend InterfaceRole = 1 << iota
	// RoleBackend interfaces are where local service endpoints live (NAT inside).
	RoleBackend
)

// LocalNode is what renderers need to know about this node.
type LocalNode struct {
	Name string
	ID   uint32
	// IPs are this node's own addresses (VPP and management): NodePort
	// frontends, and the addresses local host-network backends use.
	IPs []netip.Addr
}

// ResyncData is a complete snapshot for a renderer.
type ResyncData struct {
	// Services are sorted by ID.
	Services []*ContivService
	// Interfaces maps every interface with a role to its role.
	Interfaces map[string]InterfaceRole
	Node       LocalNode
}

// Renderer turns ContivServices into data-plane configuration. Methods
// record desired state; nothing is written to the data plane until the
// renderer's apply step runs. Arguments are owned by the caller and must not
// be mutated; a renderer may keep them.
type Renderer interface {
	// AddService renders a new service.
	AddService(svc *ContivService) error
	// UpdateService replaces old by new (same ID).
	UpdateService(old, new *ContivService) error
	// DeleteService removes a service.
	DeleteService(svc *ContivService) error
	// UpdateInterface sets the role of one interface; 0 removes it. The
	// role the renderer has already says the data plane (re)created the
	// interface: what waited for it may be applied now.
	UpdateInterface(name string, role InterfaceRole) error
	// UpdateLocalNode tells that this node's own addresses changed.
	UpdateLocalNode(node LocalNode) error
	// Resync replaces everything with a full snapshot.
	Resync(data *ResyncData) error
}

// InterfaceLoser is a Renderer told when the data plane lost what was
// configured on an interface (VPP deleted it, or re-created it under the
// same name): it forgets having configured it, so that its configuration
// is made again once the interface is back. index is the sw_if_index the
// lost interface had: the news may arrive after the renderer configured
// the name's successor (another index), which lost nothing.
type InterfaceLoser interface {
	InterfaceLost(name string, index uint32)
}

// Restarter is a Renderer that must be told when VPP restarted (its state
// gone): the service processor tells it in the resync whose event says so
// (the controller's ResyncEvent.DataplaneRestarted), before handing it the
// state.
type Restarter interface {
	VPPRestarted()
}
