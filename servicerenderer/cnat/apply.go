package cnat

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
// reads VPP's SNAT addresses, translations and drop routes.
//
// The node configuration cannot be read back (FACTS §6) but for the SNAT
// addresses and the drop routes, which a full apply reads; for the rest it
// takes as applied what the renderer recorded (in memory, else in the
// Store), but only while VPP still reports the recorded SNAT addresses,
// which the renderer sets after the rest of the node configuration. When
// VPP reports other addresses (a restarted VPP reports none), nothing is
// taken as applied and everything is configured again. A fresh renderer
// without a Store record over a VPP reporting the desired SNAT addresses
// takes the desired node configuration as applied.
// ASSUMPTION: VPP holding this node's SNAT addresses means a previous
// agent configured this node's cnat, interfaces included (features
// cannot be read, and enabling one twice puts it on the arc twice, so the
// renderer errs towards not enabling); with a Store, interfaces added
// while the agent was down are configured too.
//
// A delete never uses an id kept from an earlier call (VPP reuses ids last
// in, first out): a full apply deletes by the ids its own dump just read;
// an incremental one re-reads the id of the key right before deleting,
// from the reply of an update of the key with the paths VPP holds (an
// identical update changes nothing and keeps every connection, FACTS §6).
func (r *Renderer) Apply(ctx context.Context, full bool) error {
	return reconcile.Apply(ctx, &r.mu, (*cycle)(r), full)
}

// cycle is the renderer's side of reconcile.Apply.
type cycle Renderer

var _ reconcile.Cycle[dumped, Op] = (*cycle)(nil)

// Begin implements reconcile.Cycle; it takes the news of a VPP restart.
func (c *cycle) Begin(full bool) bool {
	r := (*Renderer)(c)
	r.start = time.Now()
	if r.restarted {
		r.restarted = false
		r.forgetVPP()
	}
	r.stats.Applies++
	if full = full || !r.synced; full {
		r.stats.FullApplies++
	}
	return full
}

// Dump implements reconcile.Cycle.
func (c *cycle) Dump(ctx context.Context) (dumped, error) {
	r := (*Renderer)(c)
	d, calls, err := r.dump(ctx)
	r.mu.Lock()
	r.stats.Calls += calls
	if err != nil {
		r.stats.Transient++
	}
	r.mu.Unlock()
	return d, err
}

// PlanFull implements reconcile.Cycle.
func (c *cycle) PlanFull(d dumped) []Op { return (*Renderer)(c).planFull(d) }

// PlanChanges implements reconcile.Cycle.
func (c *cycle) PlanChanges() []Op { return (*Renderer)(c).planChanges() }

// Run implements reconcile.Cycle.
func (c *cycle) Run(ctx context.Context, ops []Op, full bool) error {
	r := (*Renderer)(c)
	return r.run(ctx, ops, full, r.start)
}

// End implements reconcile.Cycle.
func (c *cycle) End(full bool, _ []Op) {
	r := (*Renderer)(c)
	r.forgetTables() // a table stays pending while any route waits for it
	r.frontends.Done(full, nil)
	r.ids = nil
}

// dumped is what a full apply reads from VPP.
type dumped struct {
	ip4, ip6     netip.Addr
	translations []Dumped
	routes       []Route
}

// dump reads VPP's SNAT addresses, translations and drop routes; calls
// is the number of calls made.
func (r *Renderer) dump(ctx context.Context) (d dumped, calls int, err error) {
	calls = 2
	d.ip4, d.ip6, err = r.vpp.SNATAddresses(ctx)
	if err != nil {
		return d, calls, fmt.Errorf("read cnat SNAT addresses: %w", err)
	}
	d.translations, err = r.vpp.DumpTranslations(ctx)
	if err != nil {
		return d, calls, fmt.Errorf("dump cnat translations: %w", err)
	}
	if len(r.cfg.ServiceCIDRs) > 0 {
		calls++
		d.routes, err = r.vpp.DumpFIBRoutes(ctx, []uint32{r.cfg.PodVRF, r.cfg.MainVRF}, r.cfg.IPv6())
		if err != nil {
			return d, calls, fmt.Errorf("dump routes: %w", err)
		}
	}
	return d, calls, nil
}

// planFull loads what VPP holds and plans the operations that make it
// hold the desired state; the caller holds mu.
func (r *Renderer) planFull(d dumped) []Op {
	r.loadNode(d.ip4, d.ip6, d.routes)
	r.loadVerdicts(d.routes)
	r.loadTranslations(d.translations)
	r.synced = true
	r.failures.Clear()
	r.pending.Keep(func(name string) bool {
		_, ok := r.desired.Features[name]
		return ok
	})
	r.pendingTables.Keep(func(vrf uint32) bool {
		return slices.ContainsFunc(r.desired.Routes, func(rt Route) bool { return rt.VRF == vrf })
	})
	ops := DiffNode(r.desired, r.applied)
	// Verdict routes added before the translations, deleted after them,
	// as in planChanges.
	verdicts := r.appendDiffVerdicts(nil, nil, nil)
	ops = appendVerdicts(ops, verdicts, true)
	fes := r.frontends.Sorted()
	// Room for an operation per translation VPP lacks (all of them at a
	// first programming) at once, rather than by doubling.
	adds := 0
	for _, fe := range fes {
		if fe.Applied == nil && fe.Desired != nil {
			adds++
		}
	}
	ops = slices.Grow(ops, adds+len(verdicts))
	for _, fe := range fes {
		id, haveID := r.ids[fe.Key]
		ops = appendDiffTranslation(ops, fe.Desired, fe.Applied, id, haveID)
		r.frontends.Clean(fe)
	}
	ops = appendVerdicts(ops, verdicts, false)
	r.dirtyIfs = nil
	r.dirtyRoutes = nil
	return ops
}

// planChanges plans the operations for what changed since the last
// apply; the caller holds mu.
func (r *Renderer) planChanges() []Op {
	var ops []Op
	if len(r.dirtyIfs) > 0 {
		names := make([]string, 0, len(r.dirtyIfs))
		for n := range r.dirtyIfs {
			names = append(names, n)
		}
		slices.Sort(names)
		ops = diffNode(ops, r.desired, r.applied, names, false)
		r.dirtyIfs = nil
		// Tables come with the startup configuration's interfaces (and
		// pods go only into a table that exists): an apply with
		// interface news tries the routes that wait for a table.
		for _, op := range diffRoutes(nil, r.desired.Routes, r.applied.Routes, true) {
			if r.pendingTables.Has(op.Route.VRF) {
				ops = append(ops, op)
			}
		}
		if r.pendingTables.Len() > 0 {
			ops = r.appendDiffVerdicts(ops, nil, &r.pendingTables)
		}
	}
	// A cluster IP's reject route is added before its last translation is
	// deleted, and deleted after its first translation is made (the
	// translation hides it, BuildRoutes): no packet meets the address
	// with neither, which the service CIDR's drop route would drop.
	var verdicts []Op
	if len(r.dirtyRoutes) > 0 {
		verdicts = r.appendDiffVerdicts(nil, r.dirtyRoutes, nil)
		r.dirtyRoutes = nil
	}
	ops = appendVerdicts(ops, verdicts, true)
	for _, fe := range r.frontends.Dirty() {
		ops = appendDiffTranslation(ops, fe.Desired, fe.Applied, 0, false)
		r.frontends.Clean(fe)
	}
	return appendVerdicts(ops, verdicts, false)
}

// appendVerdicts appends the adds (add) or the deletes of the verdict
// route operations verdicts to ops.
func appendVerdicts(ops, verdicts []Op, add bool) []Op {
	for _, op := range verdicts {
		if op.Add == add {
			ops = append(ops, op)
		}
	}
	return ops
}

// loadNode decides what node configuration VPP holds, given the SNAT
// addresses it reports and the drop routes it holds (see Apply).
func (r *Renderer) loadNode(ip4, ip6 netip.Addr, routes []Route) {
	n, fresh := r.pickNode(ip4, ip6)
	if n != r.applied {
		clear(r.ifIndex) // none of it is known to be configured any more
	}
	r.applied = n
	r.applied.Routes = r.ownedRoutes(routes)
	if fresh {
		r.saveNode()
	}
}

// ownedRoutes are the dumped routes that are the renderer's, sorted: on
// a service CIDR in the pod or main VRF (Config.ownedRoute), or, while VPP
// holds the recorded node configuration, recorded as added by the renderer
// (the route of a service CIDR no longer configured, which then goes).
func (r *Renderer) ownedRoutes(dumped []Route) []Route {
	var out []Route
	for _, rt := range dumped {
		rt.Prefix = rt.Prefix.Masked()
		if rt.Kind != RouteReject && (r.cfg.ownedRoute(rt) || slices.Contains(r.applied.Routes, rt)) {
			out = append(out, rt)
		}
	}
	slices.SortFunc(out, Route.Compare)
	return slices.Compact(out)
}

// pickNode is the node configuration VPP holds, given the SNAT addresses
// it reports (routes as recorded, to be replaced by those dumped); fresh
// when the record is not trusted and the node starts from what VPP reports.
func (r *Renderer) pickNode(ip4, ip6 netip.Addr) (n *Node, fresh bool) {
	cand, from := r.applied, "memory"
	if cand == nil && r.store != nil {
		n, err := r.store.Load()
		if err != nil {
			r.log.Warn("cnat node record unreadable: ignored", "err", err)
		}
		cand, from = n, "record"
	}
	if cand == nil {
		cand, from = r.desired.Clone(), "assumed"
	}
	if cand.SNAT4.IsValid() && unspec4(cand.SNAT4) == unspec4(ip4) && unspec6(cand.SNAT6) == unspec6(ip6) {
		if cand.Tables == nil {
			cand.Tables = map[string]Tables{}
		}
		if cand.Features == nil {
			cand.Features = map[string]Feature{}
		}
		if from != "memory" {
			r.log.Info("VPP holds this node's cnat configuration", "source", from, "interfaces", len(cand.Features))
		}
		return cand, false
	}
	if cand.configured() && from != "assumed" {
		r.log.Info("VPP lost the cnat node configuration (restarted?): configuring it again", "snat4", ip4, "snat6", ip6)
	}
	n = &Node{Tables: map[string]Tables{}, Features: map[string]Feature{}}
	if ip4.IsValid() && !ip4.IsUnspecified() {
		n.SNAT4 = ip4
	}
	if ip6.IsValid() && !ip6.IsUnspecified() {
		n.SNAT6 = ip6
	}
	return n, true
}

// loadTranslations makes the dumped translations the renderer owns what
// VPP holds; the others are foreign and never touched.
func (r *Renderer) loadTranslations(dumped []Dumped) {
	foreign := 0
	held := make(map[Key]*Translation, len(dumped))
	r.ids = make(map[Key]uint32, len(dumped))
	for i := range dumped {
		d := &dumped[i]
		if !r.owned(d.Key) && !r.cfg.sinkOnly(d.Paths) {
			foreign++
			continue
		}
		t := r.fromDump(d)
		if fe := r.frontends.Get(d.Key); fe != nil && t.Equal(fe.Desired) {
			t = fe.Desired
		}
		held[d.Key], r.ids[d.Key] = t, d.ID
	}
	r.stats.Foreign = foreign
	r.frontends.Load(held)
}

// fromDump is the translation a dump shows, with what the dump lacks
// derived as the renderer builds it: is_real_ip from the VIP being a node
// IP, the flow hash from the LB type (the renderer makes Maglev only with
// the source-IP hash). Flags are never set by the renderer.
// ASSUMPTION: a translation on the renderer's keys was made by the
// renderer; one made otherwise with another flow hash or is_real_ip is not
// recognised as different.
func (r *Renderer) fromDump(d *Dumped) *Translation {
	t := &Translation{Key: d.Key, Paths: slices.Clone(d.Paths), LB: d.LB, RealIP: slices.Contains(r.node.IPs, d.IP)}
	if d.LB == LBMaglev {
		t.FlowHash = FlowHashSrcIP
	}
	slices.SortFunc(t.Paths, Path.Compare)
	return t
}

// run issues ops in order. After a failed call the object's remaining
// operations are skipped; the applied state records only what succeeded.
// With a Pipeliner VPP the Pipelined operations are sent without waiting
// for each answer (see Pipeliner); answers are handled in send order.
// It logs one line for the batch (at debug level when an incremental
// apply called nothing). It calls VPP without mu, and records each answer
// under it.
func (r *Renderer) run(ctx context.Context, ops []Op, full bool, start time.Time) error {
	x := &r.runner
	*x = runner{r: r, ctx: ctx, ops: ops}
	if pl, ok := r.vpp.(Pipeliner); ok && len(ops) > 1 {
		if p, err := pl.Pipeline(ctx); err == nil {
			x.p = p
			defer p.Close()
		} else {
			r.log.Debug("cnat: no pipeline; calling synchronously", "err", err)
		}
	}
	q := &r.queue
	q.Start(ctx, x, ops)
	defer q.End()
	for i := range ops {
		if !q.Do(i) {
			q.Drain()
			r.mu.Lock()
			r.stats.Transient += len(ops) - i
			r.mu.Unlock()
			x.b.transient += len(ops) - i
			x.b.firstErr = cmpErr(x.b.firstErr, ctx.Err())
			break
		}
	}
	q.Drain()
	if x.nodeChanged {
		r.saveNode()
	}
	b := &x.b
	level := slog.LevelInfo
	if !full && b.calls == 0 && b.transient == 0 {
		level = slog.LevelDebug
	}
	if r.log.Enabled(ctx, level) {
		r.log.Log(ctx, level, "cnat applied", "full", full, "translationsAdded", b.added, "translationsRemoved", b.removed,
			"translationsUpdated", b.updated, "nodeCalls", b.node, "calls", b.calls, "invalid", b.invalid,
			"transient", b.transient, "pending", r.pending.Len(), "pipelined", x.p != nil, "duration", time.Since(start))
	}
	x.ctx, x.ops, x.p = nil, nil, nil
	return b.firstErr
}

// batch counts what one apply did.
type batch struct {
	calls, invalid, transient int
	added, removed, updated   int
	// node counts the successful node operations (interfaces, prefixes,
	// policy, routes, SNAT addresses).
	node int
	// deleted holds the keys whose translation this apply deleted: adding
	// one again is an update (an affinity change).
	deleted  map[Key]struct{}
	firstErr error
}

// runner is the renderer's side of one run (the reconcile.Port of its
// queue): the pipeline, if any, and what the run did.
type runner struct {
	r           *Renderer
	ctx         context.Context
	ops         []Op
	b           batch
	p           Pipeline
	nodeChanged bool
	// extra counts the calls a call made before its own (callNode).
	extra int
}

var _ reconcile.Port[Op, ObjectID, uint32] = (*runner)(nil)

// Object implements reconcile.Port.
func (x *runner) Object(op *Op) ObjectID { return objectOf(op) }

// Ordered implements reconcile.Port: a translation's earlier call decides
// whether its next one runs (a delete that failed must not be followed by
// the re-add). An interface's calls go out together, as NAT44's features
// of one interface do: each records its own result, and a missing
// interface is known before sending (Send's error).
func (x *runner) Ordered(id ObjectID) bool { return id.Kind != ObjectInterface }

// Pipelined implements reconcile.Port.
func (x *runner) Pipelined(op *Op) bool { return x.p != nil && Pipelined(op) }

// Send implements reconcile.Port.
func (x *runner) Send(op *Op) error { return x.p.Send(op) }

// Recv implements reconcile.Port.
func (x *runner) Recv() (uint32, error) { return x.p.Recv() }

// Result implements reconcile.Port: it records the outcome of ops[i]'s
// call; idx is the interface's sw_if_index for an interface's operation.
func (x *runner) Result(i int, idx uint32, err error) (failed bool) {
	r, b, op := x.r, &x.b, &x.ops[i]
	id := objectOf(op)
	r.mu.Lock()
	defer r.mu.Unlock()
	// The call, and those it made before (callNode).
	r.stats.Calls += 1 + x.extra
	r.stats.Writes += 1 + x.extra
	x.extra = 0
	b.calls++
	switch {
	case err == nil:
	case !op.Add && (op.Kind == OpFeature || op.Kind == OpSNATInterface) && errors.Is(err, ErrNoInterface):
		err = nil // the interface is gone, and its configuration with it
	case op.Kind == OpDeleteTranslation && errors.Is(err, ErrNotFound):
		err = nil
	case op.isRoute() && !op.Add && errors.Is(err, ErrNoTable):
		err = nil // the table is gone, and its routes with it
	}
	if err == nil {
		if op.Kind < OpDeleteTranslation {
			x.nodeChanged = true
			b.node++
		}
		if op.Interface != "" {
			r.pending.Delete(op.Interface)
		}
		b.count(op, r.frontends.Get(op.Translation.keyOrZero()))
		r.record(op, idx)
		return false
	}
	if op.isRoute() && errors.Is(err, ErrNoTable) {
		// Not a failure either: VPP has not made the table yet (its
		// startup configuration runs seconds after a restart); the next
		// apply tries again.
		if r.pendingTables.Add(op.Route.VRF, struct{}{}, time.Now()) {
			r.log.Info("cnat: waiting for FIB table", "vrf", op.Route.VRF, "route", op.Route.String())
		}
		return true
	}
	if errors.Is(err, ErrNoInterface) {
		// Not a failure: the interface is not there yet (a pod's
		// interface being made); UpdateInterface and full applies try again.
		if r.pending.Add(op.Interface, struct{}{}, time.Now()) {
			r.log.Info("cnat: waiting for interface", "interface", op.Interface)
		}
		return true
	}
	if errors.Is(err, ErrInvalid) {
		b.invalid++
		r.stats.Invalid++
		r.failures.Set(id, Failure{Object: id, Op: op.Kind, Reason: err.Error()})
		r.log.Warn("cnat object not applied", "object", id.String(), "op", op.Kind.String(), "err", err)
		return true
	}
	b.transient++
	r.stats.Transient++
	b.firstErr = cmpErr(b.firstErr, err)
	return true
}

// count records one successful translation operation; fe is its
// frontend, before the operation is recorded.
func (b *batch) count(op *Op, fe *frontend) {
	switch op.Kind {
	case OpDeleteTranslation:
		if b.deleted == nil {
			b.deleted = map[Key]struct{}{}
		}
		b.deleted[op.Translation.Key] = struct{}{}
		b.removed++
	case OpUpdateTranslation:
		switch _, again := b.deleted[op.Translation.Key]; {
		case again:
			b.removed--
			b.updated++
		case fe == nil || fe.Applied == nil:
			b.added++
		default:
			b.updated++
		}
	}
}

// keyOrZero is t's key, the zero key for no translation.
func (t *Translation) keyOrZero() Key {
	if t == nil {
		return Key{}
	}
	return t.Key
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Call implements reconcile.Port: it issues one operation; for an interface's, it also returns the
// interface's sw_if_index.
func (x *runner) Call(op *Op) (uint32, error) {
	switch op.Kind {
	case OpFeature:
		return x.r.vpp.EnableDisableFeature(x.ctx, op.Interface, op.Feature, op.Add)
	case OpSNATInterface:
		return x.r.vpp.AddDelSNATInterface(x.ctx, op.Interface, op.Table, op.Add)
	}
	return 0, x.r.callNode(x.ctx, op, &x.extra)
}

// callNode issues an operation that names no interface, adding the calls
// made beyond the first to writes.
func (r *Renderer) callNode(ctx context.Context, op *Op, writes *int) error {
	switch op.Kind {
	case OpExcludePrefix:
		return r.vpp.AddDelExcludePrefix(ctx, op.Prefix, op.Add)
	case OpPolicy:
		return r.vpp.SetSNATPolicy(ctx, op.Policy)
	case OpRoute, OpVerdictRoute:
		return r.vpp.AddDelFIBRoute(ctx, op.Route, op.Add)
	case OpSNATAddresses:
		return r.vpp.SetSNATAddresses(ctx, op.IP4, op.IP6)
	case OpUpdateTranslation:
		if len(op.Translation.Paths) == 0 {
			return fmt.Errorf("translation %s: %w: no path", op.Translation.Key, ErrInvalid)
		}
		_, err := r.vpp.UpdateTranslation(ctx, op.Translation)
		return err
	case OpDeleteTranslation:
		id := op.ID
		if !op.HaveID {
			// Re-read the key's id: an update of it with the paths VPP
			// holds changes nothing and returns the id (FACTS §6: an
			// identical update keeps the id and every connection).
			// ASSUMPTION: should the key be gone, the update re-creates
			// it for the instant before the delete; harmless.
			var err error
			if id, err = r.vpp.UpdateTranslation(ctx, op.Translation); err != nil {
				return err
			}
			*writes++
		}
		return r.vpp.DeleteTranslation(ctx, id)
	}
	return fmt.Errorf("cnat: unknown operation %d", op.Kind)
}

// record makes the applied state hold what a successful op did; idx is
// the interface's sw_if_index for an interface's op.
func (r *Renderer) record(op *Op, idx uint32) {
	a := r.applied
	switch op.Kind {
	case OpFeature:
		f := a.Features[op.Interface]
		if op.Add {
			f |= op.Feature
		} else {
			f &^= op.Feature
		}
		if f == 0 {
			delete(a.Features, op.Interface)
		} else {
			a.Features[op.Interface] = f
		}
	case OpSNATInterface:
		t := a.Tables[op.Interface]
		if op.Add {
			t |= 1 << op.Table
		} else {
			t &^= 1 << op.Table
		}
		if t == 0 {
			delete(a.Tables, op.Interface)
		} else {
			a.Tables[op.Interface] = t
		}
	case OpExcludePrefix:
		i, found := slices.BinarySearchFunc(a.Exclude, op.Prefix, comparePrefix)
		if op.Add && !found {
			a.Exclude = slices.Insert(a.Exclude, i, op.Prefix)
		} else if !op.Add && found {
			a.Exclude = slices.Delete(a.Exclude, i, i+1)
		}
	case OpPolicy:
		a.Policy = op.Policy
	case OpRoute:
		if op.Add { // an add replaces the route on that prefix and VRF
			a.Routes = slices.DeleteFunc(a.Routes, op.Route.samePlace)
		}
		i, found := slices.BinarySearchFunc(a.Routes, op.Route, Route.Compare)
		if op.Add && !found {
			a.Routes = slices.Insert(a.Routes, i, op.Route)
		} else if !op.Add && found {
			a.Routes = slices.Delete(a.Routes, i, i+1)
		}
	case OpSNATAddresses:
		a.SNAT4, a.SNAT6 = op.IP4, op.IP6
	case OpVerdictRoute:
		if op.Add {
			r.verdicts[op.Route] = struct{}{}
		} else {
			delete(r.verdicts, op.Route)
		}
	case OpDeleteTranslation:
		if fe := r.frontends.Get(op.Translation.Key); fe != nil {
			fe.Applied = nil
			delete(r.ids, fe.Key)
		}
	case OpUpdateTranslation:
		if fe := r.frontends.Get(op.Translation.Key); fe != nil {
			fe.Applied = op.Translation
		}
	}
	if op.Kind == OpFeature || op.Kind == OpSNATInterface {
		_, f := a.Features[op.Interface]
		_, t := a.Tables[op.Interface]
		switch {
		case !f && !t:
			delete(r.ifIndex, op.Interface)
		case op.Add:
			r.ifIndex[op.Interface] = idx
		}
	}
}

// saveNode stores the applied node configuration.
func (r *Renderer) saveNode() {
	if r.store == nil || r.applied == nil {
		return
	}
	if err := r.store.Save(r.applied); err != nil {
		r.log.Warn("cnat node record not saved", "err", err)
	}
}

// forgetTables drops the tables no wanted route (drop or verdict) waits
// for any more: one route added into a table does not mean the others
// refused for want of it are in. The caller holds mu.
func (r *Renderer) forgetTables() {
	r.pendingTables.Keep(func(vrf uint32) bool {
		waits := slices.ContainsFunc(diffRoutes(nil, r.desired.Routes, r.applied.Routes, true), func(op Op) bool {
			return op.Add && op.Route.VRF == vrf
		})
		for rt, n := range r.routeRefs {
			if _, have := r.verdicts[rt]; n > 0 && !have && rt.VRF == vrf {
				waits = true
			}
		}
		return waits
	})
}
