package reconcile

import (
	"log/slog"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// Key is a frontend's key: comparable, and named in logs.
type Key interface {
	comparable
	String() string
}

// Frontend is one key: the services claiming it, the object wanted there
// (the winner's) and the one VPP holds. It exists while a service claims
// it, VPP holds an object on it, or it waits for Apply.
type Frontend[K Key, O any] struct {
	// Desired is the winner's object; nil when none is wanted.
	Desired *O
	// Applied is the object VPP holds as far as the renderer knows; nil
	// when none. Once an apply made VPP hold the desired object, Applied
	// and Desired are the same pointer.
	Applied *O
	winner  *Claimant[K, O]
	dirty   bool
	// contested is set while other claimants than the winner claim it:
	// they are in the table's losers (a frontend is rarely contested, and
	// a list in each would make every frontend 64 bytes, not 48).
	contested bool
	// Key is last: a change of a claimant's object reads the fields
	// above (26 bytes), not the key (its claim has it), and so reads one
	// cache line of the frontend more often.
	Key K
}

// Winner is the claimant whose object is desired; nil when none claims it.
func (fe *Frontend[K, O]) Winner() *Claimant[K, O] { return fe.winner }

// Contested tells whether more than one service claims the frontend.
func (fe *Frontend[K, O]) Contested() bool { return fe.contested }

// unused tells whether nothing refers to the frontend any more.
func (fe *Frontend[K, O]) unused() bool {
	return fe.winner == nil && !fe.contested && fe.Applied == nil && !fe.dirty
}

// Claimant is one service and the objects it claims, sorted by key. A
// renderer embeds it in its own record of the service.
type Claimant[K Key, O any] struct {
	// Svc is the service as last set.
	Svc    *servicerenderer.ContivService
	claims []claim[K, O]
}

// claim is one object a claimant wants and the frontend it claims: the
// frontend first, so that a change, which reads both and the object's
// leading fields, finds them in one cache line more often. On an object
// of 56 bytes (NAT44's Mapping) a claim is 64: the claims of a service
// with one object are one aligned line (TestClaimIsOneCacheLine).
type claim[K Key, O any] struct {
	fe  *Frontend[K, O]
	obj O
}

// Len is the number of objects c claims.
func (c *Claimant[K, O]) Len() int { return len(c.claims) }

// before tells whether c wins a frontend over d: the oldest, then the
// lower namespace and name.
func (c *Claimant[K, O]) before(d *Claimant[K, O]) bool {
	a, b := c.Svc, d.Svc
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.ID.Namespace != b.ID.Namespace {
		return a.ID.Namespace < b.ID.Namespace
	}
	return a.ID.Name < b.ID.Name
}

// Conflict is a frontend more than one service claims: the oldest wins
// (by creation time, then namespace and name).
type Conflict[K Key] struct {
	Key    K
	Winner servicerenderer.ServiceID
	Losers []servicerenderer.ServiceID
}

type pair[K Key] struct {
	key   K
	loser servicerenderer.ServiceID
}

// Object describes O to a Table.
type Object[K Key, O any] struct {
	// KeyOf is the key of an object; Compare orders keys.
	KeyOf   func(*O) K
	Compare func(a, b K) int
	// Same tells whether two objects (either may be nil) are equal in
	// every field: replacing one by the other needs no apply.
	Same func(a, b *O) bool
	// Desire, when set, is told of every object set desired on fe (nil:
	// none), before fe.Desired changes.
	Desire func(fe *Frontend[K, O], o *O)
	// Changed, when set, is told of the key whose desired object changed.
	Changed func(K)
}

// Table holds the frontends of one renderer and the claims on them. A
// change of a service costs in proportion to its objects.
type Table[K Key, O any] struct {
	obj       Object[K, O]
	log       *slog.Logger
	frontends map[K]*Frontend[K, O]
	// losers are the claimants of each contested frontend but its
	// winner, oldest first.
	losers map[*Frontend[K, O]][]*Claimant[K, O]
	dirty  []*Frontend[K, O]
	// reported holds the conflicts already logged; quiet, during a
	// resync, those logged before it.
	reported map[pair[K]]struct{}
	quiet    map[pair[K]]struct{}
	// keys and order are scratch buffers of Set.
	keys  []K
	order []int
}

// NewTable makes an empty table.
func NewTable[K Key, O any](obj Object[K, O], log *slog.Logger) *Table[K, O] {
	return &Table[K, O]{obj: obj, log: log, frontends: map[K]*Frontend[K, O]{}, losers: map[*Frontend[K, O]][]*Claimant[K, O]{},
		reported: map[pair[K]]struct{}{}}
}

// Get is the frontend of k; nil when none.
func (t *Table[K, O]) Get(k K) *Frontend[K, O] { return t.frontends[k] }

// ensure is the frontend of k, made when there is none.
func (t *Table[K, O]) ensure(k K) *Frontend[K, O] {
	fe := t.frontends[k]
	if fe == nil {
		fe = &Frontend[K, O]{Key: k}
		t.frontends[k] = fe
	}
	return fe
}

// Frontends are every frontend by key; the caller must not change the map.
func (t *Table[K, O]) Frontends() map[K]*Frontend[K, O] { return t.frontends }

// Sorted are every frontend, sorted by key.
func (t *Table[K, O]) Sorted() []*Frontend[K, O] {
	fes := make([]*Frontend[K, O], 0, len(t.frontends))
	for _, fe := range t.frontends {
		fes = append(fes, fe)
	}
	slices.SortFunc(fes, func(a, b *Frontend[K, O]) int { return t.obj.Compare(a.Key, b.Key) })
	return fes
}

// Set makes objs what c claims (c.Svc set to svc); objs is reordered.
// The objects are matched by key with those c claimed: a frontend c keeps
// is reached through its old claim, without a lookup.
func (t *Table[K, O]) Set(c *Claimant[K, O], svc *servicerenderer.ContivService, objs []O) {
	// The objects in key order: keys and order are scratch of the table.
	keys, order := t.keys[:0], t.order[:0]
	for i := range objs {
		keys, order = append(keys, t.obj.KeyOf(&objs[i])), append(order, i)
	}
	if len(order) > 1 {
		slices.SortFunc(order, func(a, b int) int { return t.obj.Compare(keys[a], keys[b]) })
	}
	claims := make([]claim[K, O], len(objs))
	for j, i := range order {
		claims[j].obj = objs[i]
	}
	old := c.claims
	c.Svc, c.claims = svc, claims
	i, j := 0, 0
	for i < len(old) || j < len(claims) {
		var d int
		switch {
		case i == len(old):
			d = 1
		case j == len(claims):
			d = -1
		default:
			d = t.obj.Compare(t.obj.KeyOf(&old[i].obj), keys[order[j]])
		}
		switch {
		case d < 0:
			t.release(c, old[i].fe)
			i++
		case d > 0:
			t.claim(c, &claims[j], keys[order[j]])
			j++
		default:
			fe := old[i].fe
			claims[j].fe = fe
			if fe.winner == c {
				t.setDesired(fe, &claims[j].obj)
			}
			i++
			j++
		}
	}
	clear(keys)
	t.keys, t.order = keys[:0], order[:0]
}

// Release drops every claim of c.
func (t *Table[K, O]) Release(c *Claimant[K, O]) {
	for i := range c.claims {
		t.release(c, c.claims[i].fe)
	}
	c.claims = nil
}

// find is c's object on k; nil when none.
func (c *Claimant[K, O]) find(k K, compare func(a, b K) int) *O {
	i, ok := slices.BinarySearchFunc(c.claims, k, func(cl claim[K, O], k K) int { return compare(cl.fe.Key, k) })
	if !ok {
		return nil
	}
	return &c.claims[i].obj
}

// claim records that c wants cl's object, on k, and which frontend it
// claims.
func (t *Table[K, O]) claim(c *Claimant[K, O], cl *claim[K, O], k K) {
	fe := t.ensure(k)
	cl.fe = fe
	w := fe.winner
	switch {
	case w == nil:
		fe.winner = c
		t.setDesired(fe, &cl.obj)
	case c.before(w):
		fe.winner = c
		t.addLoser(fe, w, c)
		t.setDesired(fe, &cl.obj)
	default:
		t.addLoser(fe, c, w)
	}
}

// release records that c no longer claims fe; the oldest loser takes over.
func (t *Table[K, O]) release(c *Claimant[K, O], fe *Frontend[K, O]) {
	if fe.winner != c {
		t.setLosers(fe, slices.DeleteFunc(t.losers[fe], func(d *Claimant[K, O]) bool { return d == c }))
		delete(t.reported, pair[K]{fe.Key, c.Svc.ID})
		t.forget(fe)
		return
	}
	losers := t.losers[fe]
	if len(losers) == 0 {
		fe.winner = nil
		t.setDesired(fe, nil)
		t.forget(fe)
		return
	}
	next := losers[0]
	t.setLosers(fe, losers[1:])
	delete(t.reported, pair[K]{fe.Key, next.Svc.ID})
	fe.winner = next
	t.setDesired(fe, next.find(fe.Key, t.obj.Compare))
	t.log.Info("frontend conflict resolved", "frontend", fe.Key.String(), "service", next.Svc.ID, "previous", c.Svc.ID)
}

// addLoser records that loser claims fe, which winner holds, and logs it
// once.
func (t *Table[K, O]) addLoser(fe *Frontend[K, O], loser, winner *Claimant[K, O]) {
	losers := t.losers[fe]
	i, _ := slices.BinarySearchFunc(losers, loser, func(a, b *Claimant[K, O]) int {
		if a.before(b) {
			return -1
		}
		if b.before(a) {
			return 1
		}
		return 0
	})
	t.setLosers(fe, slices.Insert(losers, i, loser))
	p := pair[K]{fe.Key, loser.Svc.ID}
	if _, ok := t.reported[p]; ok {
		return
	}
	t.reported[p] = struct{}{}
	if _, ok := t.quiet[p]; !ok {
		t.log.Warn("frontend claimed by two services: the oldest wins", "frontend", fe.Key.String(),
			"service", winner.Svc.ID, "rejected", loser.Svc.ID)
	}
}

// setLosers makes losers (oldest first) the losers of fe.
func (t *Table[K, O]) setLosers(fe *Frontend[K, O], losers []*Claimant[K, O]) {
	fe.contested = len(losers) > 0
	if fe.contested {
		t.losers[fe] = losers
	} else {
		delete(t.losers, fe)
	}
}

// setDesired makes o (nil: none) the desired object of fe, and queues fe
// for the next apply when that changes anything.
func (t *Table[K, O]) setDesired(fe *Frontend[K, O], o *O) {
	old := fe.Desired
	if t.obj.Desire != nil {
		t.obj.Desire(fe, o)
	}
	if t.obj.Same(old, o) {
		if o != nil {
			// The newest value is kept, so that the old one can go.
			if fe.Applied == old {
				fe.Applied = o
			}
			fe.Desired = o
		}
		return
	}
	fe.Desired = o
	t.markDirty(fe)
	if t.obj.Changed != nil {
		if o != nil {
			t.obj.Changed(t.obj.KeyOf(o)) // fe's key, without reading it
		} else {
			t.obj.Changed(fe.Key)
		}
	}
}

// markDirty queues fe for the next apply.
func (t *Table[K, O]) markDirty(fe *Frontend[K, O]) {
	if !fe.dirty {
		fe.dirty = true
		t.dirty = append(t.dirty, fe)
	}
}

// Dirty are the frontends queued for the next apply, each once, in the
// order they were queued.
func (t *Table[K, O]) Dirty() []*Frontend[K, O] { return t.dirty }

// Clean marks fe as planned: it is no longer queued, although it stays in
// Dirty until Done.
func (t *Table[K, O]) Clean(fe *Frontend[K, O]) { fe.dirty = false }

// Done ends an apply: the frontends it planned (all with full set, else
// those in Dirty) that nothing refers to any more go, and held (planned
// but not applied: left dirty, or dirty again by Hold) become the dirty
// set.
func (t *Table[K, O]) Done(full bool, held []*Frontend[K, O]) {
	if full {
		for _, fe := range t.frontends {
			t.forget(fe)
		}
	} else {
		for _, fe := range t.dirty {
			t.forget(fe)
		}
	}
	clear(t.dirty)
	t.dirty = append(t.dirty[:0], held...)
}

// forget drops fe once nothing refers to it.
func (t *Table[K, O]) forget(fe *Frontend[K, O]) {
	if fe.unused() {
		delete(t.frontends, fe.Key)
	}
}

// Load makes dumped (by key; nil: nothing) what VPP holds, and the
// frontends nothing refers to any more go. It is a full apply's step (or
// the news that VPP lost everything); the dirty set stays. A dumped
// object the same as the desired one is not kept: Applied is then the
// desired object (as after an apply that made it), so that a programmed
// VPP's dump is not held a second time.
func (t *Table[K, O]) Load(dumped map[K]*O) {
	for _, fe := range t.frontends {
		fe.Applied = nil
	}
	for k, o := range dumped {
		fe := t.ensure(k)
		if t.obj.Same(fe.Desired, o) {
			o = fe.Desired
		}
		fe.Applied = o
	}
	for _, fe := range t.frontends {
		t.forget(fe)
	}
}

// Reset starts a resync: every claim and desired object goes, what VPP
// holds stays known. A conflict logged before it is not logged again when
// the resync finds it again; EndReset logs those it did not find resolved.
// hint is how many frontends the resync is expected to claim: room for
// them is made at once.
func (t *Table[K, O]) Reset(hint int) {
	old := t.frontends
	t.frontends = make(map[K]*Frontend[K, O], max(len(old), hint))
	for k, fe := range old {
		if fe.Applied != nil {
			*fe = Frontend[K, O]{Key: k, Applied: fe.Applied}
			t.frontends[k] = fe
		}
	}
	clear(t.losers)
	clear(t.dirty)
	t.dirty = t.dirty[:0]
	t.quiet, t.reported = t.reported, map[pair[K]]struct{}{}
}

// EndReset ends a resync: the conflicts logged before it that are gone
// are logged resolved.
func (t *Table[K, O]) EndReset() {
	for p := range t.quiet {
		if _, ok := t.reported[p]; !ok {
			t.log.Info("frontend conflict resolved", "frontend", p.key.String(), "previous", p.loser)
		}
	}
	t.quiet = nil
}

// Conflicts lists the frontends claimed by more than one service, sorted
// by key (empty, not nil, when none).
func (t *Table[K, O]) Conflicts() []Conflict[K] {
	cs := []Conflict[K]{}
	for fe, losers := range t.losers {
		c := Conflict[K]{Key: fe.Key, Winner: fe.winner.Svc.ID}
		for _, d := range losers {
			c.Losers = append(c.Losers, d.Svc.ID)
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Conflict[K]) int { return t.obj.Compare(a.Key, b.Key) })
	return cs
}

// Hold marks fe, planned by this apply but not applied, dirty again
// without queueing it (Done does); false when it already is.
func (t *Table[K, O]) Hold(fe *Frontend[K, O]) bool {
	if fe.dirty {
		return false
	}
	fe.dirty = true
	return true
}
