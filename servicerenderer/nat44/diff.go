package nat44

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// OpKind is what one operation does. Operations run in the order of their
// kinds: the plugin first, then pool, interfaces, identities, routes, and
// mappings. The operations of one mapping (whatever their kinds) run in
// the order Diff planned them, mapping by mapping: that order keeps every
// load-balanced mapping within VPP's rules (see diffMapping).
type OpKind uint8

// The operation kinds, in the order they run (the mapping kinds, from
// OpDelMapping on, share one place).
const (
	OpSetGlobal OpKind = iota
	OpDelPool
	OpAddPool
	OpSetInterface
	OpDelIdentity
	OpAddIdentity
	// Route adds run before route deletes: an add replaces the route on
	// its key (VPP replaces the path), so a change of route set (such as
	// an earlier version's per-cluster-IP lookups giving way to the pod
	// VRF's service-CIDR lookup) never leaves a window without a route.
	OpAddRoute
	OpDelRoute
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
	case OpDelRoute:
		return "del-route"
	case OpAddRoute:
		return "add-route"
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
	// SwIfIndex is set by the call of an OpSetInterface: the index the
	// interface had (0 when it was not resolved).
	SwIfIndex uint32
	// Identity is added or deleted by OpAddIdentity and OpDelIdentity.
	Identity *Identity
	// Route is added or deleted by OpAddRoute and OpDelRoute.
	Route Route
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
	case OpDelRoute, OpAddRoute:
		return ObjectID{Kind: ObjectRoute, Route: op.Route.RouteKey}
	}
	return ObjectID{Kind: ObjectMapping, Mapping: op.Mapping.MappingKey}
}

// Diff is the ordered list of operations that turn applied into desired,
// deterministic for the same input. Mappings and identities whose tag is
// not owned are foreign: never changed or deleted, and a desired mapping
// whose key a foreign one holds is left out (the renderer reports it).
// Pool addresses, interface features and the plugin settings belong to the
// agent, and so are the routes given (the caller keeps only its own). On a
// load-balanced mapping whose other attributes are unchanged, endpoint
// changes become per-local operations; a change of twice-NAT, affinity or
// owner replaces it (delete, then add), as does any change of a plain
// static mapping an older agent made (which is otherwise left alone).
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
	// A route both hold as one value needs nothing (the renderer shares
	// those VPP holds as desired): only the others are sorted and diffed,
	// with room for their changes made at once (a full apply may add
	// thousands).
	keys := changedKeys(desired.Routes, applied.Routes, compareRouteKeys)
	ops = slices.Grow(ops, len(keys))
	for _, k := range keys {
		ops = diffRoute(ops, desired.Routes[k], applied.Routes[k])
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

// changedKeys is the keys of a and b whose values differ (pointers by
// address: equal values behind two pointers count as changed), sorted.
func changedKeys[K, V comparable](a, b map[K]V, compare func(K, K) int) []K {
	var keys []K
	add := func(k K) {
		if keys == nil {
			keys = make([]K, 0, max(len(a), len(b))) // once one changed, room for many
		}
		keys = append(keys, k)
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			add(k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			add(k)
		}
	}
	slices.SortFunc(keys, compare)
	return keys
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

// diffRoute appends the operations that turn applied into desired for one
// route key (either may be nil).
func diffRoute(ops []Op, desired, applied *Route) []Op {
	switch {
	case desired != nil && applied == nil:
		return append(ops, Op{Kind: OpAddRoute, Route: *desired})
	case desired == nil && applied != nil:
		return append(ops, Op{Kind: OpDelRoute, Route: *applied})
	case desired != nil && *desired != *applied:
		// An add replaces the path of an existing prefix (c2-nat44.jsonl).
		// ASSUMPTION: in place, leaving no moment without a route (VPP
		// updates the entry's path list; not measured packet by packet).
		return append(ops, Op{Kind: OpAddRoute, Route: *desired})
	}
	return ops
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
//
// The operations keep the mapping within what VPP 25.02 accepts and
// survives (FACTS §1, §3) after every single call: its probabilities sum
// to 1..MaxProbabilitySum (a multiple of 256 crashes VPP on the next
// packet, a sum past 255 skews its pick); a local is removed only while at
// least 3 remain. In place, each step is the first add that keeps the sum
// within bounds (those that carry traffic first, the heaviest first),
// else the delete of the heaviest leaving local that leaves a carrying
// one, else the placeholder (for the time when only 2 locals would
// remain). A local whose probability changed is removed, then added again
// (VPP cannot change a probability in place). When no step is possible the
// mapping is replaced (delete, then add: no packet meets it half-built).
// A mapping is created with at most MaxLocalsPerAdd locals and grown one
// local at a time (a built one never needs more).
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
		return addMapping(ops, desired), false
	case equalMapping(desired, applied):
		return ops, false
	}
	if inPlace(desired, applied) {
		if out, ok := diffLocals(ops, desired, applied); ok {
			return out, false
		}
	}
	return addMapping(append(ops, Op{Kind: OpDelMapping, Mapping: applied}), desired), false
}

// addMapping appends the creation of m: one add with at most
// MaxLocalsPerAdd locals (those with a probability first), then one
// add-local per remaining local.
func addMapping(ops []Op, m *Mapping) []Op {
	if len(m.Locals) <= MaxLocalsPerAdd {
		return append(ops, Op{Kind: OpAddMapping, Mapping: m})
	}
	first := make([]Local, 0, MaxLocalsPerAdd)
	var rest []Local
	for _, l := range m.Locals {
		if l.Probability > 0 && len(first) < MaxLocalsPerAdd {
			first = append(first, l)
		} else {
			rest = append(rest, l)
		}
	}
	for len(first) < MaxLocalsPerAdd && len(rest) > 0 {
		first, rest = append(first, rest[0]), rest[1:]
	}
	slices.SortFunc(first, compareLocals)
	c := *m
	c.Locals = first
	ops = append(ops, Op{Kind: OpAddMapping, Mapping: &c})
	for _, l := range rest {
		ops = append(ops, Op{Kind: OpAddLocal, Mapping: m, Local: l})
	}
	return ops
}

// inPlace tells whether applied can become desired by adding and removing
// locals: both are load-balanced, have the same attributes, their
// probabilities sum to 1..MaxProbabilitySum (a mapping beyond, which an
// older agent may have left, is replaced: shrinking it one local at a time
// could pass through a multiple of 256), and neither holds one IP and port
// twice (in different VRFs: kept as before, such a mapping is replaced).
func inPlace(desired, applied *Mapping) bool {
	if len(desired.Locals) < 2 || len(applied.Locals) < 2 ||
		desired.TwiceNAT != applied.TwiceNAT || desired.Affinity != applied.Affinity || desired.Tag != applied.Tag {
		return false
	}
	if s := probabilitySum(applied.Locals); s < 1 || s > MaxProbabilitySum {
		return false
	}
	if s := probabilitySum(desired.Locals); s < 1 || s > MaxProbabilitySum {
		return false
	}
	return !dupAddr(desired.Locals) && !dupAddr(applied.Locals)
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

// diffLocals appends the per-local operations of an in-place change, in
// the order diffMapping describes. ok is false when no such order exists
// (say, the only carrying local of a full mapping is replaced): the
// mapping is then replaced.
func diffLocals(ops []Op, desired, applied *Mapping) (_ []Op, ok bool) {
	// Room for a change's few locals without an allocation.
	var addRoom, delRoom [8]Local
	adds, dels := addRoom[:0], delRoom[:0]
	mergeLocals(desired.Locals, applied.Locals, func(d, a *Local) {
		switch {
		case a == nil:
			adds = append(adds, *d)
		case d == nil:
			dels = append(dels, *a)
		case d.Probability != a.Probability:
			// VPP cannot change a probability in place: out, then in again.
			dels = append(dels, *a)
			adds = append(adds, *d)
		}
	})
	// Carrying locals first, the heaviest first; then the placeholder.
	slices.SortStableFunc(adds, func(a, b Local) int { return cmp.Compare(b.Probability, a.Probability) })
	n, sum := len(applied.Locals), probabilitySum(applied.Locals)
	hasPlaceholder := slices.Contains(applied.Locals, Placeholder)
	tempPlaceholder := false
	start := len(ops)
	for len(adds) > 0 || len(dels) > 0 {
		// An add that keeps the sum within bounds, of a local VPP no
		// longer holds (a changed one waits for its delete).
		if i := slices.IndexFunc(adds, func(l Local) bool {
			return sum+int(l.Probability) <= MaxProbabilitySum && !slices.ContainsFunc(dels, l.sameBackend)
		}); i >= 0 {
			l := adds[i]
			adds = slices.Delete(adds, i, i+1)
			ops = append(ops, Op{Kind: OpAddLocal, Mapping: desired, Local: l})
			n, sum = n+1, sum+int(l.Probability)
			hasPlaceholder = hasPlaceholder || l.IsPlaceholder()
			continue
		}
		// A delete VPP accepts (3 locals or more) that leaves a carrying
		// local: the heaviest, which makes the most room.
		best := -1
		for i, l := range dels {
			if n >= 3 && sum-int(l.Probability) >= 1 && (best < 0 || l.Probability > dels[best].Probability) {
				best = i
			}
		}
		if best >= 0 {
			l := dels[best]
			dels = slices.Delete(dels, best, best+1)
			ops = append(ops, Op{Kind: OpDelLocal, Mapping: desired, Local: l})
			n, sum = n-1, sum-int(l.Probability)
			hasPlaceholder = hasPlaceholder && !l.IsPlaceholder()
			continue
		}
		if n < 3 && !hasPlaceholder {
			// The placeholder for the time when only 2 locals would remain.
			ops = append(ops, Op{Kind: OpAddLocal, Mapping: desired, Local: Placeholder})
			n++
			hasPlaceholder, tempPlaceholder = true, true
			continue
		}
		return ops[:start], false
	}
	if tempPlaceholder && !slices.Contains(desired.Locals, Placeholder) {
		ops = append(ops, Op{Kind: OpDelLocal, Mapping: desired, Local: Placeholder})
	}
	return ops, true
}

// sameBackend tells whether two locals are one backend to VPP (IP, port
// and VRF), whatever their probabilities.
func (l Local) sameBackend(o Local) bool { return l.IP == o.IP && l.Port == o.Port && l.VRF == o.VRF }

// probabilitySum is the sum of the locals' probabilities.
func probabilitySum(ls []Local) int {
	s := 0
	for _, l := range ls {
		s += int(l.Probability)
	}
	return s
}

// mergeLocals walks two sorted lists of locals, matching them by IP, port
// and VRF (as VPP matches a local), and calls f for each pair (nil when one
// side lacks it).
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
			c = compareLocals(desired[i], applied[j])
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

// equalMapping tells whether applied already is desired in VPP. A plain
// static mapping an older agent made (one local) counts as equal to a
// desired load-balanced mapping of that one backend and the placeholder
// with the same twice-NAT and owner: it translates alike (affinity and
// probability mean nothing with one backend), so it is converted only
// when the backends change.
func equalMapping(desired, applied *Mapping) bool {
	if desired.MappingKey != applied.MappingKey || desired.TwiceNAT != applied.TwiceNAT {
		return false
	}
	if len(applied.Locals) == 1 || len(desired.Locals) == 1 {
		one := func(m *Mapping) (Local, bool) {
			var out Local
			n := 0
			for _, l := range m.Locals {
				if !l.IsPlaceholder() {
					out, n = l, n+1
				}
			}
			return out, n == 1
		}
		x, okx := one(desired)
		y, oky := one(applied)
		return okx && oky && x.IP == y.IP && x.Port == y.Port && x.VRF == y.VRF &&
			tagOwner(desired.Tag) == tagOwner(applied.Tag)
	}
	return desired.Tag == applied.Tag && desired.Affinity == applied.Affinity && slices.Equal(desired.Locals, applied.Locals)
}

// sortOps orders operations by kind, then object; it is stable, which
// keeps the planned order of one mapping's operations.
func sortOps(ops []Op) {
	slices.SortStableFunc(ops, func(a, b Op) int { return compareOps(&a, &b) })
}

// opClass is the place of an operation kind in the run order: every
// mapping kind shares one.
func opClass(k OpKind) OpKind { return min(k, OpDelMapping) }

// compareOps orders operations by kind (mapping kinds as one), then
// object; operations on one mapping compare equal.
func compareOps(a, b *Op) int {
	if c := cmp.Compare(opClass(a.Kind), opClass(b.Kind)); c != 0 {
		return c
	}
	switch a.Kind {
	case OpDelPool, OpAddPool:
		return comparePool(a.Pool, b.Pool)
	case OpSetInterface:
		return cmp.Compare(a.Interface, b.Interface)
	case OpDelIdentity, OpAddIdentity:
		return compareIdentityKeys(a.Identity.IdentityKey, b.Identity.IdentityKey)
	case OpDelRoute, OpAddRoute:
		return compareRouteKeys(a.Route.RouteKey, b.Route.RouteKey)
	case OpDelMapping, OpAddMapping, OpAddLocal, OpDelLocal:
		return compareMappingKeys(a.Mapping.MappingKey, b.Mapping.MappingKey)
	}
	return 0
}

func compareRouteKeys(a, b RouteKey) int {
	if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()); c != 0 {
		return c
	}
	return cmp.Compare(a.VRF, b.VRF)
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
