package cnat

import (
	"slices"
	"time"

	"contiv.dev/vpp/servicerenderer/reconcile"
)

// ObjectKind names the kinds of cnat objects.
type ObjectKind uint8

// The object kinds.
const (
	ObjectNode ObjectKind = iota
	ObjectPrefix
	ObjectInterface
	ObjectTranslation
	ObjectRoute
)

// ObjectID identifies one cnat object; only the field of its Kind is set.
type ObjectID struct {
	Kind      ObjectKind
	Interface string
	Prefix    string
	Key       Key
	Route     Route
}

// String is the kind and the object's key.
func (id ObjectID) String() string {
	switch id.Kind {
	case ObjectPrefix:
		return "exclude-prefix " + id.Prefix
	case ObjectInterface:
		return "interface " + id.Interface
	case ObjectTranslation:
		return "translation " + id.Key.String()
	case ObjectRoute:
		return "route " + id.Route.String()
	}
	return "node"
}

// objectOf is the object an operation changes.
func objectOf(op *Op) ObjectID {
	switch op.Kind {
	case OpFeature, OpSNATInterface:
		return ObjectID{Kind: ObjectInterface, Interface: op.Interface}
	case OpExcludePrefix:
		return ObjectID{Kind: ObjectPrefix, Prefix: op.Prefix.String()}
	case OpDeleteTranslation, OpUpdateTranslation:
		return ObjectID{Kind: ObjectTranslation, Key: op.Translation.Key}
	case OpRoute, OpVerdictRoute:
		return ObjectID{Kind: ObjectRoute, Route: op.Route}
	}
	return ObjectID{Kind: ObjectNode}
}

// Failure is an object VPP refused as invalid; it is not retried until it
// changes or a full apply runs.
type Failure struct {
	Object ObjectID
	Op     OpKind
	Reason string
}

// Stats are the renderer's cumulative counters.
type Stats struct {
	Applies, FullApplies int
	// Calls counts VPP calls (dumps included); Writes the calls that may
	// change VPP.
	Calls, Writes int
	// Invalid and Transient count failed calls.
	Invalid, Transient int
	// Foreign is the number of translations the last full apply left alone.
	Foreign int
}

// Failures lists the objects not applied, sorted by name.
func (r *Renderer) Failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures.Sorted(func(a, b Failure) int {
		return compareStrings(a.Object.String(), b.Object.String())
	})
}

// Conflict is a frontend more than one service claims: the oldest wins
// (by creation time, then namespace and name).
type Conflict = reconcile.Conflict[Key]

// Conflicts lists the contested frontends, sorted by key.
func (r *Renderer) Conflicts() []Conflict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frontends.Conflicts()
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// PendingInterface is an interface whose cnat configuration waits for VPP
// to have it (a pod's interface not yet created, say). It is not a
// failure: every full apply, and every UpdateInterface of that name, tries
// again.
type PendingInterface struct {
	Name  string
	Since time.Time
}

// Pending lists the interfaces waiting for VPP to have them, sorted by name.
func (r *Renderer) Pending() []PendingInterface {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []PendingInterface // nil when none
	for _, w := range r.pending.Sorted() {
		ps = append(ps, PendingInterface{Name: w.Key, Since: w.Since})
	}
	return ps
}

// PendingTable is a FIB table whose routes wait for VPP to have it.
type PendingTable = reconcile.PendingTable[Route]

// PendingTables lists the tables whose routes (drop and verdict routes)
// wait for VPP to make them, by VRF.
func (r *Renderer) PendingTables() []PendingTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	return reconcile.PendingTables(&r.pendingTables, r.waitingFor, Route.Compare)
}

// waitingFor lists the wanted routes (drop and verdict) into vrf VPP does
// not hold.
func (r *Renderer) waitingFor(vrf uint32) []Route {
	var rs []Route
	for _, rt := range r.desired.Routes {
		if _, ok := slices.BinarySearchFunc(r.applied.Routes, rt, Route.Compare); rt.VRF == vrf && !ok {
			rs = append(rs, rt)
		}
	}
	for rt := range r.routeRefs {
		if _, ok := r.verdicts[rt]; rt.VRF == vrf && !ok {
			rs = append(rs, rt)
		}
	}
	return rs
}

// Stats returns the cumulative counters.
func (r *Renderer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Desired is the desired translations, sorted by key (shared: not to be
// mutated).
func (r *Renderer) Desired() []*Translation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.collect(func(fe *frontend) *Translation { return fe.Desired })
}

// Applied is the renderer's translations VPP holds as far as it knows,
// sorted by key (shared: not to be mutated).
func (r *Renderer) Applied() []*Translation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.collect(func(fe *frontend) *Translation { return fe.Applied })
}

func (r *Renderer) collect(pick func(*frontend) *Translation) []*Translation {
	var out []*Translation
	for _, fe := range r.frontends.Frontends() {
		if t := pick(fe); t != nil {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Translation) int { return a.Key.Compare(b.Key) })
	return out
}

// DesiredNode and AppliedNode are copies of the node configuration wanted
// and held (AppliedNode is nil while unknown), with the services' verdict
// routes (Verdicts).
func (r *Renderer) DesiredNode() *Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.desired.Clone()
	n.Verdicts = verdictList(r.routeRefs)
	return n
}

// AppliedNode is a copy of the node configuration VPP holds as far as the
// renderer knows; nil before the first full Apply of a fresh renderer.
func (r *Renderer) AppliedNode() *Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		return nil
	}
	n := r.applied.Clone()
	n.Verdicts = verdictList(r.verdicts)
	return n
}
