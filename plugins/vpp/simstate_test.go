package vpp

import (
	"go.fd.io/govpp/binapi/nat_types"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// simState is what the simulated VPP holds (in VPP's terms) in the NAT44
// renderer's model, so that tests compare it with what the client built
// or dumped.
func simState(v *sim.VPP) *nat44.State {
	s := v.Snapshot()
	g := s.Global
	st := &nat44.State{
		Global: nat44.Global{SessionLimit: g.SessionLimit, Forwarding: g.Forwarding, Timeouts: nat44.Timeouts{
			UDP: g.Timeouts.UDP, TCPEstablished: g.Timeouts.TCPEstablished, TCPTransitory: g.Timeouts.TCPTransitory, ICMP: g.Timeouts.ICMP,
		}},
		Interfaces: make(map[string]nat44.Features, len(s.Interfaces)),
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping, len(s.Mappings)),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity, len(s.Identities)),
	}
	for _, p := range s.Pool {
		st.Pool = append(st.Pool, nat44.PoolAddress{IP: p.IP, VRF: p.VRF, TwiceNAT: p.TwiceNAT})
	}
	for name, f := range s.Interfaces {
		st.Interfaces[name] = 0
		for _, b := range []struct {
			sim   sim.NAT44Features
			nat44 nat44.Features
		}{{sim.FeatureIn, nat44.FeatureIn}, {sim.FeatureOut, nat44.FeatureOut}, {sim.FeatureOutput, nat44.FeatureOutput}} {
			if f&b.sim != 0 {
				st.Interfaces[name] |= b.nat44
			}
		}
	}
	for _, m := range s.Mappings {
		k := nat44.MappingKey{IP: nat44.MustIPv4(m.IP), Port: m.Port, Proto: nat44.Protocol(m.Proto)}
		out := &nat44.Mapping{MappingKey: k, Affinity: m.Affinity, Tag: m.Tag}
		switch {
		case m.Flags&nat_types.NAT_IS_TWICE_NAT != 0:
			out.TwiceNAT = nat44.TwiceNATOn
		case m.Flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0:
			out.TwiceNAT = nat44.TwiceNATSelf
		}
		for _, l := range m.Locals {
			out.Locals = append(out.Locals, nat44.Local{IP: nat44.MustIPv4(l.IP), Port: l.Port, VRF: l.VRF, Probability: l.Probability})
		}
		st.Mappings[k] = out
	}
	for _, id := range s.Identities {
		k := nat44.IdentityKey{IP: id.IP, Port: id.Port, Proto: nat44.Protocol(id.Proto), VRF: id.VRF}
		st.Identities[k] = &nat44.Identity{IdentityKey: k, Tag: id.Tag}
	}
	for _, r := range s.Routes {
		out := &nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(r.Prefix), VRF: r.VRF}}
		switch {
		case r.Reject:
			out.Kind = nat44.RouteReject
		case r.Lookup:
			out.Kind, out.Table = nat44.RouteLookup, r.LookupVRF
		}
		if st.Routes == nil {
			st.Routes = map[nat44.RouteKey]*nat44.Route{}
		}
		st.Routes[out.RouteKey] = out
	}
	return st
}
