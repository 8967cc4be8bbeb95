package cnat

import (
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

var (
	_ servicerenderer.Renderer       = (*Renderer)(nil)
	_ servicerenderer.InterfaceLoser = (*Renderer)(nil)
)

// Params are what a Renderer needs.
type Params struct {
	Config Config
	VPP    VPP
	// Store keeps the node configuration applied to VPP across agent
	// restarts (VPP cannot read it back); nil keeps it in memory only (see
	// Renderer.Apply for what a fresh renderer then assumes).
	Store Store
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// Renderer is the cnat renderer: its Renderer methods record the desired
// state of one change (at a cost proportional to that change), and Apply
// pushes what changed to VPP (it is the controller's Applier). The
// Renderer methods (AddService, UpdateService, DeleteService,
// UpdateInterface, UpdateLocalNode, Resync) are its embedded
// reconcile.Front's, which takes the lock and calls the renderer's own.
//
// Every method but the introspection ones (Desired, Applied, DesiredNode,
// AppliedNode, Failures, Pending, PendingTables, Conflicts, Stats) must be
// called from one goroutine, the controller's loop; those may be called
// from any goroutine (see package reconcile for the
// lock contract: no lock is held while VPP is called).
type Renderer struct {
	// front holds the change methods (AddService, …, Resync): each
	// takes mu and calls the renderer's changes.
	front
	cfg   Config
	vpp   VPP
	store Store
	log   *slog.Logger
	// restarted is set by VPPRestarted, taken by the next Apply (both on
	// the controller's loop).
	restarted bool

	// mu guards the fields below against the introspection methods: the
	// loop goroutine, their only writer, reads them without it.
	mu       sync.Mutex
	node     servicerenderer.LocalNode
	services map[servicerenderer.ServiceID]*entry
	// frontends holds every key a service claims or the renderer's
	// translations in VPP occupy, their translations and the claims.
	frontends *reconcile.Table[Key, Translation]
	// ids are VPP's ids of the translations the dump of a full apply
	// read, for that apply only (nil otherwise).
	ids map[Key]uint32
	// extIPs counts the known services per external/LoadBalancer IP:
	// translations on them are the renderer's.
	extIPs     map[netip.Addr]int
	interfaces map[string]servicerenderer.InterfaceRole
	desired    *Node
	// applied is the node configuration VPP holds as far as the renderer
	// knows; nil when unknown (a fresh renderer: the first full Apply
	// decides).
	applied *Node
	// dirtyIfs are the interfaces whose node configuration changed since
	// the last apply.
	dirtyIfs map[string]struct{}
	synced   bool
	failures reconcile.Failures[ObjectID, Failure]
	// pending are the interfaces whose configuration waits for VPP to have
	// the interface.
	pending reconcile.Waits[string, struct{}]
	// pendingTables are the VRFs whose drop and verdict routes wait for
	// VPP to make the table.
	pendingTables reconcile.Waits[uint32, struct{}]
	// ifIndex is the sw_if_index each interface had when the renderer
	// configured it; unknown for configuration taken from the Store or
	// assumed (see InterfaceLost).
	ifIndex map[string]uint32
	// routeRefs counts the services wanting each verdict route (BuildRoutes);
	// verdicts are the verdict routes VPP holds as far as the renderer
	// knows (read back by every full apply); dirtyRoutes the routes whose
	// count started or stopped being 0 since the last apply.
	routeRefs   map[Route]int
	verdicts    map[Route]struct{}
	dirtyRoutes map[Route]struct{}
	stats       Stats
	// transBuf is a scratch buffer of the loop goroutine, reused from one
	// change to the next; nothing kept aliases it. runner and queue are
	// the state of its runs (apply.go), reused from one apply to the next.
	transBuf []Translation
	runner   runner
	queue    reconcile.Run[Op, ObjectID, uint32]
	// start is when the running apply started.
	start time.Time
}

// entry is one known service, its translations (claims), and its
// verdict routes, sorted.
type entry struct {
	reconcile.Claimant[Key, Translation]
	routes []Route
}

// frontend is one key: the services claiming it, the translation wanted
// there and the one VPP holds.
type frontend = reconcile.Frontend[Key, Translation]

// New validates the configuration and makes a renderer with no service.
func New(p Params) (*Renderer, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	if p.VPP == nil {
		return nil, errors.New("cnat: no VPP")
	}
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	r := &Renderer{cfg: p.Config, vpp: p.VPP, store: p.Store, log: log,
		ifIndex: map[string]uint32{}, verdicts: map[Route]struct{}{}}
	r.frontends = reconcile.NewTable(reconcile.Object[Key, Translation]{
		KeyOf:   func(t *Translation) Key { return t.Key },
		Compare: Key.Compare,
		Same:    (*Translation).Equal,
		Changed: func(k Key) { r.failures.Delete(ObjectID{Kind: ObjectTranslation, Key: k}) },
	}, log)
	// As NAT44's: answers are recorded once 1024 calls are in flight, so
	// that a first programming of 11 000 translations keeps its run's
	// bookkeeping (and the stream's queue) at that size. Results are the
	// same recorded sooner: a translation's calls are ordered, and an
	// interface's record each their own.
	r.queue.MaxInFlight = 1024
	r.front = reconcile.NewFront("cnat", &r.mu, reconcile.Changes{SetService: r.setService, DeleteService: r.deleteService,
		SetInterface: r.setInterface, SetNode: r.setNode, Reset: r.resync})
	r.reset(servicerenderer.LocalNode{}, nil, 0)
	return r, nil
}

// reset forgets every service; what VPP holds stays known. Room is made
// for services services.
func (r *Renderer) reset(node servicerenderer.LocalNode, interfaces map[string]servicerenderer.InterfaceRole, services int) {
	r.node = node
	r.services = make(map[servicerenderer.ServiceID]*entry, services)
	r.extIPs = map[netip.Addr]int{}
	r.frontends.Reset(services)
	r.routeRefs = map[Route]int{}
	r.dirtyRoutes = nil
	r.interfaces = maps.Clone(interfaces)
	if r.interfaces == nil {
		r.interfaces = map[string]servicerenderer.InterfaceRole{}
	}
	r.desired = BuildNode(r.cfg, r.interfaces)
	r.dirtyIfs = nil
	r.synced = false
}

// deleteService forgets svc.
func (r *Renderer) deleteService(svc *servicerenderer.ContivService) {
	r.removeService(svc.ID)
}

func (r *Renderer) removeService(id servicerenderer.ServiceID) {
	e := r.services[id]
	if e == nil {
		return
	}
	r.frontends.Release(&e.Claimant)
	r.setRoutes(e, nil)
	r.countExternal(e.Svc, -1)
	delete(r.services, id)
}

// setService renders svc, new or changed: its translations are matched by
// key with those it had.
func (r *Renderer) setService(svc *servicerenderer.ContivService) {
	e := r.services[svc.ID]
	if e != nil && !e.Svc.Created.Equal(svc.Created) {
		// Another incarnation: it may now lose or win keys.
		r.removeService(svc.ID)
		e = nil
	}
	trans := appendService(r.transBuf[:0], svc, r.node, &r.cfg)
	if e == nil {
		e = &entry{}
		r.services[svc.ID] = e
	} else {
		r.countExternal(e.Svc, -1)
	}
	r.countExternal(svc, 1)
	r.setRoutes(e, BuildRoutes(svc, &r.cfg))
	r.frontends.Set(&e.Claimant, svc, trans)
	clear(trans)
	r.transBuf = trans[:0]
}

// countExternal adds n to the count of each external IP of svc.
func (r *Renderer) countExternal(svc *servicerenderer.ContivService, n int) {
	for _, ip := range svc.ExternalIPs {
		ip = ip.Unmap()
		if r.extIPs[ip] += n; r.extIPs[ip] <= 0 {
			delete(r.extIPs, ip)
		}
	}
}

// setInterface gives an interface its role (0: none): every interface
// with a role gets the cnat features, a pod interface its SNAT tables.
func (r *Renderer) setInterface(name string, role servicerenderer.InterfaceRole) {
	if role == 0 {
		delete(r.interfaces, name)
		r.pending.Delete(name)
		delete(r.desired.Features, name)
		delete(r.desired.Tables, name)
	} else {
		r.interfaces[name] = role
		f, t := interfaceConfig(name, &r.cfg)
		r.desired.Features[name] = f
		if t != 0 {
			r.desired.Tables[name] = t
		}
	}
	r.markInterface(name)
}

func (r *Renderer) markInterface(name string) {
	if r.dirtyIfs == nil {
		r.dirtyIfs = map[string]struct{}{}
	}
	r.dirtyIfs[name] = struct{}{}
	r.failures.Delete(ObjectID{Kind: ObjectInterface, Interface: name})
}

// InterfaceLost implements servicerenderer.InterfaceLoser: VPP dropped the
// features and tables of the interface that had this name at index (it
// deleted the interface, or a new one took its name). The next Apply
// configures it again if it has a role. A loss reported after the
// renderer configured the name at another index is older than that
// configuration and changes nothing: forgetting it would enable the
// features twice (after a VPP restart, the full apply may configure a
// re-created interface before the loss of its predecessor is delivered).
func (r *Renderer) InterfaceLost(name string, index uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		return
	}
	if at, ok := r.ifIndex[name]; ok && at != index {
		return
	}
	delete(r.ifIndex, name)
	delete(r.applied.Features, name)
	delete(r.applied.Tables, name)
	r.markInterface(name)
}

// VPPRestarted tells the renderer that VPP restarted (the service
// processor calls it, on the controller's loop, in the resync a VPP
// restart asks for): VPP holds no cnat configuration any more, so the next
// Apply (which must then be full) configures everything again. Without it,
// a full Apply still notices a restart through the SNAT addresses VPP
// reports (see Apply).
func (r *Renderer) VPPRestarted() { r.restarted = true }

// forgetVPP makes the renderer know VPP holds nothing of it (VPPRestarted);
// the caller holds mu.
func (r *Renderer) forgetVPP() {
	r.frontends.Load(nil)
	r.applied = &Node{Tables: map[string]Tables{}, Features: map[string]Feature{}}
	clear(r.ifIndex)
	clear(r.verdicts)
	r.synced = false
	r.saveNode()
}

// setNode records this node's addresses: when this node's
// addresses change, every service is rendered again (NodePorts and
// is_real_ip depend on them).
func (r *Renderer) setNode(node servicerenderer.LocalNode) {
	changed := !slices.Equal(r.node.IPs, node.IPs)
	r.node = node
	if !changed {
		return
	}
	ids := slices.SortedFunc(maps.Keys(r.services), func(a, b servicerenderer.ServiceID) int {
		return compareIDs(a, b)
	})
	for _, id := range ids {
		r.setService(r.services[id].Svc)
	}
}

func compareIDs(a, b servicerenderer.ServiceID) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// resync replaces everything with a snapshot: the desired state is rebuilt
// from the snapshot; the next Apply is full.
func (r *Renderer) resync(data *servicerenderer.ResyncData) {
	r.reset(data.Node, data.Interfaces, len(data.Services))
	for _, svc := range data.Services {
		if svc != nil {
			r.setService(svc)
		}
	}
	r.frontends.EndReset()
}

// owned tells whether a translation VPP holds on k is the renderer's: k is
// claimed by a service, or its VIP is in a service CIDR, or it is one of
// this node's IPs on a port in the NodePort range, or an external IP of a
// known service. Anything else is foreign and never touched.
// ASSUMPTION: cnat has no tags (FACTS §6), so the key decides; a
// translation another program made on such a key is taken for the
// renderer's, and one left on the external IP of a service deleted while
// the agent was down is left in place.
func (r *Renderer) owned(k Key) bool {
	if fe := r.frontends.Get(k); fe != nil && fe.Winner() != nil {
		return true
	}
	if r.cfg.inServiceCIDR(k.IP) || r.extIPs[k.IP] > 0 {
		return true
	}
	return slices.Contains(r.node.IPs, k.IP) && k.Port >= r.cfg.NodePortMin && k.Port <= r.cfg.NodePortMax
}

// front is what the renderer embeds: its change methods.
type front = reconcile.Front
