package nat44

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/reconcile"
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
// pushes what changed to VPP (it is the controller's Applier). The
// Renderer methods (AddService, UpdateService, DeleteService,
// UpdateInterface, UpdateLocalNode, Resync) are its embedded
// reconcile.Front's, which takes the lock and calls the renderer's own.
//
// Everything the renderer knows about one external address:port/protocol
// (the services claiming it, the mapping wanted there, the mapping VPP
// holds, whether it waits for Apply) is one frontend, which a service's
// entry points to: a change of a service reaches its mappings' state with
// one map lookup, that of the service.
//
// Every method but the introspection ones (Desired, Applied, Failures,
// Pending, Conflicts, Stats) must be called from one goroutine, the controller's
// loop; the introspection methods may be called from any goroutine.
type Renderer struct {
	// front holds the change methods (AddService, …, Resync): each
	// takes mu and calls the renderer's changes.
	front
	cfg Config
	vpp VPP
	// pipeliner and aclVPP are vpp as a Pipeliner and an ACLVPP (nil when
	// it is not one): asked once, not at every apply (a type assertion
	// reads the runtime's interface tables, cold between two changes).
	pipeliner Pipeliner
	aclVPP    ACLVPP
	log       *slog.Logger
	owned     func(tag string) bool

	// mu guards the fields below against the introspection methods: the
	// loop goroutine, their only writer, reads them without it.
	mu   sync.RWMutex
	node servicerenderer.LocalNode
	// services holds every service's entry by ID; slotted places them
	// (entries.go).
	services      map[servicerenderer.ServiceID]*serviceEntry
	slotted       slotted
	nodeDependent map[servicerenderer.ServiceID]struct{}
	// frontends holds every address:port/protocol a service claims or VPP
	// holds a mapping on, its mappings and the claims on it.
	frontends  *reconcile.Table[MappingKey, Mapping]
	interfaces map[string]servicerenderer.InterfaceRole
	// desired and applied hold the state apart from the mappings (those
	// are in frontends); their Mappings maps stay empty.
	desired *State
	applied *State
	// synced is set once a full apply ran after the last Resync.
	synced bool
	// dirtyInterfaces are the interfaces whose features changed since the
	// last apply; nil when none did (as most applies find it).
	dirtyInterfaces map[string]struct{}
	// pending are the interfaces whose features (the value) wait for VPP
	// to have the interface.
	pending reconcile.Waits[string, Features]
	// pendingTables are the VRFs whose routes wait for VPP to make the
	// table (tables.go).
	pendingTables reconcile.Waits[uint32, struct{}]
	// holdSince is when an apply first held mapping operations for a
	// pending node interface (zero: no hold); holdOver is set once the
	// hold ran out; held counts the frontends held (hold.go).
	holdSince time.Time
	holdOver  bool
	held      int
	// ifIndex is the sw_if_index each interface with features had when
	// the renderer set them; unknown for features found in a dump.
	ifIndex map[string]uint32
	// extRefs counts, per external or LoadBalancer IP with source-NAT
	// objects (ExternalIPObjects), the frontends on it with a desired
	// mapping; dirtyExt are the IPs whose objects changed since the last
	// apply (nil when none did).
	extRefs  map[netip.Addr]int
	dirtyExt map[netip.Addr]struct{}
	// routeRefs counts, per verdict route (verdict.go), the services
	// wanting it; dirtyRoutes are the keys whose desired route changed
	// since the last apply (nil when none did).
	routeRefs   map[Route]int
	dirtyRoutes map[RouteKey]struct{}
	// sourceRules are the source-range ACL rules of each service with
	// some; aclDirty is set when they changed since the last apply;
	// aclApplied is the ACL VPP holds (nil: none), trusted while aclKnown
	// (sourceranges.go).
	sourceRules map[servicerenderer.ServiceID][]ACLRule
	aclDirty    bool
	aclApplied  *SourceACL
	aclKnown    bool
	// subsets are the frontends whose desired mapping leaves endpoints
	// out (subset.go), as last logged; kept over a Resync so that an
	// unchanged subset is not logged again.
	subsets map[MappingKey]Subset
	// cuts are the subsets of the mappings each service claims that leave
	// endpoints out (Mapping.cut), by service (its entry's cut is set);
	// rare, and so kept apart from the mappings, which a change reads.
	cuts     map[*reconcile.Claimant[MappingKey, Mapping]]map[MappingKey]Subset
	failures reconcile.Failures[ObjectID, Failure]
	stats    Stats
	// stepsBuf, opsBuf, mappingBuf and changedBuf are scratch buffers of
	// the loop goroutine, reused from one change to the next; nothing kept
	// or handed out aliases them.
	stepsBuf   []step
	opsBuf     []Op
	mappingBuf []Mapping
	changedBuf []MappingKey
	// routesBuf and ipsBuf are setRoutes' room for two services'
	// verdict routes (verdict.go).
	routesBuf []Route
	ipsBuf    []netip.Addr
	// runner and queue are the state of the loop goroutine's runs
	// (apply.go), reused from one apply to the next.
	runner runner
	queue  reconcile.Run[step, runKey, struct{}]
	// start is when the running apply started; heldBuf its frontends
	// held (hold.go).
	start   time.Time
	heldBuf []*frontendState
}

// frontendState is one external address:port/protocol: the services
// claiming it, the mapping wanted there and the one VPP holds.
type frontendState = reconcile.Frontend[MappingKey, Mapping]

// serviceEntry is one service and the mappings it claims: 64 bytes, one
// cache line (in slotted, one aligned line), which a change of the
// service reads. What else the
// renderer derived from the service (its verdict routes, the affinity of
// its tag) is derived again from the service as last set (Svc) when
// needed: that service is in the caches when the next arrives (the
// processor copies it as the new one's template), the renderer's own
// copies would not be.
type serviceEntry struct {
	reconcile.Claimant[MappingKey, Mapping]
	// mappingTag is the tag of its mappings, made for Svc's affinity.
	mappingTag string
	// nodeDependent is set when its mappings depend on this node's
	// addresses (it is then in Renderer.nodeDependent).
	nodeDependent bool
	// cut is set when some of its mappings leave endpoints out: Renderer.cuts
	// holds their subsets.
	cut bool
	_   [14]byte // to 64 bytes: slotted's entries keep to a line each
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
		cfg:     p.Config,
		vpp:     p.VPP,
		log:     log,
		owned:   p.Config.Owned,
		subsets: map[MappingKey]Subset{},
		ifIndex: map[string]uint32{},
		applied: NewState(),
	}
	r.pipeliner, _ = p.VPP.(Pipeliner)
	r.aclVPP, _ = p.VPP.(ACLVPP)
	r.frontends = reconcile.NewTable(reconcile.Object[MappingKey, Mapping]{
		KeyOf:   func(m *Mapping) MappingKey { return m.MappingKey },
		Compare: compareMappingKeys,
		Same:    identical,
		Desire:  r.desire,
		Changed: func(k MappingKey) { r.failures.Delete(ObjectID{Kind: ObjectMapping, Mapping: k}) },
	}, log)
	// Answers are recorded once 1024 calls are in flight, four times
	// plugins/vpp's window: a full apply of 100 000 calls keeps its run's
	// bookkeeping at that size. Every NAT44 object is ordered, so no
	// result changes by being recorded sooner.
	r.queue.MaxInFlight = 1024
	r.front = reconcile.NewFront("nat44", &r.mu, reconcile.Changes{SetService: r.setService, DeleteService: r.deleteService,
		SetInterface: r.setInterface, SetNode: r.setNode, Reset: r.resync})
	r.reset(servicerenderer.LocalNode{}, nil, 0)
	return r, nil
}

// reset forgets every service and makes room for services services (a
// resync's maps then do not grow one copy at a time); the caller holds mu.
func (r *Renderer) reset(node servicerenderer.LocalNode, interfaces map[string]servicerenderer.InterfaceRole, services int) {
	r.node = node
	r.services = make(map[servicerenderer.ServiceID]*serviceEntry, services)
	r.slotted = slotted{}
	r.cuts = map[*reconcile.Claimant[MappingKey, Mapping]]map[MappingKey]Subset{}
	r.nodeDependent = map[servicerenderer.ServiceID]struct{}{}
	// What VPP holds stays known; claims and desired mappings go.
	r.frontends.Reset(services)
	r.interfaces = maps.Clone(interfaces)
	if r.interfaces == nil {
		r.interfaces = map[string]servicerenderer.InterfaceRole{}
	}
	r.desired = BuildGlobal(r.cfg, r.interfaces)
	r.synced = false
	r.dirtyInterfaces = nil
	r.extRefs = map[netip.Addr]int{}
	r.dirtyExt = nil
	// A service has a verdict route per cluster IP only where reject
	// routes are made and with a service CIDR (BuildRoutes).
	routes := 0
	if servicerenderer.Rejects(r.cfg.MainVRF, r.cfg.RejectAnyTable) && r.cfg.ServiceCIDR.IsValid() {
		routes = services
		r.desired.Routes = withRoom(r.desired.Routes, routes)
	}
	r.routeRefs = make(map[Route]int, routes)
	r.dirtyRoutes = nil
	r.sourceRules = map[servicerenderer.ServiceID][]ACLRule{}
	r.aclDirty = true
}

// withRoom is m copied into a map with room for n more keys.
func withRoom[K comparable, V any](m map[K]V, n int) map[K]V {
	out := make(map[K]V, len(m)+n)
	maps.Copy(out, m)
	return out
}

// deleteService forgets svc.
func (r *Renderer) deleteService(svc *servicerenderer.ContivService) {
	e := r.entry(svc)
	if e == nil {
		r.log.Debug("delete of unknown service ignored", "service", svc.ID)
		return
	}
	n := e.Len()
	r.frontends.Release(&e.Claimant)
	r.setRoutes(e.Svc, nil)
	r.setSourceRules(svc.ID, nil)
	r.dropCuts(e)
	r.dropEntry(svc, e)
	delete(r.nodeDependent, svc.ID)
	if r.debug() {
		r.log.Debug("service removed", "service", svc.ID, "mappings", n)
	}
}

// setService renders svc, new or changed; the caller holds mu. The
// service's mappings are matched by key with those it had: a frontend it
// keeps is reached through its old claim, without a lookup.
func (r *Renderer) setService(svc *servicerenderer.ContivService) {
	e := r.entry(svc)
	// prev is the service as last rendered into e (nil: none).
	var prev *servicerenderer.ContivService
	if e != nil {
		prev = e.Svc
		// Its mappings' subsets are those of the mappings built below;
		// none of its old mappings is set desired from here on.
		r.dropCuts(e)
	}
	var tag string
	if prev != nil && prev.AffinityTimeout == svc.AffinityTimeout {
		tag = e.mappingTag
	} else {
		tag = AffinityTag(r.cfg.TagPrefix, svc.ID, svc.AffinityTimeout)
	}
	if prev != nil && !prev.Created.Equal(svc.Created) {
		// Another incarnation of the service: it may now lose or win frontends.
		r.frontends.Release(&e.Claimant)
		r.setRoutes(prev, nil)
		prev = nil
		*e = serviceEntry{nodeDependent: e.nodeDependent}
	}
	if e == nil {
		e = r.newEntry(svc)
	}
	e.mappingTag = tag
	ms := appendService(r.mappingBuf[:0], svc, r.node, &r.cfg, tag, func(k MappingKey, sub Subset) {
		if !e.cut {
			e.cut = true
			r.cuts[&e.Claimant] = map[MappingKey]Subset{}
		}
		r.cuts[&e.Claimant][k] = sub
	})
	r.frontends.Set(&e.Claimant, svc, ms)
	clear(ms)
	r.mappingBuf = ms[:0]
	r.setRoutes(prev, svc)
	r.setSourceRules(svc.ID, SourceRangeRules(svc))
	if dep := dependsOnNode(svc); dep != e.nodeDependent {
		e.nodeDependent = dep
		if dep {
			r.nodeDependent[svc.ID] = struct{}{}
		} else {
			delete(r.nodeDependent, svc.ID)
		}
	}
	if r.debug() {
		r.log.Debug("service rendered", "service", svc.ID, "mappings", e.Len())
	}
}

// dropCuts forgets the subsets of e's mappings.
func (r *Renderer) dropCuts(e *serviceEntry) {
	if e.cut {
		delete(r.cuts, &e.Claimant)
		e.cut = false
	}
}

// debug tells whether debug logs are on: per-object debug lines are built
// only then.
func (r *Renderer) debug() bool { return r.log.Enabled(context.Background(), slog.LevelDebug) }

// dependsOnNode tells whether a service's mappings depend on this node's
// addresses: NodePorts (health-check ones too), and host-network backends
// that may be this node's; its verdict routes, when it has external IPs
// (one may be this node's).
func dependsOnNode(svc *servicerenderer.ContivService) bool {
	if svc.HealthCheckNodePort != 0 || len(svc.ExternalIPs) > 0 {
		return true
	}
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

// desire is told of each mapping set desired on fe (nil: none), before
// it is: external IPs' objects are counted, subsets logged.
func (r *Renderer) desire(fe *frontendState, m *Mapping) {
	if old := fe.Desired; old != nil && old.external {
		r.extRef(old.IP.Addr(), -1)
	}
	if m != nil && m.external {
		r.extRef(m.IP.Addr(), 1)
	}
	r.noteSubset(fe, m)
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

// setInterface gives an interface its role (0: none).
func (r *Renderer) setInterface(name string, role servicerenderer.InterfaceRole) {
	if role == 0 {
		delete(r.interfaces, name)
	} else {
		r.interfaces[name] = role
	}
	f := InterfaceFeatures(name, role, r.cfg)
	if r.desired.Interfaces[name] == f {
		if r.pending.Has(name) {
			// The interface may exist now: the next Apply tries again.
			r.markInterface(name)
		}
		return
	}
	if f == 0 {
		delete(r.desired.Interfaces, name)
		r.pending.Delete(name)
	} else {
		r.desired.Interfaces[name] = f
	}
	r.markInterface(name)
	r.failures.Delete(ObjectID{Kind: ObjectInterface, Interface: name})
}

// InterfaceLost implements servicerenderer.InterfaceLoser: VPP dropped the
// NAT44 features of the interface that had this name at index (it deleted
// the interface, or a new one took its name). The applied state forgets
// them, and the next Apply adds them again: pending until VPP has the
// interface. A loss reported after the renderer set the features of the
// name at another index is older news and changes nothing.
func (r *Renderer) InterfaceLost(name string, index uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.applied.Interfaces[name]; !ok {
		return
	}
	if at, ok := r.ifIndex[name]; ok && at != index {
		return
	}
	delete(r.ifIndex, name)
	delete(r.applied.Interfaces, name)
	if _, want := r.desired.Interfaces[name]; want {
		r.markInterface(name)
	}
}

// markInterface queues an interface for the next Apply; the caller holds mu.
func (r *Renderer) markInterface(name string) {
	if r.dirtyInterfaces == nil {
		r.dirtyInterfaces = map[string]struct{}{}
	}
	r.dirtyInterfaces[name] = struct{}{}
}

// setNode records this node's addresses: the services with
// NodePorts or host-network backends are rendered again.
func (r *Renderer) setNode(node servicerenderer.LocalNode) {
	changed := !slices.Equal(r.node.IPs, node.IPs)
	renamed := node.Name != r.node.Name
	r.node = node
	if !changed && !renamed {
		return
	}
	byID := func(a, b servicerenderer.ServiceID) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	ids := slices.SortedFunc(maps.Keys(r.nodeDependent), byID)
	if renamed {
		// Subsets are chosen by the node's name: every service again.
		ids = slices.SortedFunc(maps.Keys(r.services), byID)
	}
	for _, id := range ids {
		r.setService(r.services[id].Svc)
	}
	r.log.Debug("node addresses changed", "ips", node.IPs, "services", len(ids))
}

// resync replaces everything with a snapshot: the desired state is rebuilt
// from the snapshot, and the next Apply reconciles with VPP's real state.
func (r *Renderer) resync(data *servicerenderer.ResyncData) {
	r.reset(data.Node, data.Interfaces, len(data.Services))
	for _, svc := range data.Services {
		if svc != nil {
			r.setService(svc)
		}
	}
	r.frontends.EndReset()
	for k := range r.subsets {
		if fe := r.frontends.Get(k); fe == nil || fe.Desired == nil || !fe.Desired.cut {
			r.noteSubset(&frontendState{Key: k}, nil)
		}
	}
	if r.debug() {
		mappings, conflicts := 0, 0
		for _, fe := range r.frontends.Frontends() {
			if fe.Desired != nil {
				mappings++
			}
			if fe.Contested() {
				conflicts++
			}
		}
		r.log.Debug("resync rendered", "services", len(r.services), "mappings", mappings, "conflicts", conflicts)
	}
}

// Desired is a copy of the desired state (its mappings are shared and must
// not be mutated).
func (r *Renderer) Desired() *State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return withMappings(r.desired, r.frontends.Frontends(), func(fe *frontendState) *Mapping { return fe.Desired })
}

// Applied is a copy of what VPP holds as far as the renderer knows (its
// mappings are shared and must not be mutated).
func (r *Renderer) Applied() *State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return withMappings(r.applied, r.frontends.Frontends(), func(fe *frontendState) *Mapping { return fe.Applied })
}

// withMappings is a copy of base with the frontends' mappings (desired or
// applied, as pick says) filled in.
func withMappings(base *State, frontends map[MappingKey]*frontendState, pick func(*frontendState) *Mapping) *State {
	s := base.Clone()
	for k, fe := range frontends {
		if m := pick(fe); m != nil {
			s.Mappings[k] = m
		}
	}
	return s
}

// Failures lists the objects not applied, sorted.
func (r *Renderer) Failures() []Failure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.failures.Sorted(func(a, b Failure) int { return compareObjects(a.Object, b.Object) })
}

// Conflicts lists the frontends claimed by more than one service, sorted.
func (r *Renderer) Conflicts() []Conflict {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.frontends.Conflicts()
}

// Stats returns the cumulative counters.
func (r *Renderer) Stats() Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.stats
}

// front is what the renderer embeds: its change methods.
type front = reconcile.Front
