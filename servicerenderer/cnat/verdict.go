package cnat

import (
	"maps"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/reconcile"
)

// BuildRoutes is the verdict routes of one service on this node, as the
// NAT44 renderer makes them: cnat translates in cnat-input before the FIB
// lookup, so a packet to a cluster IP that no translation took (a port
// without endpoints, a port the service does not define) reaches the FIB.
// For each cluster IP servicerenderer.RejectIPs picks in an IPv4 service
// CIDR: a /32 reject route (ICMP_PROHIBIT) in the main VRF, which pod
// traffic reaches through the pod VRF's service-CIDR lookup of the main
// VRF (ServiceRoutes); and, for each family whose reject sink one of its
// frontends goes to (sinkPaths), the sink's /32 or /128 reject route in
// the main VRF (services share it). None when the main VRF is not table 0
// and Config.RejectAnyTable is unset (a reject path crashes VPP 25.02 in
// any other table, FACTS §1). Sorted (Route.Compare).
//
// A cluster IP that one of the service's ports translates gets no reject
// route: cnat puts each translated address in table 0 with its own FIB
// source, which outranks the API's, so a reject route beneath would
// forward nothing while the translation lasts (measured on VPP 25.02: a
// port the service does not define is dropped, not refused,
// docs/real-vpp.md). Making it anyway doubled the calls of a first
// programming (10 003 of 21 036 at W(10000), issue 34) for no verdict.
// The route is made when the address's last translation goes (its ports
// without endpoints are then refused), before that translation is
// deleted (planChanges).
func BuildRoutes(svc *servicerenderer.ContivService, cfg *Config) []Route {
	if svc == nil || !servicerenderer.Rejects(cfg.MainVRF, cfg.RejectAnyTable) {
		return nil
	}
	// Each untranslated cluster IP's reject, then each family's reject
	// sink when a frontend goes there.
	var out []Route
	for _, cidr := range cfg.ServiceCIDRs {
		for _, ip := range servicerenderer.RejectIPs(svc, cidr) {
			if cfg.MainVRF != 0 || !translatesClusterIP(svc, ip) {
				out = append(out, Route{Prefix: netip.PrefixFrom(ip, ip.BitLen()), VRF: cfg.MainVRF, Kind: RouteReject})
			}
		}
	}
	for _, v4 := range []bool{true, false} {
		if cidr := cfg.serviceCIDR(v4); cidr.IsValid() && cfg.usesRejectSink(svc, v4) {
			sink := servicerenderer.RejectSink(cidr)
			out = append(out, Route{Prefix: netip.PrefixFrom(sink, sink.BitLen()), VRF: cfg.MainVRF, Kind: RouteReject})
		}
	}
	slices.SortFunc(out, Route.Compare)
	return slices.Compact(out)
}

// translatesClusterIP tells whether the service's translations include
// one on its cluster IP ip: a TCP or UDP port (not 0) with a backend of
// ip's family under the internal policy, as appendService builds them
// (buildPaths).
func translatesClusterIP(svc *servicerenderer.ContivService, ip netip.Addr) bool {
	v4 := ip.Is4()
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if (p.Protocol != servicerenderer.TCP && p.Protocol != servicerenderer.UDP) || p.Port == 0 {
			continue
		}
		for _, b := range p.BackendsFor(svc.InternalPolicy) {
			if a := b.IP.Unmap(); a.IsValid() && a.Is4() == v4 && b.Port != 0 {
				return true
			}
		}
	}
	return false
}

// sinkPaths is the one path of a translation that no backend can take
// (kube-proxy's verdicts; cnat-input translates it, the FIB then decides,
// records-verdicts/verdicts-cnat.jsonl), port being the frontend's: to
// the reject sink when port p has no endpoint of ip's family (RejectSink,
// whose reject route answers ICMP unreachable, which cnat-output
// translates back to the frontend: the client fails in ~10 ms), else,
// with drop (external and LoadBalancer IPs), to the drop sink when the
// Local external policy leaves this node no endpoint (DropSink: the
// service CIDR's drop route). Nil when there is no such sink: no service
// CIDR of ip's family, a reject where no reject route is made
// (servicerenderer.Rejects: a main VRF other than table 0 on VPP 25.02;
// such traffic is routed on, as before), an IPv6 drop (Kubernetes allocates every IPv6
// service address but the first), a service without a cluster IP of ip's
// family (it does not serve that family: kube-proxy leaves such traffic
// alone). A NodePort gets no drop sink: VPP's ip4-local drops an
// untranslated one already (measured alike).
func sinkPaths(cfg *Config, svc *servicerenderer.ContivService, p *servicerenderer.Port, ip netip.Addr, port uint16, drop bool) []Path {
	cidr := cfg.serviceCIDR(ip.Is4())
	if !cidr.IsValid() || !servesFamily(svc, ip.Is4()) {
		return nil
	}
	if !p.HasBackend(ip.Is4()) {
		if !servicerenderer.Rejects(cfg.MainVRF, cfg.RejectAnyTable) {
			return nil
		}
		return []Path{{IP: servicerenderer.RejectSink(cidr), Port: port}}
	}
	if sink := servicerenderer.DropSink(cidr); drop && sink.IsValid() {
		return []Path{{IP: sink, Port: port}}
	}
	return nil
}

// servesFamily tells whether svc has a cluster IP of the family (IPv4
// when v4).
func servesFamily(svc *servicerenderer.ContivService, v4 bool) bool {
	return slices.ContainsFunc(svc.ClusterIPs, func(ip netip.Addr) bool { ip = ip.Unmap(); return ip.IsValid() && ip.Is4() == v4 })
}

// usesRejectSink tells whether svc, serving the family (IPv4 when v4),
// has a frontend of it that sinkPaths sends to the reject sink: an
// external IP, or a NodePort on the node's address of that family, of a
// TCP or UDP port without a backend of the family.
func (c *Config) usesRejectSink(svc *servicerenderer.ContivService, v4 bool) bool {
	if !servesFamily(svc, v4) {
		return false
	}
	ext := slices.ContainsFunc(svc.ExternalIPs, func(ip netip.Addr) bool {
		ip = ip.Unmap()
		return ip.IsValid() && ip.Is4() == v4 && !ip.IsUnspecified() && !ip.IsMulticast()
	})
	node := (v4 && c.NodeIP4.IsValid()) || (!v4 && c.NodeIP6.IsValid())
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if (p.Protocol == servicerenderer.TCP || p.Protocol == servicerenderer.UDP) && p.Port != 0 &&
			!p.HasBackend(v4) && (ext || (p.NodePort != 0 && node)) {
			return true
		}
	}
	return false
}

// sinkOnly tells whether every path of a dumped translation goes to a
// sink of the service CIDRs (sinkPaths): such a translation is the
// renderer's whatever its VIP (an external IP of a service deleted while
// the agent was down is then deleted). ASSUMPTION: no other program
// translates to the service CIDRs' first or last address.
func (c *Config) sinkOnly(paths []Path) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		cidr := c.serviceCIDR(p.IP.Is4())
		if !p.IP.IsValid() || !cidr.IsValid() || (p.IP != servicerenderer.RejectSink(cidr) && p.IP != servicerenderer.DropSink(cidr)) {
			return false
		}
	}
	return true
}

// serviceCIDR is the first service CIDR of the family (IPv4 when v4).
func (c *Config) serviceCIDR(v4 bool) netip.Prefix {
	for _, p := range c.ServiceCIDRs {
		if p.IsValid() && p.Addr().Is4() == v4 {
			return p
		}
	}
	return netip.Prefix{}
}

// ownedVerdict tells whether a route VPP holds is one of the renderer's
// verdict routes: a /32 inside an IPv4 service CIDR, a reject in the main
// VRF or a lookup of the main VRF in the pod VRF (which earlier versions
// made per cluster IP: a full apply deletes them), or a /128 reject in the
// main VRF inside an IPv6 one (the IPv6 reject sink's). ASSUMPTION (as for the drop
// routes and the NAT44 renderer): routes have no tag, so such a route is
// taken for the renderer's, whoever made it.
func (c *Config) ownedVerdict(r Route) bool {
	a := r.Prefix.Addr()
	if r.Prefix.Bits() != a.BitLen() || !c.inServiceCIDR(a) {
		return false
	}
	if a.Is6() {
		return r.Kind == RouteReject && r.VRF == c.MainVRF // the IPv6 reject sink's
	}
	return (r.Kind == RouteReject && r.VRF == c.MainVRF) ||
		(r.Kind == RouteLookup && r.Table == c.MainVRF && r.VRF == c.PodVRF && c.PodVRF != c.MainVRF)
}

// setRoutes records that entry e now wants routes (sorted): each route
// whose count of services starts or stops being 0 is queued for Apply.
// The caller holds mu.
func (r *Renderer) setRoutes(e *entry, routes []Route) {
	if slices.Equal(e.routes, routes) {
		return
	}
	for _, rt := range e.routes {
		if r.routeRefs[rt]--; r.routeRefs[rt] <= 0 {
			delete(r.routeRefs, rt)
			r.markRoute(rt)
		}
	}
	for _, rt := range routes {
		if r.routeRefs[rt]++; r.routeRefs[rt] == 1 {
			r.markRoute(rt)
		}
	}
	e.routes = routes
}

func (r *Renderer) markRoute(rt Route) {
	if !r.synced {
		return // the next apply is full: it plans every route and clears failures
	}
	if r.dirtyRoutes == nil {
		r.dirtyRoutes = map[Route]struct{}{}
	}
	r.dirtyRoutes[rt] = struct{}{}
	r.failures.Delete(ObjectID{Kind: ObjectRoute, Route: rt})
}

// loadVerdicts makes the dumped verdict routes the renderer owns what VPP
// holds.
func (r *Renderer) loadVerdicts(dumped []Route) {
	clear(r.verdicts)
	for _, rt := range dumped {
		rt.Prefix = rt.Prefix.Masked()
		if r.cfg.ownedVerdict(rt) {
			r.verdicts[rt] = struct{}{}
		}
	}
}

// appendDiffVerdicts appends the operations that make VPP hold the wanted
// verdict routes among routes (all of them when routes is nil): deletes
// first, then adds, each sorted. With pending, only the adds into those
// VRFs (routes that wait for their table).
func (r *Renderer) appendDiffVerdicts(ops []Op, routes map[Route]struct{}, pending *reconcile.Waits[uint32, struct{}]) []Op {
	var keys []Route
	if routes == nil {
		keys = slices.Concat(slices.Collect(maps.Keys(r.routeRefs)), slices.Collect(maps.Keys(r.verdicts)))
	} else {
		keys = slices.Collect(maps.Keys(routes))
	}
	slices.SortFunc(keys, Route.Compare)
	keys = slices.Compact(keys)
	var adds []Op
	for _, rt := range keys {
		_, have := r.verdicts[rt]
		want := r.routeRefs[rt] > 0
		waits := pending != nil && pending.Has(rt.VRF)
		switch {
		case have && !want && pending == nil:
			ops = append(ops, Op{Kind: OpVerdictRoute, Route: rt})
		case want && !have && (pending == nil || waits):
			adds = append(adds, Op{Kind: OpVerdictRoute, Route: rt, Add: true})
		}
	}
	return append(ops, adds...)
}

// verdictList is a sorted list of a set of routes.
func verdictList[V any](m map[Route]V) []Route {
	return slices.SortedFunc(maps.Keys(m), Route.Compare)
}
