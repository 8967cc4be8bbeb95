package sim

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// Trace follows a packet through the NAT44-ED datapath the simulated VPP
// is configured for, in both directions, with what a real VPP 25.02 was
// measured to do (FACTS.md §4); Translate answers the mapping lookup
// alone. On top of Translate's answer:
//
//   - From an interface with the inside feature, a port mapping of an
//     address that also has an address-only identity mapping is not
//     reached: the identity is matched first, unless the address is also
//     a NAT pool address (the pool line of the working configuration).
//   - The reply of a translated packet that arrived on an interface with
//     the output feature, while the NAT pool holds an address, is
//     dropped by the output feature (its in2out session lookup uses the
//     backend's VRF, the session is keyed in the ingress interface's) for
//     every backend in another VRF than the ingress interface, unless an
//     address-only identity mapping of the frontend address exists in the
//     backend's VRF. Every other reply is translated back.
//   - A packet that matches no mapping is looked up in the FIB routes of
//     its ingress interface's VRF (SetInterfaceVRF): a DROP route drops
//     it, another route forwards it; without a route, under the SNAT
//     configuration (forwarding on, a NAT pool address and an interface
//     with the output feature) it leaks out of that interface,
//     source-NATed to a pool address (Leaked).
//
// ASSUMPTION: the reply rule applies to every frontend reached through
// the output-feature interface; it was measured for ExternalIP and
// LoadBalancer-IP frontends (FACTS.md also says ClusterIPs are reachable
// from outside with forwarding on, without naming the main NIC's
// features: under the output feature this model drops their replies).
//
// ASSUMPTION: the simulated VPP has no routes to pods or hosts: a
// destination no route covers follows the default route out of the
// output-feature interface. Trace is meant for service addresses.
func (v *VPP) Trace(p Packet) Result {
	v.mu.Lock()
	defer v.mu.Unlock()
	res, _ := v.traceLocked(p)
	return res
}

// traceLocked is Trace with mu held; it also returns the mapping that
// translated the packet, if any.
func (v *VPP) traceLocked(p Packet) (Result, *staticMapping) {
	if denied, why := v.aclVerdictLocked(p); denied {
		return Result{Verdict: Dropped, Reason: why}, nil
	}
	res, how, m := v.translateLocked(p)
	switch how {
	case mapped:
		if res.Verdict != Translated {
			return res, m
		}
		if r, hidden := v.identityFirst(p, m); hidden {
			return r, nil
		}
		if r, sunk := v.translatedIntoDrop(res); sunk {
			return r, m
		}
		v.traceReplies(&res, p)
		return res, m
	case forwarded, noFeature:
		if p.Dst.Is4() && p.Src.Is4() {
			return v.traceUnmapped(res, p), nil
		}
	}
	return res, nil
}

// translatedIntoDrop tells whether every backend a translated packet may
// reach is covered by a DROP route of its VRF, or by a reject route: NAT
// runs before the FIB lookup, so the translated packet is dropped (FACTS
// §4: a mapping to an unallocated service address drops exactly that
// port) or refused, but the client never sees that refusal
// (testdata/records-verdicts/verdicts-nat44.jsonl: with twice-NAT the ICMP
// error goes to the twice-NAT address; with self-twice-NAT it reaches an
// outside client translated back but with a wrong IPv4 header checksum,
// and a pod client untranslated): Dropped.
func (v *VPP) translatedIntoDrop(res Result) (Result, bool) {
	if len(res.Backends) == 0 {
		return Result{}, false
	}
	var first Route
	for i, b := range res.Backends {
		rt, ok := v.routeLocked(b.VRF, b.IP)
		if !ok || !(rt.Drop || rt.Reject) || (i > 0 && rt.Drop != first.Drop) {
			return Result{}, false
		}
		if i == 0 {
			first = rt
		}
	}
	b := res.Backends[0]
	if first.Reject {
		return Result{Verdict: Dropped, Reason: fmt.Sprintf(
			"translated to %v, which the reject route of VRF %d refuses, but NAT44-ED delivers no ICMP error the client recognises",
			netip.AddrPortFrom(b.IP, b.Port), first.VRF)}, true
	}
	return Result{Verdict: Dropped, Reason: fmt.Sprintf(
		"translated to %v, which a DROP route of VRF %d drops (a frontend with no usable endpoint here)",
		netip.AddrPortFrom(b.IP, b.Port), b.VRF)}, true
}

// identityFirst applies the rule that, from an inside interface, an
// address-only identity mapping of the destination is matched before a
// port mapping of it, unless the address is also a NAT pool address.
// ASSUMPTION: an identity local in any VRF counts.
func (v *VPP) identityFirst(p Packet, m *staticMapping) (Result, bool) {
	n := v.nat
	idx, _ := v.ifaceIndex(p.Ingress)
	if n.ifaces[idx]&featIn == 0 || m.key.port == 0 {
		return Result{}, false
	}
	if id := n.identities[o2iKey{addr: p.Dst}]; id == nil || !id.addrOnly {
		return Result{}, false
	}
	if slices.ContainsFunc(n.pool, func(a poolAddr) bool { return a.addr == p.Dst }) {
		return Result{}, false
	}
	return Result{Reason: fmt.Sprintf(
		"the address-only identity mapping of %v is matched before the port mapping (%v is not a NAT pool address)",
		p.Dst, p.Dst)}, true
}

// traceReplies fills the reply verdicts of a translated packet.
// ASSUMPTION: without a (non-twice-NAT) pool address the output feature
// lets the reply pass.
func (v *VPP) traceReplies(res *Result, p Packet) {
	n := v.nat
	idx, _ := v.ifaceIndex(p.Ingress)
	checked := n.output[idx] && len(n.pool) > 0
	inVRF := v.ifaceVRF(p.Ingress)
	id := n.identities[o2iKey{addr: p.Dst}]
	res.Reply, res.ReplyReason = Translated, "the session translates the reply back"
	for i := range res.Backends {
		b := &res.Backends[i]
		b.Reply = Translated
		if !checked || b.VRF == inVRF {
			continue
		}
		if id != nil && id.addrOnly && slices.Contains(id.vrfs, b.VRF) {
			if res.Reply == Translated {
				res.ReplyReason = fmt.Sprintf("the reply passes the output feature of %s: identity mapping of %v in VRF %d",
					p.Ingress, p.Dst, b.VRF)
			}
			continue
		}
		b.Reply = Dropped
		if res.Reply == Translated {
			res.Reply = Dropped
			res.ReplyReason = fmt.Sprintf(
				"reply dropped by the output feature of %s: its in2out session lookup uses VRF %d, the session is keyed in VRF %d (no address-only identity mapping of %v in VRF %d)",
				p.Ingress, b.VRF, inVRF, p.Dst, b.VRF)
		}
	}
}

// traceUnmapped follows a packet no mapping matched through the FIB.
func (v *VPP) traceUnmapped(res Result, p Packet) Result {
	vrf := v.ifaceVRF(p.Ingress)
	if rt, found := v.routeLocked(vrf, p.Dst); found {
		switch {
		case rt.Drop && rt.Prefix.Bits() == 32:
			return Result{Verdict: Dropped, Reason: fmt.Sprintf(
				"no translation matched; dropped by the drop route %v in VRF %d (a frontend with no usable endpoint here)", rt.Prefix, rt.VRF)}
		case rt.Drop:
			return Result{Verdict: Dropped, Reason: RouteDropReason(p.Dst, rt.VRF, vrf)}
		case rt.Reject:
			return Result{Verdict: Rejected, Reason: RouteRejectReason(p.Dst, rt.VRF)}
		}
		res.Reason += fmt.Sprintf("; a FIB route in VRF %d forwards it", vrf)
		return res
	}
	egress, snat, ok := v.snatConfig(vrf)
	if !ok {
		return res
	}
	return Result{
		Verdict: Leaked,
		Reason: fmt.Sprintf("no mapping and no route: leaking out of %s SNATed to %v (the output feature source-NATs it)",
			egress, snat),
		Egress: egress,
		SNAT:   snat,
	}
}

// RouteDropReason says that a DROP route covering dst in table vrf
// dropped a packet no translation matched, which came in from table in
// (through a lookup route when they differ): the reason of the NAT44 and
// the cnat oracles alike.
func RouteDropReason(dst netip.Addr, vrf, in uint32) string {
	s := fmt.Sprintf("no translation matched; dropped by the service-CIDR route (a DROP route covering %v in VRF %d)", dst, vrf)
	if vrf != in {
		s += fmt.Sprintf(", reached from VRF %d by its lookup route", in)
	}
	return s
}

// RouteRejectReason says that a reject route (ICMP_UNREACH) of table vrf
// covering dst refused a packet no translation matched.
func RouteRejectReason(dst netip.Addr, vrf uint32) string {
	return fmt.Sprintf("no translation matched; refused (ICMP unreachable) by the reject route covering %v in VRF %d", dst, vrf)
}

// snatConfig tells whether the SNAT configuration is present (forwarding
// on, a NAT pool address, an interface with the output feature) and
// returns that interface (the lowest index if several) and the address a
// packet from VRF vrf is source-NATed to.
// ASSUMPTION: the first pool address with no tenant VRF (~0) or the
// packet's VRF; failing that the first pool address.
func (v *VPP) snatConfig(vrf uint32) (egress string, snat netip.Addr, ok bool) {
	n := v.nat
	if !n.forwarding || len(n.pool) == 0 || len(n.output) == 0 {
		return "", netip.Addr{}, false
	}
	egress = v.ifaceName(slices.Min(slices.Collect(maps.Keys(n.output))))
	snat = n.pool[0].addr
	if i := slices.IndexFunc(n.pool, func(a poolAddr) bool { return a.vrf == noIndex || a.vrf == vrf }); i >= 0 {
		snat = n.pool[i].addr
	}
	return egress, snat, true
}
