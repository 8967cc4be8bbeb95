package nat44

import (
	"cmp"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// BuildRoutes is the verdict routes of one service on this node: what
// becomes of traffic to its addresses that no mapping takes (NAT runs
// before the FIB lookup, so mapped traffic never sees them), as
// kube-proxy decides it (FACTS §1, §4):
//
//   - REJECT each IPv4 cluster IP inside Config.ServiceCIDR: a /32
//     ICMP_UNREACH route in table 0 and a /32 lookup of table 0 in the pod
//     VRF (more specific than the pod VRF's service-CIDR drop route). Its
//     ports without endpoints and the ports it does not define are then
//     refused at once. Not when the service has the Local internal
//     policy and a port with endpoints but none on this node (kube-proxy
//     drops that traffic: the service-CIDR drop route does), nor when
//     the main VRF is not table 0 (an ICMP_UNREACH path crashes VPP 25.02
//     in any other table).
//   - For each external or LoadBalancer IP on which the service has no
//     mapping on this node: REJECT (/32 ICMP_UNREACH in table 0) when
//     none of its ports has an endpoint, DROP (/32 in the main VRF) when
//     the Local external policy leaves this node without a local one.
//     Only for addresses that are the service's own: not this node's,
//     the NAT loopback's, or in the pod subnet or the service CIDR.
//
// Without a service CIDR there are no verdict routes. The routes are
// sorted by key; a key appears once.
func BuildRoutes(svc *servicerenderer.ContivService, node servicerenderer.LocalNode, cfg *Config) []Route {
	if svc == nil || !cfg.ServiceCIDR.IsValid() || !cfg.ServiceCIDR.Addr().Is4() {
		return nil
	}
	any, localOnlyMissing := false, false
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if len(p.Backends) == 0 {
			continue
		}
		any = true
		if len(p.BackendsFor(servicerenderer.PolicyLocal)) == 0 {
			localOnlyMissing = true
		}
	}
	var out []Route
	add := func(r Route) {
		if !slices.ContainsFunc(out, func(o Route) bool { return o.RouteKey == r.RouteKey }) {
			out = append(out, r)
		}
	}
	reject := cfg.MainVRF == 0
	if reject && !(svc.InternalPolicy == servicerenderer.PolicyLocal && localOnlyMissing) {
		for _, ip := range svc.ClusterIPs {
			ip, ok := frontendIPv4(ip)
			if !ok || !cfg.ServiceCIDR.Contains(ip) {
				continue
			}
			host := netip.PrefixFrom(ip, 32)
			add(Route{RouteKey: RouteKey{Prefix: host, VRF: 0}, Kind: RouteReject})
			add(Route{RouteKey: RouteKey{Prefix: host, VRF: cfg.PodVRF}, Kind: RouteLookup, Table: 0})
		}
	}
	for _, ip := range svc.ExternalIPs {
		ip, ok := frontendIPv4(ip)
		if !ok || !ownAddress(ip, node, cfg) || mapsIP(svc, node, cfg, ip) {
			continue
		}
		host := RouteKey{Prefix: netip.PrefixFrom(ip, 32), VRF: cfg.MainVRF}
		switch {
		case !any && reject:
			add(Route{RouteKey: host, Kind: RouteReject})
		case any && svc.ExternalPolicy == servicerenderer.PolicyLocal && localOnlyMissing:
			add(Route{RouteKey: host, Kind: RouteDrop})
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return compareRouteKeys(a.RouteKey, b.RouteKey) })
	return out
}

// ownAddress tells whether an external IP may carry a verdict route: not
// this node's own address, the NAT loopback's or source NAT's, and outside
// the pod subnet and the service CIDR.
func ownAddress(ip netip.Addr, node servicerenderer.LocalNode, cfg *Config) bool {
	return !slices.Contains(node.IPs, ip) && ip != cfg.NATLoopback && ip != cfg.SNAT.IP &&
		!cfg.PodSubnet.Contains(ip) && !cfg.ServiceCIDR.Contains(ip)
}

// mapsIP tells whether the service has a mapping on ip on this node.
func mapsIP(svc *servicerenderer.ContivService, node servicerenderer.LocalNode, cfg *Config, ip netip.Addr) bool {
	for _, m := range appendService(nil, svc, node, cfg, "") {
		if m.IP == ip {
			return true
		}
	}
	return false
}

// compareRoutes orders routes by key, then kind and table.
func compareRoutes(a, b Route) int {
	return cmp.Or(compareRouteKeys(a.RouteKey, b.RouteKey), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Table, b.Table))
}

// setRoutes records that service entry e now wants routes (sorted): the
// counts of the routes it stops or starts wanting change, and each key
// whose desired route changes is queued for Apply. The caller holds mu.
func (r *Renderer) setRoutes(e *serviceEntry, routes []Route) {
	if slices.Equal(e.routes, routes) {
		return
	}
	for _, rt := range e.routes {
		r.routeRef(rt, -1)
	}
	for _, rt := range routes {
		r.routeRef(rt, 1)
	}
	e.routes = routes
}

// routeRef counts one service more (delta 1) or fewer (-1) wanting rt. A
// key several services want different routes on takes the first by
// compareRoutes (in practice: never, as services do not share cluster IPs).
func (r *Renderer) routeRef(rt Route, delta int) {
	n := r.routeRefs[rt] + delta
	if n > 0 {
		r.routeRefs[rt] = n
	} else {
		delete(r.routeRefs, rt)
	}
	var want *Route
	for _, k := range []RouteKind{RouteDrop, RouteReject, RouteLookup} {
		c := rt
		c.Kind = k
		if k != RouteLookup {
			c.Table = 0
		}
		if r.routeRefs[c] > 0 && (want == nil || compareRoutes(c, *want) < 0) {
			want = &c
		}
	}
	old := r.desired.Routes[rt.RouteKey]
	switch {
	case want == nil && old == nil, want != nil && old != nil && *want == *old:
		return
	case want == nil:
		delete(r.desired.Routes, rt.RouteKey)
	default:
		r.desired.Routes[rt.RouteKey] = want
	}
	if r.dirtyRoutes == nil {
		r.dirtyRoutes = map[RouteKey]struct{}{}
	}
	r.dirtyRoutes[rt.RouteKey] = struct{}{}
	delete(r.failures, ObjectID{Kind: ObjectRoute, Route: rt.RouteKey})
}

// ownedRoute tells whether a route VPP holds is the agent's: the service
// CIDR's drop route in the pod or the main VRF, a /32 reject in table 0 or
// lookup in the pod VRF inside the service CIDR, or a route the agent
// wants on that key. ASSUMPTION: routes have no tag, so such a route is
// taken for the agent's whoever made it; a /32 drop or reject of an
// external IP that no service wants any more after an agent restart is
// not recognised and stays (outside the service CIDR the prefix alone
// cannot tell).
func (r *Renderer) ownedRoute(rt Route) bool {
	cidr := r.cfg.ServiceCIDR
	if !cidr.IsValid() {
		return false
	}
	k := rt.RouteKey
	if _, ok := r.desired.Routes[k]; ok {
		return true
	}
	switch {
	case k.Prefix == cidr.Masked():
		return rt.Kind == RouteDrop && (k.VRF == r.cfg.PodVRF || k.VRF == r.cfg.MainVRF)
	case k.Prefix.Bits() == 32 && cidr.Contains(k.Prefix.Addr()):
		return (rt.Kind == RouteReject && k.VRF == 0) || (rt.Kind == RouteLookup && k.VRF == r.cfg.PodVRF)
	}
	return false
}
