package nat44

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"contiv.dev/vpp/servicerenderer"
)

var _ servicerenderer.Renderer = (*Renderer)(nil)

// Params are what a Renderer needs.
type Params struct {
	Config Config
	VPP    VPP
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// Renderer is the NAT44 renderer: its Renderer methods record the desired
// state of one change (at a cost proportional to that change), and Apply
// pushes what changed to VPP (it is the controller's Applier).
//
// Every method but the introspection ones (Desired, Applied, Failures,
// Conflicts, Stats) must be called from one goroutine, the controller's
// loop; the introspection methods may be called from any goroutine.
type Renderer struct {
	cfg   Config
	vpp   VPP
	log   *slog.Logger
	owned func(tag string) bool

	// mu guards the fields below against the introspection methods: the
	// loop goroutine, their only writer, reads them without it.
	mu            sync.RWMutex
	node          servicerenderer.LocalNode
	services      map[servicerenderer.ServiceID]*serviceEntry
	nodeDependent map[servicerenderer.ServiceID]struct{}
	// winner holds the service whose mapping is rendered for a key; losers
	// the other claimants, oldest first (only keys in conflict).
	winner map[MappingKey]*serviceEntry
	losers map[MappingKey][]*serviceEntry
	// reported holds the conflicts already logged; quiet, during a
	// Resync, those logged before it.
	reported   map[conflictPair]struct{}
	quiet      map[conflictPair]struct{}
	interfaces map[string]servicerenderer.InterfaceRole
	desired    *State
	applied    *State
	// synced is set once a full apply ran after the last Resync.
	synced          bool
	dirtyMappings   map[MappingKey]struct{}
	dirtyInterfaces map[string]struct{}
	failures        map[ObjectID]Failure
	stats           Stats
	// opsBuf is reused by incremental applies.
	opsBuf []Op
}

// serviceEntry is one service and the mappings it claims.
type serviceEntry struct {
	svc *servicerenderer.ContivService
	// mappingTag is the tag of its mappings.
	mappingTag string
	// nodeDependent is set when its mappings depend on this node's
	// addresses (it is then in Renderer.nodeDependent).
	nodeDependent bool
	// mappings are sorted by key.
	mappings []*Mapping
}

// mapping is the entry's mapping for key.
func (e *serviceEntry) mapping(key MappingKey) *Mapping {
	i, ok := slices.BinarySearchFunc(e.mappings, key, func(m *Mapping, k MappingKey) int {
		return compareMappingKeys(m.MappingKey, k)
	})
	if !ok {
		return nil
	}
	return e.mappings[i]
}

// before tells whether e wins a frontend over f: the oldest, then the
// lower ID.
func (e *serviceEntry) before(f *serviceEntry) bool {
	if !e.svc.Created.Equal(f.svc.Created) {
		return e.svc.Created.Before(f.svc.Created)
	}
	if e.svc.ID.Namespace != f.svc.ID.Namespace {
		return e.svc.ID.Namespace < f.svc.ID.Namespace
	}
	return e.svc.ID.Name < f.svc.ID.Name
}

type conflictPair struct {
	key   MappingKey
	loser servicerenderer.ServiceID
}

// New validates the configuration and makes a renderer with no service.
func New(p Params) (*Renderer, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	if p.VPP == nil {
		return nil, errors.New("nat44: no VPP")
	}
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	r := &Renderer{
		cfg:      p.Config,
		vpp:      p.VPP,
		log:      log,
		owned:    p.Config.Owned,
		reported: map[conflictPair]struct{}{},
		failures: map[ObjectID]Failure{},
		applied:  NewState(),
	}
	r.reset(servicerenderer.LocalNode{}, nil)
	return r, nil
}

// reset forgets every service; the caller holds mu.
func (r *Renderer) reset(node servicerenderer.LocalNode, interfaces map[string]servicerenderer.InterfaceRole) {
	r.node = node
	r.services = map[servicerenderer.ServiceID]*serviceEntry{}
	r.nodeDependent = map[servicerenderer.ServiceID]struct{}{}
	r.winner = map[MappingKey]*serviceEntry{}
	r.losers = map[MappingKey][]*serviceEntry{}
	r.interfaces = maps.Clone(interfaces)
	if r.interfaces == nil {
		r.interfaces = map[string]servicerenderer.InterfaceRole{}
	}
	r.desired = BuildGlobal(r.cfg, r.interfaces)
	r.synced = false
	r.dirtyMappings = map[MappingKey]struct{}{}
	r.dirtyInterfaces = map[string]struct{}{}
}

// errNilService is the error of a call without its service.
var errNilService = errors.New("nat44: nil service")

// AddService implements servicerenderer.Renderer.
func (r *Renderer) AddService(svc *servicerenderer.ContivService) error {
	if svc == nil {
		return errNilService
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setService(svc)
	return nil
}

// UpdateService implements servicerenderer.Renderer.
func (r *Renderer) UpdateService(_, svc *servicerenderer.ContivService) error {
	if svc == nil {
		return errNilService
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setService(svc)
	return nil
}

// DeleteService implements servicerenderer.Renderer.
func (r *Renderer) DeleteService(svc *servicerenderer.ContivService) error {
	if svc == nil {
		return errNilService
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.services[svc.ID]
	if e == nil {
		r.log.Debug("delete of unknown service ignored", "service", svc.ID)
		return nil
	}
	for _, m := range e.mappings {
		r.release(e, m.MappingKey)
	}
	delete(r.services, svc.ID)
	delete(r.nodeDependent, svc.ID)
	if r.debug() {
		r.log.Debug("service removed", "service", svc.ID, "mappings", len(e.mappings))
	}
	return nil
}

// setService renders svc, new or changed; the caller holds mu.
func (r *Renderer) setService(svc *servicerenderer.ContivService) {
	e := r.services[svc.ID]
	var tag string
	if e != nil {
		tag = e.mappingTag
	} else {
		tag = ServiceTag(r.cfg.TagPrefix, svc.ID)
	}
	ms := buildService(svc, r.node, &r.cfg, tag)
	slices.SortFunc(ms, func(a, b *Mapping) int { return compareMappingKeys(a.MappingKey, b.MappingKey) })
	if e != nil && !e.svc.Created.Equal(svc.Created) {
		// Another incarnation of the service: it may now lose or win frontends.
		for _, m := range e.mappings {
			r.release(e, m.MappingKey)
		}
		e = &serviceEntry{svc: svc, mappingTag: tag, nodeDependent: e.nodeDependent}
		r.services[svc.ID] = e
	}
	if e == nil {
		e = &serviceEntry{svc: svc, mappingTag: tag}
		r.services[svc.ID] = e
	}
	old := e.mappings
	e.svc, e.mappings = svc, ms
	i, j := 0, 0
	for i < len(old) || j < len(ms) {
		var c int
		switch {
		case i == len(old):
			c = 1
		case j == len(ms):
			c = -1
		default:
			c = compareMappingKeys(old[i].MappingKey, ms[j].MappingKey)
		}
		switch {
		case c < 0:
			r.release(e, old[i].MappingKey)
			i++
		case c > 0:
			r.claim(e, ms[j])
			j++
		default:
			if r.winner[ms[j].MappingKey] == e {
				r.setDesired(ms[j].MappingKey, ms[j])
			}
			i++
			j++
		}
	}
	if dep := dependsOnNode(svc); dep != e.nodeDependent {
		e.nodeDependent = dep
		if dep {
			r.nodeDependent[svc.ID] = struct{}{}
		} else {
			delete(r.nodeDependent, svc.ID)
		}
	}
	if r.debug() {
		r.log.Debug("service rendered", "service", svc.ID, "mappings", len(ms))
	}
}

// debug tells whether debug logs are on: per-object debug lines are built
// only then.
func (r *Renderer) debug() bool { return r.log.Enabled(context.Background(), slog.LevelDebug) }

// dependsOnNode tells whether a service's mappings depend on this node's
// addresses: NodePorts, and host-network backends that may be this node's.
func dependsOnNode(svc *servicerenderer.ContivService) bool {
	for i := range svc.Ports {
		if svc.Ports[i].NodePort != 0 {
			return true
		}
		for j := range svc.Ports[i].Backends {
			if svc.Ports[i].Backends[j].HostNetwork {
				return true
			}
		}
	}
	return false
}

// claim records that e wants m.
func (r *Renderer) claim(e *serviceEntry, m *Mapping) {
	key := m.MappingKey
	w := r.winner[key]
	switch {
	case w == nil:
		r.winner[key] = e
		r.setDesired(key, m)
	case e.before(w):
		r.winner[key] = e
		r.addLoser(key, w, e)
		r.setDesired(key, m)
	default:
		r.addLoser(key, e, w)
	}
}

// release records that e no longer wants key; the oldest loser takes over.
func (r *Renderer) release(e *serviceEntry, key MappingKey) {
	if r.winner[key] != e {
		r.losers[key] = slices.DeleteFunc(r.losers[key], func(f *serviceEntry) bool { return f == e })
		if len(r.losers[key]) == 0 {
			delete(r.losers, key)
		}
		delete(r.reported, conflictPair{key, e.svc.ID})
		return
	}
	ls := r.losers[key]
	if len(ls) == 0 {
		delete(r.winner, key)
		r.setDesired(key, nil)
		return
	}
	next := ls[0]
	if len(ls) == 1 {
		delete(r.losers, key)
	} else {
		r.losers[key] = ls[1:]
	}
	delete(r.reported, conflictPair{key, next.svc.ID})
	r.winner[key] = next
	r.setDesired(key, next.mapping(key))
	r.log.Info("frontend conflict resolved", "frontend", key.String(), "service", next.svc.ID, "previous", e.svc.ID)
}

// addLoser records that loser claims key, which winner holds, and logs it
// once.
func (r *Renderer) addLoser(key MappingKey, loser, winner *serviceEntry) {
	ls := r.losers[key]
	i, _ := slices.BinarySearchFunc(ls, loser, func(a, b *serviceEntry) int {
		if a.before(b) {
			return -1
		}
		if b.before(a) {
			return 1
		}
		return 0
	})
	r.losers[key] = slices.Insert(ls, i, loser)
	p := conflictPair{key, loser.svc.ID}
	if _, ok := r.reported[p]; ok {
		return
	}
	r.reported[p] = struct{}{}
	if _, ok := r.quiet[p]; !ok {
		r.log.Warn("frontend claimed by two services: the oldest wins", "frontend", key.String(),
			"service", winner.svc.ID, "rejected", loser.svc.ID)
	}
}

// setDesired makes m (nil: none) the desired mapping for key.
func (r *Renderer) setDesired(key MappingKey, m *Mapping) {
	old := r.desired.Mappings[key]
	if identical(old, m) {
		if m != nil {
			r.desired.Mappings[key] = m
		}
		return
	}
	if m == nil {
		delete(r.desired.Mappings, key)
	} else {
		r.desired.Mappings[key] = m
	}
	r.dirtyMappings[key] = struct{}{}
	if len(r.failures) > 0 {
		delete(r.failures, ObjectID{Kind: ObjectMapping, Mapping: key})
	}
}

// identical tells whether two mappings (either may be nil) are equal in
// every field.
func identical(a, b *Mapping) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.MappingKey == b.MappingKey && a.TwiceNAT == b.TwiceNAT && a.Affinity == b.Affinity &&
		a.Tag == b.Tag && slices.Equal(a.Locals, b.Locals)
}

// UpdateInterface implements servicerenderer.Renderer.
func (r *Renderer) UpdateInterface(name string, role servicerenderer.InterfaceRole) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if role == 0 {
		delete(r.interfaces, name)
	} else {
		r.interfaces[name] = role
	}
	f := InterfaceFeatures(name, role, r.cfg)
	if r.desired.Interfaces[name] == f {
		return nil
	}
	if f == 0 {
		delete(r.desired.Interfaces, name)
	} else {
		r.desired.Interfaces[name] = f
	}
	r.dirtyInterfaces[name] = struct{}{}
	delete(r.failures, ObjectID{Kind: ObjectInterface, Interface: name})
	return nil
}

// UpdateLocalNode implements servicerenderer.Renderer: the services with
// NodePorts or host-network backends are rendered again.
func (r *Renderer) UpdateLocalNode(node servicerenderer.LocalNode) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := !slices.Equal(r.node.IPs, node.IPs)
	r.node = node
	if !changed {
		return nil
	}
	ids := slices.SortedFunc(maps.Keys(r.nodeDependent), func(a, b servicerenderer.ServiceID) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, id := range ids {
		r.setService(r.services[id].svc)
	}
	r.log.Debug("node addresses changed", "ips", node.IPs, "services", len(ids))
	return nil
}

// Resync implements servicerenderer.Renderer: the desired state is rebuilt
// from the snapshot, and the next Apply reconciles with VPP's real state.
func (r *Renderer) Resync(data *servicerenderer.ResyncData) error {
	if data == nil {
		return errors.New("nat44: nil resync data")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reset(data.Node, data.Interfaces)
	r.quiet, r.reported = r.reported, map[conflictPair]struct{}{}
	for _, svc := range data.Services {
		if svc != nil {
			r.setService(svc)
		}
	}
	for p := range r.quiet {
		if _, ok := r.reported[p]; !ok {
			r.log.Info("frontend conflict resolved", "frontend", p.key.String(), "previous", p.loser)
		}
	}
	r.quiet = nil
	r.log.Debug("resync rendered", "services", len(r.services), "mappings", len(r.desired.Mappings),
		"conflicts", len(r.losers))
	return nil
}

// Apply pushes the desired state to VPP. With full set (after a resync),
// or before the first full apply, it dumps VPP's state and issues only the
// differences; otherwise it issues the calls for what changed since the
// last apply. Calls VPP refuses as invalid are reported per object (see
// Failures) and not retried until the object changes or a full apply runs;
// the rest of the batch is still applied. Other failures make Apply return
// an error after applying what it can: the controller then heals with a
// full resync.
func (r *Renderer) Apply(ctx context.Context, full bool) error {
	start := time.Now()
	full = full || !r.synced
	var ops []Op
	r.mu.Lock()
	r.stats.Applies++
	if full {
		r.stats.FullApplies++
		r.stats.Calls++
		r.mu.Unlock()
		dumped, err := r.vpp.Dump(ctx)
		r.mu.Lock()
		if err != nil {
			r.stats.Transient++
			r.mu.Unlock()
			return fmt.Errorf("dump NAT44 state: %w", err)
		}
		normalize(dumped)
		r.applied = dumped
		r.synced = true
		clear(r.failures)
		r.dirtyMappings = emptied(r.dirtyMappings)
		r.dirtyInterfaces = emptied(r.dirtyInterfaces)
		ops = diff(r.desired, r.applied, r.owned, r.blocked)
	} else {
		ops = r.opsBuf[:0]
		for name := range r.dirtyInterfaces {
			ops = diffInterface(ops, name, r.desired.Interfaces[name], r.applied.Interfaces[name])
		}
		for key := range r.dirtyMappings {
			var b bool
			if ops, b = diffMapping(ops, r.desired.Mappings[key], r.applied.Mappings[key], r.owned); b {
				r.blocked(ObjectID{Kind: ObjectMapping, Mapping: key}, r.applied.Mappings[key].Tag)
			}
		}
		r.dirtyMappings = emptied(r.dirtyMappings)
		r.dirtyInterfaces = emptied(r.dirtyInterfaces)
		sortOps(ops)
	}
	r.mu.Unlock()
	err := r.run(ctx, ops, full, start)
	if cap(ops) <= 1024 {
		clear(ops)
		r.opsBuf = ops[:0]
	}
	return err
}

// emptied is m without entries. A map keeps the room it once needed, and
// iterating or clearing it costs that much: a big one is replaced, so that
// a small batch after a big one stays cheap.
func emptied[K comparable](m map[K]struct{}) map[K]struct{} {
	if len(m) > 64 {
		return make(map[K]struct{})
	}
	clear(m)
	return m
}

// blocked records that a foreign object holds what the agent wants; the
// caller holds mu.
func (r *Renderer) blocked(id ObjectID, tag string) {
	f := Failure{Object: id, Reason: fmt.Sprintf("held by a foreign object tagged %q", tag)}
	if id.Kind == ObjectMapping {
		if w := r.winner[id.Mapping]; w != nil {
			f.Service = w.svc.ID
		}
	}
	if _, ok := r.failures[id]; !ok {
		r.log.Warn("NAT44 object not applied", "object", id.String(), "service", f.Service, "reason", f.Reason)
	}
	r.failures[id] = f
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
func (r *Renderer) run(ctx context.Context, ops []Op, full bool, start time.Time) error {
	var b batch
	var failed map[ObjectID]struct{}
	for i := range ops {
		op := &ops[i]
		id := op.Object()
		if _, skip := failed[id]; skip {
			continue
		}
		if err := ctx.Err(); err != nil {
			b.transient += len(ops) - i
			if b.firstErr == nil {
				b.firstErr = err
			}
			break
		}
		err := r.call(ctx, op)
		if err != nil && op.Kind == OpSetInterface && op.NewFeatures == 0 && errors.Is(err, ErrNoInterface) {
			err = nil // the interface is gone, and its features with it
		}
		r.mu.Lock()
		b.calls++
		r.stats.Calls++
		if err == nil {
			r.applied.Apply(*op)
			b.count(op)
			r.mu.Unlock()
			continue
		}
		if failed == nil {
			failed = map[ObjectID]struct{}{}
		}
		failed[id] = struct{}{}
		if errors.Is(err, ErrInvalid) {
			b.invalid++
			r.stats.Invalid++
			f := Failure{Object: id, Op: op.Kind, Reason: err.Error()}
			if w := r.winner[id.Mapping]; id.Kind == ObjectMapping && w != nil {
				f.Service = w.svc.ID
			}
			r.failures[id] = f
			r.log.Warn("VPP refused a NAT44 call", "object", id.String(), "service", f.Service, "op", op.Kind.String(), "error", err)
		} else {
			b.transient++
			r.stats.Transient++
			if b.firstErr == nil {
				b.firstErr = fmt.Errorf("%s: %w", op, err)
			}
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	b.finish(&r.stats)
	r.mu.Unlock()
	level := slog.LevelInfo
	if !full && b.calls == 0 && b.transient == 0 {
		level = slog.LevelDebug
	}
	if r.log.Enabled(ctx, level) {
		r.log.Log(ctx, level, "NAT44 applied", "full", full, "mappingsAdded", b.added, "mappingsRemoved", b.removed,
			"mappingsUpdated", b.updated, "localsChanged", b.locals, "calls", b.calls, "invalid", b.invalid,
			"transient", b.transient, "duration", time.Since(start))
	}
	if b.transient > 0 {
		return fmt.Errorf("%d NAT44 calls failed: %w", b.transient, b.firstErr)
	}
	return nil
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
func (r *Renderer) call(ctx context.Context, op *Op) error {
	switch op.Kind {
	case OpSetGlobal:
		return r.vpp.SetGlobal(ctx, op.Global)
	case OpAddPool, OpDelPool:
		return r.vpp.AddDelPoolAddress(ctx, op.Pool, op.Kind == OpAddPool)
	case OpSetInterface:
		return r.vpp.SetInterfaceFeatures(ctx, op.Interface, op.OldFeatures, op.NewFeatures)
	case OpAddIdentity, OpDelIdentity:
		return r.vpp.AddDelIdentity(ctx, op.Identity, op.Kind == OpAddIdentity)
	case OpAddMapping, OpDelMapping:
		return r.vpp.AddDelMapping(ctx, op.Mapping, op.Kind == OpAddMapping)
	case OpAddLocal, OpDelLocal:
		return r.vpp.AddDelLBLocal(ctx, op.Mapping.MappingKey, op.Local, op.Kind == OpAddLocal)
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

// Desired is a copy of the desired state (its mappings are shared and must
// not be mutated).
func (r *Renderer) Desired() *State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.desired.Clone()
}

// Applied is a copy of what VPP holds as far as the renderer knows (its
// mappings are shared and must not be mutated).
func (r *Renderer) Applied() *State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.applied.Clone()
}

// Failures lists the objects not applied, sorted.
func (r *Renderer) Failures() []Failure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fs := slices.Collect(maps.Values(r.failures))
	slices.SortFunc(fs, func(a, b Failure) int { return compareObjects(a.Object, b.Object) })
	return fs
}

// Conflicts lists the frontends claimed by more than one service, sorted.
func (r *Renderer) Conflicts() []Conflict {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cs := make([]Conflict, 0, len(r.losers))
	for key, ls := range r.losers {
		c := Conflict{Key: key, Winner: r.winner[key].svc.ID}
		for _, e := range ls {
			c.Losers = append(c.Losers, e.svc.ID)
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Conflict) int { return compareMappingKeys(a.Key, b.Key) })
	return cs
}

// Stats returns the cumulative counters.
func (r *Renderer) Stats() Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.stats
}
