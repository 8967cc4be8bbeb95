package nat44

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// OpKind is what one operation does. Operations run in the order of their
// kinds: the plugin first, then pool, interfaces, identities, and mappings
// (deletes before adds; within a mapping, locals are added before any is
// removed, so no removal leaves fewer than 2).
type OpKind uint8

// The operation kinds, in the order they run.
const (
	OpSetGlobal OpKind = iota
	OpDelPool
	OpAddPool
	OpSetInterface
	OpDelIdentity
	OpAddIdentity
	OpDelMapping
	OpAddLocal
	OpDelLocal
	OpAddMapping
)

// String names the kind.
func (k OpKind) String() string {
	switch k {
	case OpSetGlobal:
		return "set-global"
	case OpDelPool:
		return "del-pool"
	case OpAddPool:
		return "add-pool"
	case OpSetInterface:
		return "set-interface"
	case OpDelIdentity:
		return "del-identity"
	case OpAddIdentity:
		return "add-identity"
	case OpDelMapping:
		return "del-mapping"
	case OpAddLocal:
		return "add-local"
	case OpDelLocal:
		return "del-local"
	case OpAddMapping:
		return "add-mapping"
	}
	return "unknown"
}

// Op is one VPP call. Only the fields its Kind needs are set.
type Op struct {
	Kind OpKind
	// Global is set by OpSetGlobal.
	Global Global
	// Pool is added or deleted by OpAddPool and OpDelPool.
	Pool PoolAddress
	// Interface changes from OldFeatures to NewFeatures (OpSetInterface).
	Interface   string
	OldFeatures Features
	NewFeatures Features
	// Identity is added or deleted by OpAddIdentity and OpDelIdentity.
	Identity *Identity
	// Mapping is added or deleted by OpAddMapping and OpDelMapping; for
	// OpAddLocal and OpDelLocal it is the mapping the local belongs to.
	Mapping *Mapping
	// Local is added or removed by OpAddLocal and OpDelLocal.
	Local Local
}

// Object is the object the operation changes.
func (op *Op) Object() ObjectID {
	switch op.Kind {
	case OpSetGlobal:
		return ObjectID{Kind: ObjectGlobal}
	case OpDelPool, OpAddPool:
		return ObjectID{Kind: ObjectPool, Pool: op.Pool}
	case OpSetInterface:
		return ObjectID{Kind: ObjectInterface, Interface: op.Interface}
	case OpDelIdentity, OpAddIdentity:
		return ObjectID{Kind: ObjectIdentity, Identity: op.Identity.IdentityKey}
	}
	return ObjectID{Kind: ObjectMapping, Mapping: op.Mapping.MappingKey}
}

// Diff is the ordered list of operations that turn applied into desired,
// deterministic for the same input. Mappings and identities whose tag is
// not owned are foreign: never changed or deleted, and a desired mapping
// whose key a foreign one holds is left out (the renderer reports it).
// Pool addresses, interface features and the plugin settings belong to the
// agent. On a load-balanced mapping whose other attributes are unchanged,
// endpoint changes become per-local operations; every other change to a
// mapping replaces it (delete, then add).
func Diff(desired, applied *State, owned func(tag string) bool) []Op {
	return diff(desired, applied, owned, nil)
}

// diff is Diff that also tells blocked about every desired object a foreign
// one stands in the way of.
func diff(desired, applied *State, owned func(string) bool, blocked func(id ObjectID, foreignTag string)) []Op {
	var ops []Op
	if desired.Global != applied.Global {
		ops = append(ops, Op{Kind: OpSetGlobal, Global: desired.Global})
	}
	ops = diffPool(ops, desired.Pool, applied.Pool)
	for _, name := range unionKeys(desired.Interfaces, applied.Interfaces, strings.Compare) {
		ops = diffInterface(ops, name, desired.Interfaces[name], applied.Interfaces[name])
	}
	for _, k := range unionKeys(desired.Identities, applied.Identities, compareIdentityKeys) {
		var b bool
		if ops, b = diffIdentity(ops, desired.Identities[k], applied.Identities[k], owned); b && blocked != nil {
			blocked(ObjectID{Kind: ObjectIdentity, Identity: k}, applied.Identities[k].Tag)
		}
	}
	for _, k := range unionKeys(desired.Mappings, applied.Mappings, compareMappingKeys) {
		var b bool
		a := applied.Mappings[k]
		if ops, b = diffMapping(ops, desired.Mappings[k], a, a != nil && !owned(a.Tag)); b && blocked != nil {
			blocked(ObjectID{Kind: ObjectMapping, Mapping: k}, applied.Mappings[k].Tag)
		}
	}
	sortOps(ops)
	return ops
}

// unionKeys is the keys of a and b, sorted.
func unionKeys[K comparable, V any](a, b map[K]V, compare func(K, K) int) []K {
	keys := slices.AppendSeq(make([]K, 0, max(len(a), len(b))), maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compare)
	return keys
}

func diffPool(ops []Op, desired, applied []PoolAddress) []Op {
	for _, a := range applied {
		if !slices.Contains(desired, a) {
			ops = append(ops, Op{Kind: OpDelPool, Pool: a})
		}
	}
	for _, d := range desired {
		if !slices.Contains(applied, d) {
			ops = append(ops, Op{Kind: OpAddPool, Pool: d})
		}
	}
	return ops
}

func diffInterface(ops []Op, name string, desired, applied Features) []Op {
	if desired == applied {
		return ops
	}
	return append(ops, Op{Kind: OpSetInterface, Interface: name, OldFeatures: applied, NewFeatures: desired})
}

// diffIdentity is diffMapping for an identity mapping.
func diffIdentity(ops []Op, desired, applied *Identity, owned func(string) bool) (_ []Op, blocked bool) {
	if applied != nil && !owned(applied.Tag) {
		return ops, desired != nil
	}
	if desired != nil && applied != nil && *desired == *applied {
		return ops, false
	}
	if applied != nil {
		ops = append(ops, Op{Kind: OpDelIdentity, Identity: applied})
	}
	if desired != nil {
		ops = append(ops, Op{Kind: OpAddIdentity, Identity: desired})
	}
	return ops, false
}

// diffMapping appends the operations that turn applied into desired for one
// key (either may be nil). A foreign applied mapping is never touched:
// blocked is then set when the agent wants the key.
func diffMapping(ops []Op, desired, applied *Mapping, foreign bool) (_ []Op, blocked bool) {
	if foreign {
		return ops, desired != nil
	}
	switch {
	case desired == nil && applied == nil:
		return ops, false
	case desired == nil:
		return append(ops, Op{Kind: OpDelMapping, Mapping: applied}), false
	case applied == nil:
		return append(ops, Op{Kind: OpAddMapping, Mapping: desired}), false
	case equalMapping(desired, applied):
		return ops, false
	case inPlace(desired, applied):
		return diffLocals(ops, desired, applied), false
	}
	return append(ops, Op{Kind: OpDelMapping, Mapping: applied}, Op{Kind: OpAddMapping, Mapping: desired}), false
}

// inPlace tells whether applied can become desired by adding and removing
// locals: both are load-balanced, have the same attributes, neither holds
// one IP and port twice (in different VRFs: they could not be matched one
// to one), and locals present in both (same IP and port) agree on VRF and
// probability.
func inPlace(desired, applied *Mapping) bool {
	if len(desired.Locals) < 2 || len(applied.Locals) < 2 ||
		desired.TwiceNAT != applied.TwiceNAT || desired.Affinity != applied.Affinity || desired.Tag != applied.Tag {
		return false
	}
	if dupAddr(desired.Locals) || dupAddr(applied.Locals) {
		return false
	}
	d, a := desired.Locals, applied.Locals
	for i, j := 0, 0; i < len(d) && j < len(a); {
		switch c := compareLocalAddr(d[i], a[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if d[i] != a[j] {
				return false
			}
			i++
			j++
		}
	}
	return true
}

// dupAddr tells whether sorted locals hold one IP and port twice.
func dupAddr(ls []Local) bool {
	for i := 1; i < len(ls); i++ {
		if ls[i-1].IP == ls[i].IP && ls[i-1].Port == ls[i].Port {
			return true
		}
	}
	return false
}

// diffLocals appends the per-local operations of an in-place change.
func diffLocals(ops []Op, desired, applied *Mapping) []Op {
	mergeLocals(desired.Locals, applied.Locals, func(d, a *Local) {
		switch {
		case a == nil:
			ops = append(ops, Op{Kind: OpAddLocal, Mapping: desired, Local: *d})
		case d == nil:
			ops = append(ops, Op{Kind: OpDelLocal, Mapping: desired, Local: *a})
		}
	})
	return ops
}

// mergeLocals walks two sorted lists of locals, matching them by IP and
// port, and calls f for each pair (nil when one side lacks it).
func mergeLocals(desired, applied []Local, f func(d, a *Local)) {
	i, j := 0, 0
	for i < len(desired) || j < len(applied) {
		var c int
		switch {
		case i == len(desired):
			c = 1
		case j == len(applied):
			c = -1
		default:
			c = compareLocalAddr(desired[i], applied[j])
		}
		switch {
		case c < 0:
			f(&desired[i], nil)
			i++
		case c > 0:
			f(nil, &applied[j])
			j++
		default:
			f(&desired[i], &applied[j])
			i++
			j++
		}
	}
}

func compareLocalAddr(a, b Local) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	return cmp.Compare(a.Port, b.Port)
}

// equalMapping tells whether two mappings are the same in VPP. A plain
// static mapping (one local) has neither probability nor affinity.
func equalMapping(a, b *Mapping) bool {
	if a.MappingKey != b.MappingKey || a.TwiceNAT != b.TwiceNAT || a.Tag != b.Tag || len(a.Locals) != len(b.Locals) {
		return false
	}
	if len(a.Locals) == 1 {
		x, y := a.Locals[0], b.Locals[0]
		return x.IP == y.IP && x.Port == y.Port && x.VRF == y.VRF
	}
	return a.Affinity == b.Affinity && slices.Equal(a.Locals, b.Locals)
}

// sortOps orders operations by kind, then object.
func sortOps(ops []Op) {
	slices.SortStableFunc(ops, func(a, b Op) int { return compareOps(&a, &b) })
}

// compareOps orders operations by kind, then object, then local.
func compareOps(a, b *Op) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	switch a.Kind {
	case OpDelPool, OpAddPool:
		return comparePool(a.Pool, b.Pool)
	case OpSetInterface:
		return cmp.Compare(a.Interface, b.Interface)
	case OpDelIdentity, OpAddIdentity:
		return compareIdentityKeys(a.Identity.IdentityKey, b.Identity.IdentityKey)
	case OpDelMapping, OpAddMapping, OpAddLocal, OpDelLocal:
		if c := compareMappingKeys(a.Mapping.MappingKey, b.Mapping.MappingKey); c != 0 {
			return c
		}
		return compareLocals(a.Local, b.Local)
	}
	return 0
}

func compareMappingKeys(a, b MappingKey) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	return cmp.Compare(a.Proto, b.Proto)
}

func compareIdentityKeys(a, b IdentityKey) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	if c := cmp.Compare(a.VRF, b.VRF); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	return cmp.Compare(a.Proto, b.Proto)
}

func comparePool(a, b PoolAddress) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	if c := cmp.Compare(a.VRF, b.VRF); c != 0 {
		return c
	}
	if a.TwiceNAT == b.TwiceNAT {
		return 0
	}
	if a.TwiceNAT {
		return 1
	}
	return -1
}

// Apply records in s the effect of op having succeeded in VPP. Mappings
// are never mutated in place: a changed mapping is a new value.
func (s *State) Apply(op Op) {
	switch op.Kind {
	case OpSetGlobal:
		s.Global = op.Global
	case OpAddPool:
		if !slices.Contains(s.Pool, op.Pool) {
			s.Pool = append(slices.Clip(s.Pool), op.Pool)
			slices.SortFunc(s.Pool, comparePool)
		}
	case OpDelPool:
		s.Pool = slices.DeleteFunc(slices.Clone(s.Pool), func(p PoolAddress) bool { return p == op.Pool })
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
	return c
}
