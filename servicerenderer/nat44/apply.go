package nat44

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"contiv.dev/vpp/servicerenderer/reconcile"
)

// Apply pushes the desired state to VPP (reconcile.Apply). A full apply
// dumps VPP's NAT44 state and, with a service CIDR, the routes of the pod
// and main VRF; features of an interface VPP lacks wait for it (Pending),
// mapping operations for the node's interfaces (hold.go); the source-range
// ACL follows the run (sourceranges.go).
func (r *Renderer) Apply(ctx context.Context, full bool) error {
	return reconcile.Apply(ctx, &r.mu, (*cycle)(r), full)
}

// cycle is the renderer's side of reconcile.Apply.
type cycle Renderer

var _ reconcile.Cycle[*State, step] = (*cycle)(nil)

// Begin implements reconcile.Cycle.
func (c *cycle) Begin(full bool) bool {
	r := (*Renderer)(c)
	r.start, r.heldBuf = time.Now(), r.heldBuf[:0]
	r.stats.Applies++
	if full = full || !r.synced; full {
		r.stats.FullApplies++
	}
	return full
}

// Dump implements reconcile.Cycle: VPP's NAT44 state and, with a service
// CIDR, the routes of the pod and main VRF that are the renderer's.
func (c *cycle) Dump(ctx context.Context) (*State, error) {
	r := (*Renderer)(c)
	r.count(1, 0)
	dumped, err := r.vpp.Dump(ctx)
	if err != nil {
		r.count(0, 1)
		return nil, fmt.Errorf("dump NAT44 state: %w", err)
	}
	normalize(dumped)
	if r.cfg.ServiceCIDR.IsValid() {
		r.count(1, 0)
		routes, err := r.vpp.DumpRoutes(ctx, []uint32{r.cfg.PodVRF, r.cfg.MainVRF})
		if err != nil {
			r.count(0, 1)
			return nil, fmt.Errorf("dump routes: %w", err)
		}
		if len(dumped.Routes) == 0 {
			dumped.Routes = make(map[RouteKey]*Route, len(routes))
		}
		for i := range routes {
			// A route as desired is held as the desired value (read here
			// without mu: the loop, Dump's caller, is its only writer); a
			// key desired is the renderer's (ownedRoute). Only a route not
			// as desired is copied.
			rt := &routes[i]
			switch d := r.desired.Routes[rt.RouteKey]; {
			case d != nil && *d == *rt:
				dumped.Routes[rt.RouteKey] = d
			case d != nil || r.ownedRoute(*rt):
				c := *rt
				dumped.Routes[rt.RouteKey] = &c
			}
		}
	}
	return dumped, nil
}

// count adds calls and transient failures to the stats, under mu.
func (r *Renderer) count(calls, transient uint64) {
	r.mu.Lock()
	r.stats.Calls += calls
	r.stats.Transient += transient
	r.mu.Unlock()
}

// PlanFull implements reconcile.Cycle.
func (c *cycle) PlanFull(dumped *State) []step {
	r := (*Renderer)(c)
	r.loadApplied(dumped)
	r.forgetTables()
	r.synced = true
	r.failures.Clear()
	r.dirtyInterfaces = nil
	r.dirtyExt = nil
	r.dirtyRoutes = nil
	// VPP's dump is the truth about interfaces too: an interface whose
	// features VPP holds as desired waits for nothing, however its calls
	// went (issue 34 F2: calls VPP ran while the connection broke under
	// them left their interfaces pending for good).
	r.pending.Keep(func(name string) bool {
		f := r.desired.Interfaces[name]
		return f != 0 && r.applied.Interfaces[name] != f
	})
	global := diff(r.desired, r.applied, r.owned, r.blocked)
	// A frontend whose desired mapping VPP holds (the same value: Load and
	// the applies share it) needs nothing; the others are planned in key
	// order, with room for their steps made at once (a large full apply
	// would otherwise copy them as they grow): one each, as most need.
	all := r.frontends.Frontends()
	fes := make([]*frontendState, 0, len(all))
	for _, fe := range all {
		if fe.Desired == fe.Applied {
			r.frontends.Clean(fe)
		} else {
			fes = append(fes, fe)
		}
	}
	slices.SortFunc(fes, func(a, b *frontendState) int { return compareMappingKeys(a.Key, b.Key) })
	steps := appendSteps(slices.Grow(r.stepsBuf[:0], len(global)+len(fes)), global, nil)
	for _, fe := range fes {
		steps = r.appendFrontend(steps, fe)
	}
	return sortSteps(steps)
}

// PlanChanges implements reconcile.Cycle.
func (c *cycle) PlanChanges() []step {
	r := (*Renderer)(c)
	steps := r.stepsBuf[:0]
	for name := range r.dirtyInterfaces {
		steps = appendSteps(steps, diffInterface(nil, name, r.desired.Interfaces[name], r.applied.Interfaces[name]), nil)
	}
	if len(r.dirtyInterfaces) > 0 {
		steps = appendSteps(steps, r.appendTableRetries(nil), nil) // tables.go
	}
	for ip := range r.dirtyExt {
		steps = appendSteps(steps, r.diffExternal(nil, ip), nil)
	}
	for k := range r.dirtyRoutes {
		steps = appendSteps(steps, diffRoute(nil, r.desired.Routes[k], r.applied.Routes[k]), nil)
	}
	if r.mayRelease(r.start) {
		for _, fe := range r.frontends.Dirty() {
			steps = r.appendFrontend(steps, fe)
		}
	} else {
		// The hold goes on (hold.go): they stay dirty.
		r.heldBuf = append(r.heldBuf, r.frontends.Dirty()...)
	}
	r.dirtyInterfaces = nil
	r.dirtyExt = nil
	r.dirtyRoutes = nil
	return sortSteps(steps)
}

// Run implements reconcile.Cycle: the steps, then the source-range ACL
// (sourceranges.go).
func (c *cycle) Run(ctx context.Context, steps []step, full bool) error {
	r := (*Renderer)(c)
	held, err := r.run(ctx, steps, full, r.start, r.heldBuf)
	r.heldBuf = held
	return errors.Join(err, r.applySourceACL(ctx, full))
}

// End implements reconcile.Cycle: the frontends of this apply that
// nothing refers to any more go; the held ones stay dirty for a later
// apply.
func (c *cycle) End(full bool, steps []step) {
	r := (*Renderer)(c)
	r.frontends.Done(full, r.heldBuf)
	r.held = len(r.heldBuf)
	clear(r.heldBuf)
	if cap(steps) <= 1024 {
		clear(steps)
		r.stepsBuf = steps[:0]
	}
}

// appendSteps appends ops, each a step changing fe (nil: no frontend).
func appendSteps(steps []step, ops []Op, fe *frontendState) []step {
	for i := range ops {
		steps = append(steps, step{Op: ops[i], fe: fe})
	}
	return steps
}

// appendFrontend appends the steps that make VPP hold fe's desired
// mapping; fe is no longer dirty.
func (r *Renderer) appendFrontend(steps []step, fe *frontendState) []step {
	ops, b := diffMapping(r.opsBuf[:0], fe.Desired, fe.Applied, r.foreign(fe))
	if b {
		r.blocked(ObjectID{Kind: ObjectMapping, Mapping: fe.Key}, fe.Applied.Tag)
	}
	steps = appendSteps(steps, ops, fe)
	clear(ops)
	r.opsBuf = ops[:0]
	r.frontends.Clean(fe)
	return steps
}

// sortSteps puts steps in the order they are issued (compareOps). A full
// apply plans them in that order already: checking it spares moving
// large steps about.
func sortSteps(steps []step) []step {
	order := func(a, b step) int { return compareOps(&a.Op, &b.Op) }
	if !slices.IsSortedFunc(steps, order) {
		slices.SortStableFunc(steps, order)
	}
	return steps
}

// step is one operation of an apply with, for a mapping operation, the
// frontend it changes.
type step struct {
	Op
	fe *frontendState
}

// loadApplied makes dumped what VPP holds: its mappings go to the
// frontends (made for the keys no service claims), the rest to r.applied.
// The caller holds mu.
func (r *Renderer) loadApplied(dumped *State) {
	for k, m := range dumped.Mappings {
		if len(m.Locals) > 1 && m.Affinity == 0 && r.owned(m.Tag) {
			// VPP's dump never returns the affinity: the tag holds it.
			if a := TagAffinity(m.Tag); a != 0 {
				c := *m
				c.Affinity = a
				dumped.Mappings[k] = &c
			}
		}
	}
	r.frontends.Load(dumped.Mappings)
	dumped.Mappings = map[MappingKey]*Mapping{}
	r.applied = dumped
	for name := range r.ifIndex {
		if dumped.Interfaces[name] == 0 {
			delete(r.ifIndex, name)
		}
	}
}

// foreign tells whether VPP holds a mapping on fe that is not the agent's.
// The renderer tags the mappings it builds itself, always owned: one tagged
// as the desired mapping is, which spares reading the tag (the same string).
func (r *Renderer) foreign(fe *frontendState) bool {
	a := fe.Applied
	return a != nil && !(fe.Desired != nil && a.Tag == fe.Desired.Tag) && !r.owned(a.Tag)
}

// blocked records that a foreign object holds what the agent wants; the
// caller holds mu.
func (r *Renderer) blocked(id ObjectID, tag string) {
	f := Failure{Object: id, Reason: fmt.Sprintf("held by a foreign object tagged %q", tag)}
	if id.Kind == ObjectMapping {
		if fe := r.frontends.Get(id.Mapping); fe != nil && fe.Winner() != nil {
			f.Service = fe.Winner().Svc.ID
		}
	}
	if !r.failures.Has(id) {
		r.log.Warn("NAT44 object not applied", "object", id.String(), "service", f.Service, "reason", f.Reason)
	}
	r.failures.Set(id, f)
}

// batch counts what one apply did.
type batch struct {
	calls, invalid, transient       int
	added, removed, updated, locals int
	deleted                         map[MappingKey]struct{}
	// changed holds the keys of the mappings whose locals changed.
	changed  []MappingKey
	firstErr error
}

// run issues ops in order. After a failed call the object's remaining
// operations are skipped; the applied state records only what succeeded.
// With a Pipeliner VPP the Pipelined operations are sent without waiting
// for each answer (see Pipeliner); answers are handled in send order.
// Mapping operations wait while a node interface is pending (hold.go):
// their frontends are added to held, marked dirty, and returned.
func (r *Renderer) run(ctx context.Context, ops []step, full bool, start time.Time, held []*frontendState) ([]*frontendState, error) {
	x := &r.runner
	*x = runner{r: r, ctx: ctx, ops: ops, b: batch{changed: r.changedBuf[:0]}, noTable: x.noTable[:0]}
	b := &x.b
	if r.pipeliner != nil && len(ops) > 1 {
		if p, err := r.pipeliner.Pipeline(ctx); err == nil {
			x.p = p
			defer p.Close()
		} else {
			r.log.Debug("NAT44: no pipeline; calling synchronously", "err", err)
		}
	}
	q := &r.queue
	q.Start(ctx, x, ops)
	defer q.End()
	checked := false
	for i := range ops {
		op := &ops[i].Op
		if !checked && opClass(op.Kind) == OpDelMapping {
			// The features are answered first: are node interfaces missing?
			checked = true
			q.Drain()
			r.mu.Lock()
			hold := r.holding(time.Now())
			if hold {
				held = r.hold(ops[i:], held)
			}
			r.mu.Unlock()
			if hold {
				break
			}
		}
		if !q.Do(i) {
			b.transient += len(ops) - i
			if b.firstErr == nil {
				b.firstErr = ctx.Err()
			}
			break
		}
	}
	q.Drain()
	if !checked {
		// No mapping operation asked: the hold's state is still settled
		// once the interfaces are back (F1: a spent hold must not outlive
		// them, or the next VPP restart adds every mapping at once).
		r.mu.Lock()
		r.settleHold()
		r.mu.Unlock()
	}
	if x.retry {
		// Mappings made the table a route waited for (tables.go).
		retry := x.noTable
		x.noTable, x.retry = nil, false
		for _, i := range retry {
			_, err := x.Call(&ops[i])
			x.Result(i, struct{}{}, err)
		}
		x.noTable = retry[:0]
	}
	r.mu.Lock()
	b.finish(&r.stats)
	r.forgetTables() // a table stays pending while any route waits for it
	r.mu.Unlock()
	r.changedBuf = b.changed[:0]
	level := slog.LevelInfo
	if !full && b.calls == 0 && b.transient == 0 {
		level = slog.LevelDebug
	}
	if r.log.Enabled(ctx, level) {
		r.log.Log(ctx, level, "NAT44 applied", "full", full, "mappingsAdded", b.added, "mappingsRemoved", b.removed,
			"mappingsUpdated", b.updated, "localsChanged", b.locals, "calls", b.calls, "invalid", b.invalid,
			"transient", b.transient, "pipelined", x.p != nil, "mappingsHeld", len(held), "duration", time.Since(start))
	}
	x.ctx, x.ops, x.p = nil, nil, nil
	if b.transient > 0 {
		return held, fmt.Errorf("%d NAT44 calls failed: %w", b.transient, b.firstErr)
	}
	return held, nil
}

// hold marks the frontends of the mapping operations ops dirty again
// and adds them to held; the caller holds mu.
func (r *Renderer) hold(ops []step, held []*frontendState) []*frontendState {
	for i := range ops {
		if fe := ops[i].fe; fe != nil && r.frontends.Hold(fe) {
			held = append(held, fe)
		}
	}
	return held
}

// runner is the renderer's side of one run (the reconcile.Port of its
// queue): the pipeline, if any, what the run did, and the route adds
// refused for want of their table.
type runner struct {
	r   *Renderer
	ctx context.Context
	ops []step
	b   batch
	p   Pipeline
	// noTable are the route adds refused for want of their table; retry
	// is set once a mapping added since may have made one (tables.go).
	noTable []int
	retry   bool
}

var _ reconcile.Port[step, runKey, struct{}] = (*runner)(nil)

// runKey is the object of a step (Op.Object) as a run keys it: ObjectID's
// fields packed into 64 bytes. A map keeps such a key in place, while one
// of ObjectID's 160 bytes (over Go's 128) gets an allocation of its own:
// one per call of a full apply.
type runKey struct {
	kind ObjectKind
	// flag is a pool address's twice-NAT, a route prefix's length.
	flag  uint8
	proto Protocol
	port  uint16
	vrf   uint32
	addr  netip.Addr
	name  string
}

// Object implements reconcile.Port: the key of s.Object().
func (x *runner) Object(s *step) runKey {
	op := &s.Op
	switch op.Kind {
	case OpSetGlobal:
		return runKey{kind: ObjectGlobal}
	case OpDelPool, OpAddPool:
		k := runKey{kind: ObjectPool, addr: op.Pool.IP, vrf: op.Pool.VRF}
		if op.Pool.TwiceNAT {
			k.flag = 1
		}
		return k
	case OpSetInterface:
		return runKey{kind: ObjectInterface, name: op.Interface}
	case OpDelIdentity, OpAddIdentity:
		id := &op.Identity.IdentityKey
		return runKey{kind: ObjectIdentity, addr: id.IP, port: id.Port, proto: id.Proto, vrf: id.VRF}
	case OpDelRoute, OpAddRoute:
		p := op.Route.Prefix
		return runKey{kind: ObjectRoute, addr: p.Addr(), flag: uint8(p.Bits()), vrf: op.Route.VRF}
	}
	m := &op.Mapping.MappingKey
	return runKey{kind: ObjectMapping, addr: m.IP.Addr(), port: m.Port, proto: m.Proto}
}

// Ordered implements reconcile.Port: every object's calls wait for the
// previous answer.
func (x *runner) Ordered(runKey) bool { return true }

// Pipelined implements reconcile.Port.
func (x *runner) Pipelined(s *step) bool { return x.p != nil && Pipelined(s.Kind) }

// Send implements reconcile.Port.
func (x *runner) Send(s *step) error { return x.p.Send(&s.Op) }

// Recv implements reconcile.Port.
func (x *runner) Recv() (struct{}, error) { return struct{}{}, x.p.Recv() }

// Call implements reconcile.Port.
func (x *runner) Call(s *step) (struct{}, error) { return struct{}{}, x.r.call(x.ctx, &s.Op) }

// Result implements reconcile.Port: it records the outcome of ops[i]'s
// call.
func (x *runner) Result(i int, _ struct{}, err error) (failed bool) {
	r, b := x.r, &x.b
	op := &x.ops[i].Op
	id := op.Object()
	if err != nil && op.Kind == OpSetInterface && op.NewFeatures == 0 && errors.Is(err, ErrNoInterface) {
		err = nil // the interface is gone, and its features with it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b.calls++
	r.stats.Calls++
	if op.Kind == OpSetInterface {
		if err == nil {
			r.pending.Delete(op.Interface)
			if op.NewFeatures == 0 {
				delete(r.ifIndex, op.Interface)
			} else if op.SwIfIndex != 0 {
				r.ifIndex[op.Interface] = op.SwIfIndex
			}
		} else if errors.Is(err, ErrNoInterface) {
			r.waitFor(op)
			return false
		}
	}
	if op.Kind == OpAddRoute {
		if err == nil {
			x.routeAdded(op.Route.VRF) // the table exists (tables.go)
		} else if errors.Is(err, ErrNoTable) {
			r.waitForTable(op) // not a failure (tables.go)
			x.noTable = append(x.noTable, i)
			return false
		}
	}
	if err == nil {
		r.record(&x.ops[i])
		b.count(op)
		x.madeTable(op)
		return false
	}
	if errors.Is(err, ErrInvalid) {
		b.invalid++
		r.stats.Invalid++
		f := Failure{Object: id, Op: op.Kind, Reason: err.Error()}
		if fe := r.frontends.Get(id.Mapping); id.Kind == ObjectMapping && fe != nil && fe.Winner() != nil {
			f.Service = fe.Winner().Svc.ID
		}
		r.failures.Set(id, f)
		r.log.Warn("VPP refused a NAT44 call", "object", id.String(), "service", f.Service, "op", op.Kind.String(), "err", err)
	} else {
		b.transient++
		r.stats.Transient++
		if b.firstErr == nil {
			b.firstErr = fmt.Errorf("%s: %w", op, err)
		}
	}
	return true
}

// waitFor records that the features of op's interface wait for VPP to
// have it: VPP has none of them now (it drops an interface's features with
// it). Not a failure; every full apply and every UpdateInterface of that
// name retries. The caller holds mu.
func (r *Renderer) waitFor(op *Op) {
	delete(r.applied.Interfaces, op.Interface)
	if r.pending.Add(op.Interface, op.NewFeatures, time.Now()) {
		r.log.Info("NAT44: waiting for interface", "interface", op.Interface, "features", op.NewFeatures.String())
	}
}

// Pending lists the interfaces whose features wait for VPP to have the
// interface, sorted by name.
func (r *Renderer) Pending() []PendingInterface {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var ps []PendingInterface // nil when none
	for _, w := range r.pending.Sorted() {
		ps = append(ps, PendingInterface{Name: w.Key, Features: w.Value, Since: w.Since})
	}
	return ps
}

// record notes in the applied state that s succeeded; the caller holds mu.
func (r *Renderer) record(s *step) {
	if s.fe != nil {
		s.fe.Applied = afterOp(s.fe.Applied, &s.Op)
		return
	}
	if k := s.Route.RouteKey; s.Kind == OpAddRoute {
		if d := r.desired.Routes[k]; d != nil && *d == s.Route {
			r.applied.Routes[k] = d // shared, not copied
			return
		}
	}
	r.applied.Apply(s.Op)
}

// count records one successful operation.
func (b *batch) count(op *Op) {
	switch op.Kind {
	case OpDelMapping:
		if b.deleted == nil {
			b.deleted = map[MappingKey]struct{}{}
		}
		b.deleted[op.Mapping.MappingKey] = struct{}{}
		b.removed++
	case OpAddMapping:
		if _, ok := b.deleted[op.Mapping.MappingKey]; ok {
			b.removed--
			b.updated++
		} else {
			b.added++
		}
	case OpAddLocal, OpDelLocal:
		b.locals++
		// Operations on one mapping's locals are adjacent within a kind.
		if n := len(b.changed); n == 0 || b.changed[n-1] != op.Mapping.MappingKey {
			b.changed = append(b.changed, op.Mapping.MappingKey)
		}
	}
}

// finish adds the batch to the cumulative counters.
func (b *batch) finish(s *Stats) {
	slices.SortFunc(b.changed, compareMappingKeys)
	b.updated += len(slices.Compact(b.changed))
	s.MappingsAdded += uint64(b.added)
	s.MappingsRemoved += uint64(b.removed)
	s.MappingsUpdated += uint64(b.updated)
	s.LocalsChanged += uint64(b.locals)
}

// call issues one operation.
func (r *Renderer) call(ctx context.Context, op *Op) error { return Call(ctx, r.vpp, op) }

// Call issues one operation through v's synchronous methods.
func Call(ctx context.Context, v VPP, op *Op) error {
	switch op.Kind {
	case OpSetGlobal:
		return v.SetGlobal(ctx, op.Global)
	case OpAddPool, OpDelPool:
		return v.AddDelPoolAddress(ctx, op.Pool, op.Kind == OpAddPool)
	case OpSetInterface:
		idx, err := v.SetInterfaceFeatures(ctx, op.Interface, op.OldFeatures, op.NewFeatures)
		op.SwIfIndex = idx
		return err
	case OpAddIdentity, OpDelIdentity:
		return v.AddDelIdentity(ctx, op.Identity, op.Kind == OpAddIdentity)
	case OpAddMapping, OpDelMapping:
		return v.AddDelMapping(ctx, op.Mapping, op.Kind == OpAddMapping)
	case OpAddLocal, OpDelLocal:
		return v.AddDelLBLocal(ctx, op.Mapping.MappingKey, op.Local, op.Kind == OpAddLocal)
	case OpAddRoute, OpDelRoute:
		return v.AddDelRoute(ctx, op.Route, op.Kind == OpAddRoute)
	}
	return fmt.Errorf("unknown NAT44 operation %d", op.Kind)
}

// normalize makes a dumped state comparable with a built one: maps made,
// locals and pool sorted, address-only identities without protocol.
func normalize(s *State) {
	if s.Interfaces == nil {
		s.Interfaces = map[string]Features{}
	}
	if s.Mappings == nil {
		s.Mappings = map[MappingKey]*Mapping{}
	}
	if s.Identities == nil {
		s.Identities = map[IdentityKey]*Identity{}
	}
	if s.Routes == nil {
		s.Routes = map[RouteKey]*Route{}
	}
	for name, f := range s.Interfaces {
		if f == 0 {
			delete(s.Interfaces, name)
		}
	}
	slices.SortFunc(s.Pool, comparePool)
	for _, m := range s.Mappings {
		if !slices.IsSortedFunc(m.Locals, compareLocals) {
			m.Locals = slices.Clone(m.Locals)
			slices.SortFunc(m.Locals, compareLocals)
		}
	}
	for k, id := range s.Identities {
		if k.Port == 0 && k.Proto != 0 {
			delete(s.Identities, k)
			c := *id
			c.Proto = 0
			s.Identities[c.IdentityKey] = &c
		}
	}
}
