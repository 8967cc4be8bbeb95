package agent

import (
	"fmt"
	"net/netip"
	"slices"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// CNATTraceState is what TraceCNAT reads: what a cnat renderer applied
// (the /v1/cnat view) and this node's pod subnets (the /v1/ipam view).
type CNATTraceState struct {
	Translations []*cnat.Translation
	// Node is the applied node configuration; nil when none is.
	Node *cnat.Node
	// PodSubnets are this node's pod subnets: a backend inside one is
	// local, behind one of this node's pod interfaces.
	PodSubnets []netip.Prefix
}

// TraceCNAT answers, from a cnat state alone, where cnat sends a packet
// and which source each backend sees, with the rules of the simulated
// VPP's cnat oracle (sim.VPP.CnatTrace, which tests hold it to): an exact
// match of address, port and protocol; a path repeated k times of n
// weighs k/n; under the K8S policy a hairpin or a remote backend reached
// from outside sees the SNAT address of the client's family, other
// backends the client; an untranslated packet from an INCLUDE_V4/V6
// interface to an address outside the exclude prefixes leaves with the
// SNAT address, unless a drop route of the node (the service-CIDR routes)
// covers the destination: it is dropped, or a cluster IP's reject route
// (Node.Verdicts) does: it is refused. An empty p.Ingress is taken for
// the main NIC (in no SNAT table). TranslationID is left 0: the view does
// not carry VPP's ids.
//
// ASSUMPTION: a backend is local when this node's pod subnets hold it (the
// simulated VPP asks its pod interfaces' addresses); the renderer's paths
// name addresses only, so every path is resolved and sets no source. The
// view does not say which VRF an interface is in: a drop route of any VRF
// counts (the renderer puts the same routes in the pod and the main VRF,
// which hold every interface it configures; the oracle looks in the
// ingress interface's VRF only).
func TraceCNAT(s CNATTraceState, p sim.Packet) sim.CnatResult {
	node := s.Node
	if node == nil {
		node = &cnat.Node{}
	}
	key := cnat.Key{IP: p.Dst, Port: p.DstPort, Proto: p.Proto}
	i := slices.IndexFunc(s.Translations, func(t *cnat.Translation) bool { return t != nil && t.Key == key })
	if i < 0 {
		if rt, ok := verdictRoute(node, p.Dst); ok && rt.Kind == cnat.RouteReject {
			return sim.CnatResult{Verdict: sim.Rejected, Reason: sim.RouteRejectReason(p.Dst, rt.VRF)}
		} else if ok {
			return sim.CnatResult{Verdict: sim.Dropped, Reason: sim.RouteDropReason(p.Dst, rt.VRF)}
		}
		return sim.CnatResult{Verdict: sim.NotTranslated, Src: outboundSource(node, p),
			Reason: fmt.Sprintf("no cnat translation of %v port %d protocol %d", p.Dst, p.DstPort, p.Proto)}
	}
	return traceTranslation(s, node, s.Translations[i], p)
}

// verdictRoute is the node's longest route covering dst that drops (the
// service-CIDR routes) or rejects (a cluster IP's reject route in table 0;
// the pod VRF's lookup route leads there).
func verdictRoute(node *cnat.Node, dst netip.Addr) (cnat.Route, bool) {
	best, found := cnat.Route{}, false
	for _, rt := range slices.Concat(node.Routes, node.Verdicts) {
		if rt.Kind != cnat.RouteLookup && rt.Prefix.Contains(dst) && (!found || rt.Prefix.Bits() > best.Prefix.Bits()) {
			best, found = rt, true
		}
	}
	return best, found
}

// traceTranslation spreads a packet over a translation's paths.
func traceTranslation(s CNATTraceState, node *cnat.Node, t *cnat.Translation, p sim.Packet) sim.CnatResult {
	var paths []netip.AddrPort
	for _, path := range t.Paths {
		if path.IP.IsValid() {
			paths = append(paths, netip.AddrPortFrom(path.IP, path.Port))
		}
	}
	res := sim.CnatResult{Verdict: sim.Translated,
		Reason: fmt.Sprintf("cnat translation %s (%d of %d paths resolved)", t.Key, len(paths), len(t.Paths))}
	if len(paths) == 0 {
		res.Verdict = sim.Dropped
		res.Reason = fmt.Sprintf("cnat translation %s has no resolved path: dropped", t.Key)
		return res
	}
	count := map[netip.AddrPort]int{}
	for _, b := range paths {
		if count[b]++; count[b] == 1 {
			r := sim.CnatReach{Backend: b, Local: s.local(b.Addr())}
			r.Src, r.Verdict, r.Reason = backendSource(node, p, b.Addr(), r.Local)
			res.Backends = append(res.Backends, r)
		}
	}
	for i := range res.Backends {
		res.Backends[i].Weight = float64(count[res.Backends[i].Backend]) / float64(len(paths))
	}
	slices.SortFunc(res.Backends, func(a, b sim.CnatReach) int { return a.Backend.Compare(b.Backend) })
	return res
}

// local tells whether a backend is one of this node's pods.
func (s CNATTraceState) local(a netip.Addr) bool {
	return slices.ContainsFunc(s.PodSubnets, func(p netip.Prefix) bool { return p.Contains(a) })
}

// backendSource is the source a backend sees and whether the connection
// works.
func backendSource(node *cnat.Node, p sim.Packet, backend netip.Addr, local bool) (netip.Addr, sim.Verdict, string) {
	hairpin := backend == p.Src
	if !hairpin && (local || !fromOutside(node, p.Ingress)) {
		return p.Src, sim.Translated, "the client's own address"
	}
	why := "hairpin (the backend is the client)"
	if !hairpin {
		why = "a remote backend reached from outside"
	}
	if snat := snatAddr(node, p.Src); node.Policy == cnat.PolicyK8S && snat.IsValid() {
		return snat, sim.Translated, why + ": source-NATed to the SNAT address by the K8S policy"
	}
	return p.Src, sim.Dropped, why + " without the K8S policy's source NAT: the reply does not come back"
}

// fromOutside tells whether a packet arriving on ingress comes from
// outside this node's pods: some interface is in the POD table, and not
// this one.
func fromOutside(node *cnat.Node, ingress string) bool {
	pods := false
	for _, t := range node.Tables {
		pods = pods || t.Has(cnat.TablePod)
	}
	return pods && !node.Tables[ingress].Has(cnat.TablePod)
}

// snatAddr is the SNAT address of a's family; invalid when none is set.
func snatAddr(node *cnat.Node, a netip.Addr) netip.Addr {
	snat := node.SNAT6
	if a.Is4() {
		snat = node.SNAT4
	}
	if snat.IsUnspecified() {
		return netip.Addr{}
	}
	return snat
}

// outboundSource is the source an untranslated packet leaves with: the
// SNAT address when it comes from an INCLUDE table interface of its family
// towards an address outside every exclude prefix, under the IF_PFX or K8S
// policy.
func outboundSource(node *cnat.Node, p sim.Packet) netip.Addr {
	table := cnat.TableIncludeV6
	if p.Src.Is4() {
		table = cnat.TableIncludeV4
	}
	snat := snatAddr(node, p.Src)
	excluded := slices.ContainsFunc(node.Exclude, func(x netip.Prefix) bool { return x.Contains(p.Dst) })
	if node.Policy == cnat.PolicyNone || !node.Tables[p.Ingress].Has(table) || excluded || !snat.IsValid() {
		return p.Src
	}
	return snat
}
