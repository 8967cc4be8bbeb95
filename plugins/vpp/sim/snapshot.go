package sim

import (
	"cmp"
	"slices"

	"go.fd.io/govpp/binapi/nat_types"
)

// Snapshot returns the NAT44 state the simulated VPP holds, in VPP's terms
// (nat44_ed's objects, protocol numbers, flags), as a full dump through
// the binary API reads it: SessionLimit is 0 while the plugin is
// disabled; the pool is sorted by address (twice-NAT addresses after the
// others at equal address); a static mapping's single local has
// Probability 0 and its Affinity is 0 (VPP keeps neither for it); locals
// are sorted by IP, port and VRF; Routes holds the drop, reject and lookup
// routes added through the API, sorted as Lines lists them (nil: none).
// Unlike a dump, it shows the affinity VPP keeps.
func (v *VPP) Snapshot() *NAT44State {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nat
	st := &NAT44State{
		Global: NAT44Global{
			SessionLimit: n.sessions,
			Forwarding:   n.forwarding,
			Timeouts:     n.timeouts,
		},
		Interfaces: make(map[string]NAT44Features),
		Mappings:   make(map[MappingKey]*Mapping),
		Identities: make(map[IdentityKey]*Identity),
	}
	for _, p := range n.pool {
		st.Pool = append(st.Pool, PoolAddress{IP: p.addr, VRF: p.vrf})
	}
	for _, p := range n.twicePool {
		st.Pool = append(st.Pool, PoolAddress{IP: p.addr, VRF: p.vrf, TwiceNAT: true})
	}
	slices.SortFunc(st.Pool, PoolAddress.compare)
	for idx, f := range n.ifaces {
		var feat NAT44Features
		if f&featIn != 0 {
			feat |= FeatureIn
		}
		if f&featOut != 0 {
			feat |= FeatureOut
		}
		st.Interfaces[v.ifaceName(idx)] |= feat
	}
	for idx := range n.output {
		st.Interfaces[v.ifaceName(idx)] |= FeatureOutput
	}
	for _, m := range n.statics {
		mk := MappingKey{IP: m.key.addr, Port: m.key.port, Proto: ipProto(m.key.proto)}
		out := &Mapping{MappingKey: mk, Flags: m.flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT), Tag: m.tag}
		for _, l := range m.locals {
			nl := Local{IP: l.addr, Port: l.port, VRF: l.vrf}
			if m.lb {
				nl.Probability = l.prob
			}
			out.Locals = append(out.Locals, nl)
		}
		if m.lb {
			out.Affinity = m.affinity
		}
		slices.SortFunc(out.Locals, Local.compare)
		st.Mappings[mk] = out
	}
	for _, id := range n.identities {
		for _, vrf := range id.vrfs {
			k := IdentityKey{IP: id.key.addr, Port: id.key.port, Proto: ipProto(id.key.proto), VRF: vrf}
			st.Identities[k] = &Identity{IdentityKey: k, Tag: id.tag}
		}
	}
	for _, r := range v.fib.routes {
		if r.Drop || r.Reject || r.Lookup {
			st.Routes = append(st.Routes, r.Route)
		}
	}
	slices.SortFunc(st.Routes, func(a, b Route) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()), cmp.Compare(a.VRF, b.VRF))
	})
	return st
}
