package sim

import (
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat_types"
)

// Packet is a packet entering VPP, as the translation oracle sees it.
type Packet struct {
	Src, Dst netip.Addr
	Proto    ip_types.IPProto
	DstPort  uint16
	// Ingress names the interface the packet arrives on.
	Ingress string
}

// Verdict is what NAT44-ED does with a packet.
type Verdict uint8

// The verdicts.
const (
	// NotTranslated: the packet goes on with its addresses unchanged.
	NotTranslated Verdict = iota
	// Translated: the destination is rewritten to one of the backends.
	Translated
	// Dropped: NAT44-ED (or, for Trace, a FIB route) drops the packet.
	Dropped
	// Leaked (Trace only): no mapping matched and the packet leaves the
	// node through the interface with the output feature, source-NATed
	// to a pool address (Result.Egress, Result.SNAT).
	Leaked
	// Rejected (Trace only): no mapping matched and a reject route
	// (ICMP_UNREACH/ICMP_PROHIBIT, table 0) answers ICMP unreachable: the client fails
	// at once.
	Rejected
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Translated:
		return "translated"
	case Dropped:
		return "dropped"
	case Leaked:
		return "leaked"
	case Rejected:
		return "rejected"
	}
	return "not translated"
}

// Result is the oracle's answer for one packet.
type Result struct {
	Verdict Verdict
	// Reason says why, in a few words.
	Reason string
	// Backends are where a translated packet may go, sorted by IP, port
	// and VRF, with probabilities that sum to 1.
	Backends []Reach
	// Affinity and Tag are those of the matching mapping.
	Affinity uint32
	Tag      string

	// The fields below are filled by Trace only; Translate leaves them
	// zero.

	// Reply is what happens to the backends' replies when Verdict is
	// Translated: Translated (the session translates them back to the
	// client) or Dropped if any backend's reply is dropped (each Reach
	// says its own). ReplyReason says why.
	Reply       Verdict
	ReplyReason string
	// Egress and SNAT are, for a Leaked packet, the interface it leaves
	// through and the source address it leaves with.
	Egress string
	SNAT   netip.Addr
}

// Reach is one backend a translated packet may reach.
type Reach struct {
	IP          netip.Addr
	Port        uint16
	VRF         uint32
	Probability float64
	// Src is the packet's source address as the backend sees it: the
	// client's, or a twice-NAT pool address when the source is rewritten.
	Src netip.Addr
	// Reply (Trace only) is what happens to this backend's reply:
	// Translated back to the client or Dropped.
	Reply Verdict
}

// lbSumCrashReason is the oracle's reason for a load-balanced mapping
// whose probabilities sum to a multiple of 256 (lbpick.go).
const lbSumCrashReason = "load-balanced mapping whose probabilities sum to a multiple of 256 (all 0 included): VPP 25.02 crashes (SIGFPE) on the first packet"

// Translate tells what the NAT44-ED configuration the simulated VPP holds
// does with a packet: it is translated only when it arrives on an
// interface with the outside or the output feature and its destination address, port
// and protocol match a static or load-balanced mapping (or an
// address-only one). Twice-NAT rewrites the source to the first twice-NAT
// pool address; self-twice-NAT does so only towards a backend that is the
// source itself. Without a mapping, an identity mapping or forwarding
// lets the packet pass untranslated, and with forwarding off NAT44-ED
// drops it. The backends of a load-balanced mapping get the shares VPP
// 25.02's pick gives them (lbpick.go: exact while the probabilities sum
// to 1..255, skewed past 255); one whose probabilities sum to a multiple
// of 256 answers Dropped (a real VPP 25.02 crashes on that packet; the
// oracle does not). Sessions and affinity state are not consulted: the answer
// is the set of possible backends. Translate looks at the mapping lookup
// only; Trace follows the packet and its reply through the measured
// datapath.
func (v *VPP) Translate(p Packet) Result {
	v.mu.Lock()
	defer v.mu.Unlock()
	res, _, _ := v.translateLocked(p)
	return res
}

// lookup says how the forward mapping lookup ended, for Trace.
type lookup uint8

const (
	noNAT        lookup = iota // plugin disabled, unknown interface, not IPv4
	noFeature                  // the ingress interface has no outside/output feature
	mapped                     // a static or load-balanced mapping matched
	identityPass               // an identity mapping matched
	forwarded                  // no mapping; forwarding passes the packet
	noForwarding               // no mapping; forwarding off drops it
)

// translateLocked is Translate with mu held; it also says how the lookup
// ended and which mapping matched.
func (v *VPP) translateLocked(p Packet) (Result, lookup, *staticMapping) {
	n := v.nat
	if !n.enabled {
		return Result{Reason: "NAT44-ED plugin disabled"}, noNAT, nil
	}
	idx, ok := v.ifaceIndex(p.Ingress)
	if !ok {
		return Result{Reason: "unknown ingress interface " + p.Ingress}, noNAT, nil
	}
	if n.ifaces[idx]&featOut == 0 && !n.output[idx] {
		// The output feature translates arriving traffic too.
		return Result{Reason: "ingress interface " + p.Ingress + " has neither the NAT44 outside nor the output feature"}, noFeature, nil
	}
	if !p.Dst.Is4() || !p.Src.Is4() {
		return Result{Reason: "not IPv4"}, noNAT, nil
	}
	key := o2iKey{addr: p.Dst, port: p.DstPort, proto: uint8(p.Proto)}
	addrOnly := o2iKey{addr: p.Dst}
	m := n.statics[key]
	if m == nil {
		m = n.statics[addrOnly]
	}
	if m != nil {
		return n.translate(m, p), mapped, m
	}
	if n.identities[key] != nil || n.identities[addrOnly] != nil {
		return Result{Reason: "identity mapping"}, identityPass, nil
	}
	if n.forwarding {
		return Result{Reason: "no mapping; forwarding passes it"}, forwarded, nil
	}
	return Result{Verdict: Dropped, Reason: "no mapping and forwarding off (no translation)"}, noForwarding, nil
}

func (n *natState) translate(m *staticMapping, p Packet) Result {
	res := Result{Verdict: Translated, Reason: "static mapping", Tag: m.tag}
	if m.lb {
		res.Reason = "load-balanced mapping"
		res.Affinity = m.affinity
	}
	shares := []float64{1} // a static mapping's one local
	if m.lb {
		if shares = lbShares(m.locals); shares == nil {
			return Result{Verdict: Dropped, Reason: lbSumCrashReason, Affinity: res.Affinity, Tag: m.tag}
		}
	}
	twice := m.flags&nat_types.NAT_IS_TWICE_NAT != 0
	self := m.flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0
	var pool netip.Addr
	if len(n.twicePool) > 0 {
		pool = n.twicePool[0].addr
	}
	for i, l := range m.locals {
		if shares[i] == 0 {
			continue // never picked (FACTS §3): the placeholder local, say
		}
		src := p.Src
		if twice || (self && l.addr == p.Src) {
			if !pool.IsValid() {
				return Result{Verdict: Dropped, Reason: "twice-NAT needs a twice-NAT pool address and there is none", Tag: m.tag}
			}
			src = pool
		}
		res.Backends = append(res.Backends, Reach{
			IP: l.addr, Port: l.port, VRF: l.vrf, Probability: shares[i], Src: src,
		})
	}
	slices.SortStableFunc(res.Backends, func(a, b Reach) int {
		return Local{IP: a.IP, Port: a.Port, VRF: a.VRF}.compare(Local{IP: b.IP, Port: b.Port, VRF: b.VRF})
	})
	if m.key.port == 0 {
		// Address-only mappings keep the port.
		for i := range res.Backends {
			res.Backends[i].Port = p.DstPort
		}
	}
	return res
}

// ifaceIndex finds an interface by name. Called with mu held.
func (v *VPP) ifaceIndex(name string) (uint32, bool) {
	for idx, i := range v.ifaces {
		if i.name == name {
			return idx, true
		}
	}
	return 0, false
}

// SetInterfaceVRF puts an interface in a VRF (FIB table), as
// "set interface ip table" does; interfaces are in the VRF they were
// created with (InterfaceSpec.VRF, 0 by default). Trace uses it: the FIB
// route lookup of a packet that matches no mapping, and the VRF of a reply.
func (v *VPP) SetInterfaceVRF(name string, vrf uint32) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	idx, ok := v.ifaceIndex(name)
	if !ok {
		return fmt.Errorf("simulated VPP: no interface %q", name)
	}
	v.ifaces[idx].vrf = vrf
	return nil
}

// ifaceVRF is an interface's VRF (0 for an unknown one). Called with mu
// held.
func (v *VPP) ifaceVRF(name string) uint32 {
	if idx, ok := v.ifaceIndex(name); ok {
		return v.ifaces[idx].vrf
	}
	return 0
}
