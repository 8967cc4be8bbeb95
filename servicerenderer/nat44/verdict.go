package nat44

import (
	"cmp"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// BuildRoutes is the verdict routes of one service on this node: what
// becomes of traffic to its cluster IPs that no mapping takes (NAT runs
// before the FIB lookup, so mapped traffic never sees them), as
// kube-proxy decides it (FACTS §1, §4): REJECT each IPv4 cluster IP inside
// Config.ServiceCIDR with a /32 reject (ICMP_PROHIBIT) route in the main
// VRF, which pod traffic reaches through the pod VRF's service-CIDR lookup
// of the main VRF (servicerenderer.PodServiceLookup), for the cluster IPs
// servicerenderer.RejectIPs picks (the cnat renderer shares it). Its ports without endpoints and
// the ports it does not define are then refused at once. Not when the
// main VRF is not table 0 and Config.RejectAnyTable is unset (a reject
// path crashes VPP 25.02 in any other table), nor without a service CIDR. External and
// LoadBalancer IPs get no route (routes have no tag: a /32 outside the
// service CIDR could not be recognised after a restart); a Local one
// without a local endpoint is mapped to SinkAddress (BuildService), one
// without any endpoint is not mapped: NAT44-ED delivers no usable ICMP
// error for a mapping into a reject route (records-verdicts). The routes
// are sorted by key.
func BuildRoutes(svc *servicerenderer.ContivService, node servicerenderer.LocalNode, cfg *Config) []Route {
	out, _ := appendRoutes(nil, nil, svc, cfg)
	return out
}

// appendRoutes appends the routes of BuildRoutes to dst, with ips as
// scratch room for the service's reject IPs; both are returned for reuse.
func appendRoutes(dst []Route, ips []netip.Addr, svc *servicerenderer.ContivService, cfg *Config) ([]Route, []netip.Addr) {
	if !servicerenderer.Rejects(cfg.MainVRF, cfg.RejectAnyTable) {
		return dst, ips
	}
	ips = servicerenderer.AppendRejectIPs(ips[:0], svc, cfg.ServiceCIDR)
	start := len(dst)
	for _, ip := range ips {
		if p, ok := IPv4PrefixOf(netip.PrefixFrom(ip, 32)); ok {
			dst = append(dst, Route{RouteKey: RouteKey{Prefix: p, VRF: cfg.MainVRF}, Kind: RouteReject})
		}
	}
	slices.SortFunc(dst[start:], func(a, b Route) int { return compareRouteKeys(a.RouteKey, b.RouteKey) })
	return dst, ips
}

// SinkAddress is the last address of the service CIDR, which Kubernetes
// never allocates: a mapping to it drops its frontend's traffic through
// the service CIDR's drop route in the main VRF (FACTS §4: a mapping
// nodeIP:port → an unallocated service address drops exactly that port).
// Invalid without an IPv4 service CIDR.
func SinkAddress(cfg *Config) netip.Addr {
	return servicerenderer.DropSink(cfg.ServiceCIDR)
}

// compareRoutes orders routes by key, then kind and table.
func compareRoutes(a, b Route) int {
	return cmp.Or(compareRouteKeys(a.RouteKey, b.RouteKey), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Table, b.Table))
}

// setRoutes records that the service whose verdict routes were prev's
// (nil: none) now wants next's (nil: none): the counts of the routes it
// stops or starts wanting change, and each key whose desired route
// changes is queued for Apply. The routes are derived from both (a
// service handed to the renderer is never mutated) rather than kept: the
// previous service is in the caches when the next arrives. The caller
// holds mu.
func (r *Renderer) setRoutes(prev, next *servicerenderer.ContivService) {
	if sameRoutes(prev, next) {
		return
	}
	all, ips := appendRoutes(r.routesBuf[:0], r.ipsBuf, prev, &r.cfg)
	n := len(all)
	all, ips = appendRoutes(all, ips, next, &r.cfg)
	r.routesBuf, r.ipsBuf = all[:0], ips[:0]
	old, routes := all[:n], all[n:]
	if slices.Equal(old, routes) {
		return
	}
	for _, rt := range old {
		r.routeRef(rt, -1)
	}
	for _, rt := range routes {
		r.routeRef(rt, 1)
	}
}

// sameRoutes tells, without deriving them, whether two services (either
// may be nil) have the same verdict routes for certain: they are the
// same service, or have the same cluster IPs under the same internal
// policy, Cluster (the routes of a service are its cluster IPs'
// rejections, which only a Local internal policy lets its ports'
// endpoints change: servicerenderer.RejectIPs). False says nothing.
func sameRoutes(a, b *servicerenderer.ContivService) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.InternalPolicy == b.InternalPolicy && a.InternalPolicy != servicerenderer.PolicyLocal &&
		slices.Equal(a.ClusterIPs, b.ClusterIPs)
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
	old := r.desired.Routes[rt.RouteKey]
	if n > 0 && old != nil && *old == rt {
		return // still wanted, and still first: nothing changes
	}
	if delta > 0 && old == nil && (rt.Kind == RouteLookup || rt.Table == 0) {
		// No route was wanted on the key: rt is the one (as the search
		// below finds; spared, as most keys have one route).
		c := rt
		r.setDesiredRoute(rt.RouteKey, &c)
		return
	}
	var want Route
	found := false
	for _, k := range []RouteKind{RouteDrop, RouteReject, RouteLookup} {
		c := rt
		c.Kind = k
		if k != RouteLookup {
			c.Table = 0
		}
		if r.routeRefs[c] > 0 && (!found || compareRoutes(c, want) < 0) {
			want, found = c, true
		}
	}
	switch {
	case !found && old == nil, found && old != nil && want == *old:
		return
	case !found:
		delete(r.desired.Routes, rt.RouteKey)
		r.routeChanged(rt.RouteKey)
	default:
		w := want
		r.setDesiredRoute(rt.RouteKey, &w)
	}
}

// setDesiredRoute makes rt the desired route on k; the caller holds mu.
func (r *Renderer) setDesiredRoute(k RouteKey, rt *Route) {
	r.desired.Routes[k] = rt
	r.routeChanged(k)
}

// routeChanged queues k, whose desired route changed, for Apply.
func (r *Renderer) routeChanged(k RouteKey) {
	if !r.synced {
		return // the next apply is full: it plans every key and clears failures
	}
	if r.dirtyRoutes == nil {
		r.dirtyRoutes = map[RouteKey]struct{}{}
	}
	r.dirtyRoutes[k] = struct{}{}
	r.failures.Delete(ObjectID{Kind: ObjectRoute, Route: k})
}

// ownedRoute tells whether a route VPP holds is the agent's: the service
// CIDR's drop route in the pod or the main VRF or its lookup of the main
// VRF in the pod VRF, a /32 reject in the main VRF or lookup in the pod VRF
// inside the service CIDR (which earlier versions made per cluster IP:
// a full apply deletes them), or a route the agent wants on that key.
// ASSUMPTION: routes have no tag, so such a route is
// taken for the agent's whoever made it (which is why the renderer makes
// no route outside the service CIDR).
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
	case k.Prefix.AsPrefix() == cidr.Masked():
		return (rt.Kind == RouteDrop && (k.VRF == r.cfg.PodVRF || k.VRF == r.cfg.MainVRF)) ||
			(rt.Kind == RouteLookup && k.VRF == r.cfg.PodVRF && rt.Table == r.cfg.MainVRF)
	case k.Prefix.Bits() == 32 && cidr.Contains(k.Prefix.Addr()):
		return (rt.Kind == RouteReject && k.VRF == r.cfg.MainVRF) || (rt.Kind == RouteLookup && k.VRF == r.cfg.PodVRF)
	}
	return false
}

// sinkLocals are the locals of a frontend that drops: the sink at port
// (main VRF) beside the placeholder; nil without a service CIDR.
func sinkLocals(cfg *Config, port uint16) []Local {
	sink, ok := IPv4Of(SinkAddress(cfg))
	if !ok {
		return nil
	}
	return []Local{Placeholder, {IP: sink, Port: port, VRF: cfg.MainVRF, Probability: 1}}
}
