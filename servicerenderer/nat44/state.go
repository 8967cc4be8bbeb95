package nat44

import (
	"maps"
	"slices"
)

// Apply records in s the effect of op having succeeded in VPP. Mappings
// are never mutated in place: a changed mapping is a new value.
func (s *State) Apply(op Op) {
	switch op.Kind {
	case OpSetGlobal:
		s.Global = op.Global
	case OpAddPool:
		if i, found := slices.BinarySearchFunc(s.Pool, op.Pool, comparePool); !found {
			s.Pool = slices.Insert(slices.Clip(s.Pool), i, op.Pool)
		}
	case OpDelPool:
		if i, found := slices.BinarySearchFunc(s.Pool, op.Pool, comparePool); found {
			s.Pool = slices.Delete(slices.Clone(s.Pool), i, i+1)
		}
	case OpSetInterface:
		if op.NewFeatures == 0 {
			delete(s.Interfaces, op.Interface)
		} else {
			s.Interfaces[op.Interface] = op.NewFeatures
		}
	case OpAddIdentity:
		s.Identities[op.Identity.IdentityKey] = op.Identity
	case OpDelIdentity:
		delete(s.Identities, op.Identity.IdentityKey)
	case OpAddRoute:
		r := op.Route
		s.Routes[r.RouteKey] = &r
	case OpDelRoute:
		delete(s.Routes, op.Route.RouteKey)
	case OpAddMapping, OpDelMapping, OpAddLocal, OpDelLocal:
		key := op.Mapping.MappingKey
		if m := afterOp(s.Mappings[key], &op); m != nil {
			s.Mappings[key] = m
		} else {
			delete(s.Mappings, key)
		}
	}
}

// afterOp is the mapping on the key of mapping operation op once op
// succeeded, given m, the mapping there before (nil: none). A local
// operation on a missing mapping, or one that changes nothing, leaves m.
// Mappings are never mutated: a changed mapping is a new value, or op's
// own mapping (the desired one) when that is what the result equals, as
// it is after the last local operation of a change.
func afterOp(m *Mapping, op *Op) *Mapping {
	switch op.Kind {
	case OpAddMapping:
		return op.Mapping
	case OpDelMapping:
		return nil
	case OpAddLocal, OpDelLocal:
	default:
		return m
	}
	if m == nil {
		return nil
	}
	add := op.Kind == OpAddLocal
	i, found := slices.BinarySearchFunc(m.Locals, op.Local, compareLocals)
	if add == found {
		return m
	}
	if d := op.Mapping; d.MappingKey == m.MappingKey && d.TwiceNAT == m.TwiceNAT &&
		d.Affinity == m.Affinity && d.Tag == m.Tag && localsAfter(d.Locals, m.Locals, i, op.Local, add) {
		return d
	}
	var locals []Local
	if add {
		locals = make([]Local, 0, len(m.Locals)+1)
		locals = append(append(append(locals, m.Locals[:i]...), op.Local), m.Locals[i:]...)
	} else {
		locals = make([]Local, 0, len(m.Locals)-1)
		locals = append(append(locals, m.Locals[:i]...), m.Locals[i+1:]...)
	}
	c := *m
	c.Locals = locals
	return &c
}

// localsAfter tells whether want equals have with l inserted at i (add),
// or with have[i] removed.
func localsAfter(want, have []Local, i int, l Local, add bool) bool {
	if add {
		return len(want) == len(have)+1 && slices.Equal(want[:i], have[:i]) &&
			want[i] == l && slices.Equal(want[i+1:], have[i:])
	}
	return len(want) == len(have)-1 && slices.Equal(want[:i], have[:i]) && slices.Equal(want[i:], have[i+1:])
}

// Clone copies the state's maps and slices; mappings and identities are
// shared, as they are never mutated.
func (s *State) Clone() *State {
	c := &State{
		Global:     s.Global,
		Pool:       slices.Clone(s.Pool),
		Interfaces: maps.Clone(s.Interfaces),
		Mappings:   maps.Clone(s.Mappings),
		Identities: maps.Clone(s.Identities),
		Routes:     maps.Clone(s.Routes),
	}
	if c.Interfaces == nil {
		c.Interfaces = map[string]Features{}
	}
	if c.Mappings == nil {
		c.Mappings = map[MappingKey]*Mapping{}
	}
	if c.Identities == nil {
		c.Identities = map[IdentityKey]*Identity{}
	}
	if c.Routes == nil {
		c.Routes = map[RouteKey]*Route{}
	}
	return c
}
