package restapi

import (
	"cmp"
	"maps"
	"slices"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// NAT44View is the /v1/nat44 view: the desired and the applied NAT44
// state, one line per object (nat44.State.Lines), the objects VPP refused,
// the frontends claimed by more than one service and those served by a
// subset of their endpoints (VPP 25.02's u8 probability sum).
type NAT44View struct {
	Desired   []string             `json:"desired"`
	Applied   []string             `json:"applied"`
	Failures  []nat44.Failure      `json:"failures"`
	Conflicts []nat44.Conflict     `json:"conflicts"`
	Subsets   []nat44.SubsetStatus `json:"subsets"`
}

// NAT44MappingsView is the /v1/nat44/mappings view: the desired and the
// applied NAT44 state as structured values, for tools (contivctl trace)
// rather than people.
type NAT44MappingsView struct {
	Desired *NAT44Objects `json:"desired"`
	Applied *NAT44Objects `json:"applied"`
}

// NAT44Objects is a NAT44 state as sorted lists, which JSON can carry
// (nat44.State keys its maps by structs).
type NAT44Objects struct {
	Global     nat44.Global              `json:"global"`
	Pool       []nat44.PoolAddress       `json:"pool"`
	Interfaces map[string]nat44.Features `json:"interfaces"`
	// Identities are sorted by address, port, protocol and VRF; Mappings
	// by address, port and protocol.
	Identities []*nat44.Identity `json:"identities"`
	Mappings   []*nat44.Mapping  `json:"mappings"`
	// Routes are the agent's routes (drop, reject, lookup), sorted by VRF
	// and prefix.
	Routes []nat44.Route `json:"routes,omitempty"`
}

// NewNAT44Objects lists the objects of s. The result shares s's mappings
// and identities.
func NewNAT44Objects(s *nat44.State) *NAT44Objects {
	o := &NAT44Objects{
		Global:     s.Global,
		Pool:       slices.Clone(s.Pool),
		Interfaces: maps.Clone(s.Interfaces),
		Identities: slices.Collect(maps.Values(s.Identities)),
		Mappings:   slices.Collect(maps.Values(s.Mappings)),
	}
	sortPool(o.Pool)
	slices.SortFunc(o.Identities, func(a, b *nat44.Identity) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.VRF, b.VRF))
	})
	slices.SortFunc(o.Mappings, func(a, b *nat44.Mapping) int { return compareMappingKeys(a.MappingKey, b.MappingKey) })
	for _, r := range s.Routes {
		o.Routes = append(o.Routes, *r)
	}
	slices.SortFunc(o.Routes, func(a, b nat44.Route) int {
		return cmp.Or(cmp.Compare(a.VRF, b.VRF), a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	return o
}

// sortPool sorts pool addresses by IP, plain before twice-NAT, then VRF.
func sortPool(p []nat44.PoolAddress) {
	slices.SortFunc(p, func(a, b nat44.PoolAddress) int {
		return cmp.Or(a.IP.Compare(b.IP), cmpBool(a.TwiceNAT, b.TwiceNAT), cmp.Compare(a.VRF, b.VRF))
	})
}

func compareMappingKeys(a, b nat44.MappingKey) int {
	return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// State turns the lists back into a state; nil entries are left out.
func (o *NAT44Objects) State() *nat44.State {
	s := &nat44.State{
		Global:     o.Global,
		Pool:       slices.Clone(o.Pool),
		Interfaces: maps.Clone(o.Interfaces),
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping, len(o.Mappings)),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity, len(o.Identities)),
	}
	if s.Interfaces == nil {
		s.Interfaces = map[string]nat44.Features{}
	}
	for _, m := range o.Mappings {
		if m != nil {
			s.Mappings[m.MappingKey] = m
		}
	}
	for _, id := range o.Identities {
		if id != nil {
			s.Identities[id.IdentityKey] = id
		}
	}
	if len(o.Routes) > 0 {
		s.Routes = make(map[nat44.RouteKey]*nat44.Route, len(o.Routes))
		for _, r := range o.Routes {
			s.Routes[r.RouteKey] = &r
		}
	}
	return s
}
