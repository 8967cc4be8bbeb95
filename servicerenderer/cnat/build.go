package cnat

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// Config is the renderer's configuration; cmd fills it from contivconf and
// IPAM. It does not change while the agent runs.
type Config struct {
	// NodeIP4 is this node's IPv4 address: the source-NAT address.
	NodeIP4 netip.Addr
	// NodeIP6 is this node's IPv6 source-NAT address; invalid when the
	// node has none.
	NodeIP6 netip.Addr
	// PodCIDRs are the cluster's pod ranges; ServiceCIDRs the service
	// ranges (IPv4 and IPv6). Translations whose VIP is in a service CIDR
	// are the renderer's (see Owned).
	PodCIDRs     []netip.Prefix
	ServiceCIDRs []netip.Prefix
	// NodeNetworks are the other ranges from which untranslated traffic
	// reaches pods (the nodes' networks, their VXLAN and host-interconnect
	// ranges): excluded from source NAT like the pod and service CIDRs,
	// else the K8S policy source-NATs a pod's replies to them and the
	// connection dies (FACTS §6).
	NodeNetworks []netip.Prefix
	// HostInterfaces are the interfaces that are not pods' (uplink, other
	// NICs, VXLAN BVI, host interconnect): they get the cnat features but
	// no SNAT table. Every other interface with a role is a pod interface.
	HostInterfaces []string
	// LocalEndpointWeight is how many times a local backend's path is
	// repeated when a translation also has remote backends; at least 1.
	LocalEndpointWeight uint8
	// NodePortMin and NodePortMax bound the NodePorts: a translation on a
	// node IP within them is the renderer's.
	NodePortMin, NodePortMax uint16
	// PodVRF and MainVRF are the VRFs (FIB tables) of the pod interfaces
	// and of the node's own interfaces: each gets a drop route for every
	// service CIDR.
	PodVRF, MainVRF uint32
	// RejectAnyTable is set when the connected VPP takes a reject route
	// in any FIB table (VPP 26.02 and later; the agent sets it from the
	// release of its first connection): the verdict routes and the reject
	// sink are then made in a main VRF other than 0 too
	// (servicerenderer.Rejects). Unset, a main VRF other than 0 gets none
	// (VPP 25.02 crashes on one there).
	RejectAnyTable bool
	// HealthCheckTarget is the host-side IPv4 address where the agent
	// answers load balancers' health checks: a service's health-check
	// NodePort on each of this node's IPv4 addresses goes there. The zero
	// value translates none.
	HealthCheckTarget netip.Addr
}

// DefaultConfig is a configuration with Kubernetes' default NodePort range
// and weight 1; callers fill in the addresses.
func DefaultConfig() Config {
	return Config{LocalEndpointWeight: 1, NodePortMin: 30000, NodePortMax: 32767}
}

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid cnat configuration")

// Validate checks the configuration; the error names every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, value any, why string) {
		errs = append(errs, fmt.Errorf("%w: %s=%v: %s", ErrConfig, field, value, why))
	}
	if !c.NodeIP4.Is4() {
		bad("nodeIP4", c.NodeIP4, "must be an IPv4 address")
	}
	if c.NodeIP6.IsValid() && !c.NodeIP6.Is6() {
		bad("nodeIP6", c.NodeIP6, "must be an IPv6 address")
	}
	if c.HealthCheckTarget.IsValid() && (!c.HealthCheckTarget.Is4() || c.HealthCheckTarget.IsUnspecified()) {
		bad("healthCheckTarget", c.HealthCheckTarget, "must be a specified IPv4 address")
	}
	if c.LocalEndpointWeight == 0 {
		bad("serviceLocalEndpointWeight", 0, "must be at least 1")
	}
	if c.NodePortMin > c.NodePortMax {
		bad("nodePortRange", fmt.Sprintf("%d-%d", c.NodePortMin, c.NodePortMax), "min above max")
	}
	for _, list := range [][]netip.Prefix{c.PodCIDRs, c.ServiceCIDRs, c.NodeNetworks} {
		for _, p := range list {
			if !p.IsValid() {
				bad("prefix", p, "invalid")
			}
		}
	}
	return errors.Join(errs...)
}

// IPv6 tells whether the node handles IPv6: the IPv6 features and table
// are configured then.
func (c *Config) IPv6() bool {
	if c.NodeIP6.IsValid() {
		return true
	}
	for _, p := range slices.Concat(c.PodCIDRs, c.ServiceCIDRs) {
		if p.Addr().Is6() {
			return true
		}
	}
	return false
}

// inServiceCIDR tells whether ip is in a service CIDR.
func (c *Config) inServiceCIDR(ip netip.Addr) bool {
	for _, p := range c.ServiceCIDRs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// BuildNode is the node configuration FACTS §6 records as working: the
// node's SNAT addresses, the K8S policy, the pod, service and node
// networks excluded from source NAT, every interface with a role given the
// cnat input and output features (IPv6 ones too with IPv6), and every pod
// interface put in the tables INCLUDE_V4 and POD (and INCLUDE_V6 with IPv6);
// and a drop route for each service CIDR in the pod and the main VRF
// (ServiceRoutes).
func BuildNode(cfg Config, interfaces map[string]servicerenderer.InterfaceRole) *Node {
	n := &Node{SNAT4: cfg.NodeIP4, Policy: PolicyK8S, Tables: map[string]Tables{}, Features: map[string]Feature{}}
	if cfg.NodeIP6.IsValid() {
		n.SNAT6 = cfg.NodeIP6
	}
	for _, list := range [][]netip.Prefix{cfg.PodCIDRs, cfg.ServiceCIDRs, cfg.NodeNetworks} {
		for _, p := range list {
			if p.IsValid() {
				n.Exclude = append(n.Exclude, p.Masked())
			}
		}
	}
	slices.SortFunc(n.Exclude, comparePrefix)
	n.Exclude = slices.Compact(n.Exclude)
	n.Routes = ServiceRoutes(&cfg)
	for name, role := range interfaces {
		if role == 0 {
			continue
		}
		f, t := interfaceConfig(name, &cfg)
		n.Features[name] = f
		if t != 0 {
			n.Tables[name] = t
		}
	}
	return n
}

// ServiceRoutes are the routes of the service CIDRs (IPv4 and IPv6) in the
// pod and the main VRF, sorted, as the NAT44 renderer makes them for its
// one IPv4 CIDR (FACTS §4): drop routes, but an IPv4 CIDR's route in the
// pod VRF looks up the main VRF where servicerenderer.PodServiceLookup
// says so (the main VRF then drops or, for a cluster IP, rejects). ASSUMPTION: with an IPv6 service CIDR
// VPP has the IPv6 tables of both VRFs (the startup configuration makes
// them, as the IPv4 ones); else it refuses those routes, reported per
// route (Failures).
func ServiceRoutes(cfg *Config) []Route {
	var rs []Route
	for _, p := range cfg.ServiceCIDRs {
		if !p.IsValid() {
			continue
		}
		for _, vrf := range []uint32{cfg.PodVRF, cfg.MainVRF} {
			rt := Route{Prefix: p.Masked(), VRF: vrf}
			if vrf == cfg.PodVRF && p.Addr().Is4() && servicerenderer.PodServiceLookup(cfg.MainVRF, cfg.PodVRF, cfg.RejectAnyTable) {
				rt.Kind, rt.Table = RouteLookup, cfg.MainVRF
			}
			rs = append(rs, rt)
		}
	}
	slices.SortFunc(rs, Route.Compare)
	return slices.Compact(rs)
}

// ownedRoute tells whether a route VPP holds is the renderer's: a drop
// route on a service CIDR in the pod or the main VRF, or a lookup of the
// main VRF on one in the pod VRF (ServiceRoutes; earlier versions dropped
// there, this one may look up and the reverse). ASSUMPTION (as for the
// NAT44 renderer): routes have no tag, so such a route on exactly that
// prefix and VRF is taken for the renderer's, whoever made it.
func (c *Config) ownedRoute(r Route) bool {
	switch {
	case r.Kind == RouteDrop && (r.VRF == c.PodVRF || r.VRF == c.MainVRF):
	case r.Kind == RouteLookup && r.VRF == c.PodVRF && r.Table == c.MainVRF && c.PodVRF != c.MainVRF:
	default:
		return false
	}
	return slices.ContainsFunc(c.ServiceCIDRs, func(p netip.Prefix) bool { return p.IsValid() && p.Masked() == r.Prefix })
}

// interfaceConfig is what an interface with a role gets: features and, for
// a pod interface, SNAT tables.
func interfaceConfig(name string, cfg *Config) (Feature, Tables) {
	v6 := cfg.IPv6()
	f := FeatureInput4 | FeatureOutput4
	if v6 {
		f |= FeatureInput6 | FeatureOutput6
	}
	if slices.Contains(cfg.HostInterfaces, name) {
		// ASSUMPTION: the host interconnect and other non-pod interfaces
		// need no SNAT table (FACTS §6 recorded the uplink with features
		// only; the host interconnect was not part of the measured node).
		return f, 0
	}
	t := Tables(1<<TableIncludeV4 | 1<<TablePod)
	if v6 {
		// ASSUMPTION: IPv6 pod->outside source NAT needs the pod interface
		// in INCLUDE_V6 as IPv4 needs INCLUDE_V4; not recorded (FACTS §6
		// measured IPv4 source NAT only).
		t |= 1 << TableIncludeV6
	}
	return f, t
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// BuildService is the desired translations of one service on this node,
// one per frontend, in a deterministic order: per port, the cluster IPs,
// then the external and LoadBalancer IPs, then this node's own IPs for the
// NodePort. When the service claims one key twice, the first wins.
//
//   - Cluster IPs use all backends (the local ones under the Local
//     internal policy); external/LB IPs and NodePorts all backends (the
//     local ones under the Local external policy).
//   - A frontend gets the backends of its address family only (IPv4 and
//     IPv6 alike); no usable backend: no translation (0 paths crash VPP),
//     but an external or LoadBalancer IP gets one path to a sink
//     (sinkPaths: rejected when its port has no endpoint of its family,
//     dropped when a Local policy leaves this node none), and a NodePort
//     of a port without an endpoint of its family the reject sink.
//   - A local backend's path is repeated LocalEndpointWeight times when
//     the translation also has remote backends.
//   - Session affinity: Maglev with the source-IP flow hash.
//   - RealIP (is_real_ip) is set when the VIP is one of node's IPs
//     (NodePorts; ASSUMPTION: an external IP equal to a node IP too, which
//     was not recorded).
//   - NodePorts are on each node IP, the IPv6 one included, each to the
//     backends of its family (ASSUMPTION: a NodePort on the node's IPv6
//     address behaves as on the IPv4 one; FACTS §6 recorded IPv4 NodePorts
//     and an IPv6 ClusterIP only, corpus cnat_node and cnat_ipv6).
//   - Protocols other than TCP and UDP, and port 0, are skipped.
//   - The health-check NodePort of a service under the Local external
//     policy: TCP on each of node's IPv4 addresses, to
//     cfg.HealthCheckTarget on the same port (RealIP; no affinity), unless
//     a port of the service holds that key. The checker's address does
//     not matter to the answer; the K8S policy source-NATs it to the
//     node's address, which the host reaches through VPP (ASSUMPTION, as
//     for the NAT44 renderer: the host routes to VPP over the host
//     interconnect).
func BuildService(svc *servicerenderer.ContivService, node servicerenderer.LocalNode, cfg Config) []Translation {
	if svc == nil {
		return nil
	}
	return appendService(nil, svc, node, &cfg)
}

func appendService(dst []Translation, svc *servicerenderer.ContivService, node servicerenderer.LocalNode, cfg *Config) []Translation {
	start := len(dst)
	lb, fh := LBDefault, FlowHash(0)
	if svc.AffinityTimeout > 0 {
		lb, fh = LBMaglev, FlowHashSrcIP
	}
	add := func(ip netip.Addr, port uint16, proto Protocol, backends []servicerenderer.Backend, sink func(netip.Addr) []Path) {
		ip = ip.Unmap()
		if !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() {
			return
		}
		key := Key{IP: ip, Port: port, Proto: proto}
		for i := start; i < len(dst); i++ {
			if dst[i].Key == key {
				return
			}
		}
		paths := buildPaths(backends, ip.Is4(), cfg.LocalEndpointWeight)
		if len(paths) == 0 && sink != nil {
			paths = sink(ip)
		}
		if len(paths) == 0 {
			return
		}
		dst = append(dst, Translation{Key: key, Paths: paths, RealIP: slices.Contains(node.IPs, ip), LB: lb, FlowHash: fh})
	}
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if (p.Protocol != servicerenderer.TCP && p.Protocol != servicerenderer.UDP) || p.Port == 0 {
			continue
		}
		internal := p.BackendsFor(svc.InternalPolicy)
		external := p.BackendsFor(svc.ExternalPolicy)
		for _, ip := range svc.ClusterIPs {
			add(ip, p.Port, p.Protocol, internal, nil)
		}
		for _, ip := range svc.ExternalIPs {
			add(ip, p.Port, p.Protocol, external, func(ip netip.Addr) []Path { return sinkPaths(cfg, svc, p, ip, p.Port, true) })
		}
		if p.NodePort != 0 {
			for _, ip := range node.IPs {
				add(ip, p.NodePort, p.Protocol, external, func(ip netip.Addr) []Path { return sinkPaths(cfg, svc, p, ip, p.NodePort, false) })
			}
		}
	}
	if hc := svc.HealthCheckNodePort; hc != 0 && svc.ExternalPolicy == servicerenderer.PolicyLocal && cfg.HealthCheckTarget.IsValid() {
		lb, fh = LBDefault, 0
		target := []servicerenderer.Backend{{IP: servicerenderer.IPOf(cfg.HealthCheckTarget), Port: hc}}
		for _, ip := range node.IPs {
			if ip.Unmap().Is4() && ip.Unmap() != cfg.HealthCheckTarget {
				add(ip, hc, servicerenderer.TCP, target, nil)
			}
		}
	}
	return dst
}

// buildPaths is the sorted paths of the backends of one family: a local
// backend repeated weight times when remote ones are there too. Duplicate
// backends and port 0 are skipped.
func buildPaths(backends []servicerenderer.Backend, v4 bool, weight uint8) []Path {
	var local, remote int
	uniq := make([]servicerenderer.Backend, 0, len(backends))
	for _, b := range backends {
		b.IP = b.IP.Unmap()
		if b.Port == 0 || !b.IP.IsValid() || b.IP.Is4() != v4 {
			continue
		}
		// Backends come sorted by IP then port: a duplicate follows its twin.
		if n := len(uniq); n > 0 && uniq[n-1].IP == b.IP && uniq[n-1].Port == b.Port {
			continue
		}
		uniq = append(uniq, b)
		if b.Local {
			local++
		} else {
			remote++
		}
	}
	w := 1
	if local > 0 && remote > 0 {
		w = int(max(weight, 1))
	}
	paths := make([]Path, 0, remote+local*w)
	for _, b := range uniq {
		n := 1
		if b.Local {
			n = w
		}
		for range n {
			paths = append(paths, Path{IP: b.IP.Addr(), Port: b.Port})
		}
	}
	slices.SortFunc(paths, Path.Compare)
	return paths
}
