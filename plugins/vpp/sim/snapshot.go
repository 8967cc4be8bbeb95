package sim

import (
	"slices"

	"go.fd.io/govpp/binapi/nat_types"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// Snapshot returns the NAT44 state the simulated VPP holds, in the
// renderer's model, as a full dump through the binary API reads it:
// SessionLimit is 0 while the plugin is disabled; the pool is sorted by
// address (twice-NAT addresses after the others at equal address); a
// static mapping's single local has Probability 0 and its Affinity is 0
// (VPP keeps neither for it); locals are sorted by IP, port and VRF;
// Routes holds the drop routes added through the API (nil: none). Unlike
// a dump, it shows the affinity VPP keeps.
func (v *VPP) Snapshot() *nat44.State {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nat
	st := &nat44.State{
		Global: nat44.Global{
			SessionLimit: n.sessions,
			Forwarding:   n.forwarding,
			Timeouts: nat44.Timeouts{
				UDP:            n.timeouts.UDP,
				TCPEstablished: n.timeouts.TCPEstablished,
				TCPTransitory:  n.timeouts.TCPTransitory,
				ICMP:           n.timeouts.ICMP,
			},
		},
		Interfaces: make(map[string]nat44.Features),
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity),
	}
	for _, p := range n.pool {
		st.Pool = append(st.Pool, nat44.PoolAddress{IP: p.addr, VRF: p.vrf})
	}
	for _, p := range n.twicePool {
		st.Pool = append(st.Pool, nat44.PoolAddress{IP: p.addr, VRF: p.vrf, TwiceNAT: true})
	}
	slices.SortFunc(st.Pool, nat44.PoolAddress.Compare)
	for idx, f := range n.ifaces {
		var feat nat44.Features
		if f&featIn != 0 {
			feat |= nat44.FeatureIn
		}
		if f&featOut != 0 {
			feat |= nat44.FeatureOut
		}
		st.Interfaces[v.ifaceName(idx)] |= feat
	}
	for idx := range n.output {
		st.Interfaces[v.ifaceName(idx)] |= nat44.FeatureOutput
	}
	for _, m := range n.statics {
		mk := nat44.MappingKey{IP: m.key.addr, Port: m.key.port, Proto: nat44.Protocol(m.key.proto)}
		out := &nat44.Mapping{MappingKey: mk, TwiceNAT: twiceNATMode(m.flags), Tag: m.tag}
		for _, l := range m.locals {
			nl := nat44.Local{IP: l.addr, Port: l.port, VRF: l.vrf}
			if m.lb {
				nl.Probability = l.prob
			}
			out.Locals = append(out.Locals, nl)
		}
		if m.lb {
			out.Affinity = m.affinity
		}
		slices.SortFunc(out.Locals, nat44.Local.Compare)
		st.Mappings[mk] = out
	}
	for _, id := range n.identities {
		for _, vrf := range id.vrfs {
			k := nat44.IdentityKey{IP: id.key.addr, Port: id.key.port, Proto: nat44.Protocol(id.key.proto), VRF: vrf}
			st.Identities[k] = &nat44.Identity{IdentityKey: k, Tag: id.tag}
		}
	}
	for _, r := range v.fib.routes {
		if nr, ok := nat44Route(r.Route); ok {
			if st.Routes == nil {
				st.Routes = make(map[nat44.RouteKey]*nat44.Route)
			}
			st.Routes[nr.RouteKey] = &nr
		}
	}
	return st
}

// twiceNATMode reads the twice-NAT mode from NAT44 mapping flags.
func twiceNATMode(f nat_types.NatConfigFlags) nat44.TwiceNAT {
	switch {
	case f&nat_types.NAT_IS_TWICE_NAT != 0:
		return nat44.TwiceNATOn
	case f&nat_types.NAT_IS_SELF_TWICE_NAT != 0:
		return nat44.TwiceNATSelf
	}
	return nat44.TwiceNATOff
}

// nat44Route is r as the NAT44 renderer models it, when it drops, rejects
// or looks up another table.
func nat44Route(r Route) (nat44.Route, bool) {
	out := nat44.Route{RouteKey: nat44.RouteKey{Prefix: r.Prefix, VRF: r.VRF}}
	switch {
	case r.Drop:
	case r.Reject:
		out.Kind = nat44.RouteReject
	case r.Lookup:
		out.Kind, out.Table = nat44.RouteLookup, r.LookupVRF
	default:
		return nat44.Route{}, false
	}
	return out, true
}
