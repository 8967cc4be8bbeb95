package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// ThisNode is what the processor needs from NodeSync about this node.
type ThisNode interface {
	// NodeName is this node's Kubernetes name.
	NodeName() string
	// NodeID is this node's cluster-wide ID; 0 until it is allocated.
	NodeID() uint32
	// NodeIPs are this node's own addresses: its VPP and management IPs.
	NodeIPs() []netip.Addr
}

// PodSubnets is what the processor needs from IPAM.
type PodSubnets interface {
	// PodSubnetThisNode is the pod subnet of this node.
	PodSubnetThisNode() netip.Prefix
	// PodSubnetAllNodes is the pod range of the whole cluster.
	PodSubnetAllNodes() netip.Prefix
}

// InterfaceLookup finds the VPP interface of a local pod by the tag the CNI
// gave it. The VPP layer implements it; when a pod's interface appears or
// changes after the pod, it queues a PodInterfaceEvent.
type InterfaceLookup interface {
	// InterfaceByTag returns the name of the interface tagged tag; false
	// when there is none (yet).
	InterfaceByTag(tag string) (ifName string, ok bool)
}

// Config is the part of the agent's configuration the processor uses.
type Config struct {
	// MainInterface is the main NIC: a frontend, and a backend too when
	// there is no overlay.
	MainInterface string
	// OtherInterfaces are further NICs: frontends.
	OtherInterfaces []string
	// HostInterconnect is the interface to the host stack: frontend and backend.
	HostInterconnect string
	// VXLANBVI is the BVI of the VXLAN overlay: frontend and backend. Empty
	// when there is no overlay.
	VXLANBVI string
	// PodInterfaceTag gives the tag of a pod's interface; nil means
	// "<namespace>/<name>", the CNI's default.
	PodInterfaceTag func(namespace, name string) string
	// SourceRangesEnforced is set when the renderer enforces
	// loadBalancerSourceRanges (NAT44: an input ACL); otherwise each
	// service with some is reported as ReasonSourceRangesNotEnforced.
	SourceRangesEnforced bool
	// SourceRangesNotEnforced, when set with SourceRangesEnforced, tells
	// why the renderer cannot enforce them now ("": it does), e.g. VPP
	// lacks its ACL plugin: each service with some is then reported with
	// that reason. It is asked at every derivation of a service; a resync
	// after its answer changed reports every service anew.
	SourceRangesNotEnforced func() string
	// ProxyHealthPort is the port of this node's proxy health endpoint
	// (kube-proxy's :10256), 0 when there is none to bring through VPP:
	// every resync hands the renderers, after the services, the
	// pseudo-service ProxyHealthID (ProxyHealthService).
	ProxyHealthPort uint16
}

// Params are the processor's dependencies.
type Params struct {
	// Logger receives the processor's logs; nil discards them.
	Logger *slog.Logger
	// Renderers all receive the same calls, in this order.
	Renderers []sr.Renderer
	// Node gives this node's name, ID and own addresses (NodeSync).
	Node ThisNode
	// Subnets gives the pod subnets (IPAM).
	Subnets PodSubnets
	// Interfaces finds local pods' VPP interfaces.
	Interfaces InterfaceLookup
	// Config names the interfaces and the pod interface tag.
	Config Config
}

// PodInterfaceEvent tells that the VPP interface of a pod of this node
// appeared, changed or disappeared; the processor looks it up again.
type PodInterfaceEvent struct {
	Namespace, Name string
}

// EventName implements controller.Event.
func (e *PodInterfaceEvent) EventName() string { return "pod-interface" }

// InterfaceEvent tells that VPP's interface Name appeared, changed or
// went: renderers are told its role again, so that what waits for the
// interface (NAT44 features pending on it) is applied now. Lost says that
// what was configured on it is gone (VPP deleted it, or another interface
// took its name): renderers that can (servicerenderer.InterfaceLoser)
// forget it first, to configure it again, unless they configured the name
// at another index since (LostIndex is the lost interface's sw_if_index).
// Send it before the PodInterfaceEvents of the same change: a pod without
// its interface loses its role, and renderers still holding the lost
// configuration would remove it from whatever interface has the name by
// the time they apply.
type InterfaceEvent struct {
	Name      string
	Lost      bool
	LostIndex uint32
}

// EventName implements controller.Event.
func (e *InterfaceEvent) EventName() string { return "interface" }

// Errors callers branch on.
var (
	// ErrMissingDependency is returned by New when Params lacks a dependency.
	ErrMissingDependency = errors.New("missing dependency")
	// ErrNoSnapshot is returned by Resync for an event without a State;
	// the processor's state is left as it was.
	ErrNoSnapshot = errors.New("resync without a snapshot")
)

// Processor is the service processor: a controller handler that keeps
// indexes of Services, EndpointSlices and this node's Pods, derives one
// ContivService per service and hands renderers what changed.
//
// Update and Resync run on the controller's goroutine; Services, Skipped,
// SkipCounts and Interfaces may be called from any goroutine.
type Processor struct {
	log       *slog.Logger
	renderers []sr.Renderer
	node      ThisNode
	subnets   PodSubnets
	ifaces    InterfaceLookup
	tag       func(namespace, name string) string
	static    map[string]sr.InterfaceRole
	// rangesEnforced and rangesWhy are Config.SourceRangesEnforced and
	// Config.SourceRangesNotEnforced.
	rangesEnforced bool
	rangesWhy      func() string
	// proxyHealth is Config.ProxyHealthPort's pseudo-service; nil without.
	proxyHealth *sr.ContivService

	// name is this node's name, read at New and at every resync; the
	// controller's goroutine alone reads and writes it.
	name string

	mu       sync.RWMutex
	view     nodeView
	services map[sr.ServiceID]*entry
	// slices tells where an EndpointSlice is: a change of a slice reaches
	// everything it touches with this one lookup.
	slices map[kubestate.Key]sliceRef
	// hostNet holds the services with host-network endpoints: their
	// locality depends on this node's own addresses.
	hostNet map[sr.ServiceID]struct{}
	// hinted holds the services with topology hints: their backends depend
	// on this node's zone.
	hinted map[sr.ServiceID]struct{}
	// pods are this node's pods.
	pods map[kubestate.Key]localPod
	// users maps a local pod to the services that have it as a backend.
	users map[kubestate.Key]map[sr.ServiceID]struct{}
	// ifPods maps an interface to the local pods on it.
	ifPods map[string][]kubestate.Key
	// roles is every interface with a role, as the renderers know it.
	roles map[string]sr.InterfaceRole
	// errs collects the renderer errors of the event being applied.
	errs []error
	// builds counts services derived (tests check what a change touches).
	builds int
	// scratch is build's buffer, cleared after every use.
	scratch []candidate
}

// entry is the state of one service: its inputs and what was derived.
type entry struct {
	// id holds the strings of the Service, when there is one, as the ID of
	// its output does: reading one brings the other into the cache.
	id  sr.ServiceID
	svc *kubestate.Service
	// base is derived from svc alone, when svc changes; once a derivation
	// from it gave an output, base.out is that output (see base).
	base base
	// slices are the service's EndpointSlices, sorted by name.
	slices []*kubestate.EndpointSlice
	derived
}

// sliceRef is where an EndpointSlice is: in owner.slices[i], owner being
// the entry of the service the slice names.
type sliceRef struct {
	owner *entry
	i     int
}

// insertSlice puts slice s, stored under k, in e's slices.
func (p *Processor) insertSlice(e *entry, k kubestate.Key, s *kubestate.EndpointSlice) {
	i, _ := slices.BinarySearchFunc(e.slices, s.Name, sliceByName)
	e.slices = slices.Insert(e.slices, i, s)
	p.slices[k] = sliceRef{owner: e, i: i}
	p.reindex(e, i+1)
}

// removeSlice takes the slice ref points to out of its owner's slices.
func (p *Processor) removeSlice(k kubestate.Key, ref sliceRef) {
	e := ref.owner
	e.slices = slices.Delete(e.slices, ref.i, ref.i+1)
	delete(p.slices, k)
	p.reindex(e, ref.i)
}

// reindex records the places of e's slices from the i-th on.
func (p *Processor) reindex(e *entry, i int) {
	for ; i < len(e.slices); i++ {
		p.slices[e.slices[i].Key()] = sliceRef{owner: e, i: i}
	}
}

// localPod is a pod of this node.
type localPod struct {
	ifName  string // "" while the pod has no known interface
	hostNet bool
}

var _ controller.Handler = (*Processor)(nil)

// New returns a processor with empty state; the controller's first resync
// fills it.
func New(p Params) (*Processor, error) {
	var missing []string
	if p.Node == nil {
		missing = append(missing, "Node")
	}
	if p.Subnets == nil {
		missing = append(missing, "Subnets")
	}
	if p.Interfaces == nil {
		missing = append(missing, "Interfaces")
	}
	for i, r := range p.Renderers {
		if r == nil {
			missing = append(missing, "Renderers["+strconv.Itoa(i)+"]")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("service processor: %v: %w", missing, ErrMissingDependency)
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tag := p.Config.PodInterfaceTag
	if tag == nil {
		tag = func(ns, name string) string { return ns + "/" + name }
	}
	pr := &Processor{
		log:       log,
		renderers: slices.Clone(p.Renderers),
		node:      p.Node,
		subnets:   p.Subnets,
		ifaces:    p.Interfaces,
		tag:       tag,
		static:    staticRoles(p.Config),
		name:      p.Node.NodeName(),

		rangesEnforced: p.Config.SourceRangesEnforced,
		rangesWhy:      p.Config.SourceRangesNotEnforced,
	}
	if port := p.Config.ProxyHealthPort; port != 0 {
		pr.proxyHealth = ProxyHealthService(port)
	}
	pr.reset(0)
	return pr, nil
}

// staticRoles are the roles of the configured interfaces.
func staticRoles(c Config) map[string]sr.InterfaceRole {
	const both = sr.RoleFrontend | sr.RoleBackend
	m := map[string]sr.InterfaceRole{}
	add := func(name string, r sr.InterfaceRole) {
		if name != "" {
			m[name] |= r
		}
	}
	add(c.VXLANBVI, both)
	if c.VXLANBVI == "" {
		add(c.MainInterface, both)
	} else {
		add(c.MainInterface, sr.RoleFrontend)
	}
	for _, n := range c.OtherInterfaces {
		add(n, sr.RoleFrontend)
	}
	add(c.HostInterconnect, both)
	return m
}

func (p *Processor) reset(n int) {
	p.services = make(map[sr.ServiceID]*entry, n)
	p.slices = make(map[kubestate.Key]sliceRef, n)
	p.hostNet = map[sr.ServiceID]struct{}{}
	p.hinted = map[sr.ServiceID]struct{}{}
	p.pods = map[kubestate.Key]localPod{}
	p.users = map[kubestate.Key]map[sr.ServiceID]struct{}{}
	p.ifPods = map[string][]kubestate.Key{}
	p.roles = maps.Clone(p.static)
}

// Name implements controller.Handler.
func (p *Processor) Name() string { return "service" }

// HandlesEvent implements controller.Handler: Services, EndpointSlices,
// this node's Pods, this node's Node (its zone), this node's NodeUpdates
// and PodInterfaceEvents. Pods of other nodes and other nodes' updates are
// turned away here, cheaply.
func (p *Processor) HandlesEvent(ev controller.Event) bool {
	switch e := ev.(type) {
	case *controller.ResyncEvent, *PodInterfaceEvent, *InterfaceEvent:
		return true
	case *controller.ChangeEvent:
		switch e.Key.Resource {
		case kubestate.ResService, kubestate.ResEndpointSlice:
			return true
		case kubestate.ResNode:
			return e.Key.Name == p.name
		case kubestate.ResPod:
			if _, known := p.pods[podID(e.Key)]; known && (e.New != nil || e.Key.Node == p.name) {
				return true
			}
			pod, ok := e.New.(*kubestate.Pod)
			return ok && pod.NodeName == p.name
		}
	case *controller.NodeUpdate:
		return e.Name == p.name
	}
	return false
}

// Resync implements controller.Handler: it rebuilds everything from the
// snapshot, deriving each service once, and hands every renderer the full
// state.
func (p *Processor) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	if ev.State == nil {
		return fmt.Errorf("service processor: %s: %w", ev.EventName(), ErrNoSnapshot)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.services
	p.name = p.node.NodeName()
	p.view = p.readNode()
	p.reset(len(ev.State.Objects) / 2)
	p.index(ev.State.Objects)
	ids := slices.SortedFunc(maps.Keys(p.services), compareIDs)
	out := make([]*sr.ContivService, 0, len(ids))
	for _, id := range ids {
		e := p.services[id]
		if e.svc == nil {
			continue
		}
		e.base = p.deriveBase(e.svc)
		e.derived = derive(&e.base, e.slices, &p.view, &p.scratch)
		if e.out != nil {
			e.base.out = e.out
		}
		p.builds++
		if e.hostNet {
			p.hostNet[id] = struct{}{}
		}
		if e.hinted {
			p.hinted[id] = struct{}{}
		}
		for _, k := range e.pods {
			p.addUser(k, id)
		}
		var was []Skip
		if o := old[id]; o != nil {
			was = o.skips
		}
		p.logSkips(was, e.skips)
		if e.out != nil {
			out = append(out, e.out)
		}
	}
	for name := range p.ifPods {
		p.roles[name] = p.role(name)
	}
	data := &sr.ResyncData{Services: out, Interfaces: maps.Clone(p.roles), Node: p.view.localNode()}
	for i, r := range p.renderers {
		if err := r.Resync(data); err != nil {
			p.errs = append(p.errs, fmt.Errorf("renderer %d: resync: %w", i, err))
		}
	}
	if p.proxyHealth != nil {
		for i, r := range p.renderers {
			if err := r.AddService(p.proxyHealth); err != nil {
				p.errs = append(p.errs, fmt.Errorf("renderer %d: %s: %w", i, ProxyHealthID, err))
			}
		}
	}
	p.log.Info("services resynced", "kind", ev.Kind.String(), "services", len(out), "slices", len(p.slices), "localPods", len(p.pods))
	return p.flush()
}

// index takes the snapshot's objects into the indexes.
func (p *Processor) index(objs map[kubestate.Key]kubestate.Object) {
	for k, o := range objs {
		switch k.Resource {
		case kubestate.ResService:
			if s, ok := as[*kubestate.Service](p, k, o); ok && s != nil {
				id := sr.ServiceID{Namespace: s.Namespace, Name: s.Name}
				e := p.entry(id)
				e.id, e.svc = id, s
			}
		case kubestate.ResEndpointSlice:
			if s, ok := as[*kubestate.EndpointSlice](p, k, o); ok && s != nil && s.ServiceName != "" {
				e := p.entry(sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName})
				e.slices = append(e.slices, s)
			}
		case kubestate.ResNode:
			if n, ok := as[*kubestate.Node](p, k, o); ok && n != nil && n.Name == p.name {
				p.view.zone = n.Zone
			}
		case kubestate.ResPod:
			if pod, ok := as[*kubestate.Pod](p, k, o); ok && pod != nil && pod.NodeName == p.name {
				k := podID(k)
				lp := p.lookup(k, pod.HostNetwork)
				p.pods[k] = lp
				if lp.ifName != "" {
					p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
				}
			}
		}
	}
	for _, e := range p.services {
		slices.SortFunc(e.slices, compareSlices)
		p.reindex(e, 0)
	}
}

// as returns o as the model k names (nil for nil); false after logging
// when o is another model or stored under another key, which the codec
// never produces: the event is then ignored rather than taken for a delete.
func as[T kubestate.Object](p *Processor, k kubestate.Key, o kubestate.Object) (T, bool) {
	var zero T
	if o == nil {
		return zero, true
	}
	t, ok := o.(T)
	if !ok || o.Key() != k {
		p.log.Error("object does not match its key: ignored", "key", k.String(), "object", o.Key().String())
		return zero, false
	}
	return t, true
}

// Update implements controller.Handler.
func (p *Processor) Update(_ context.Context, ev controller.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *controller.ChangeEvent:
		switch e.Key.Resource {
		case kubestate.ResService:
			if s, ok := as[*kubestate.Service](p, e.Key, e.New); ok {
				id := serviceID(e.Key)
				if s != nil {
					id = sr.ServiceID{Namespace: s.Namespace, Name: s.Name}
				}
				p.serviceChanged(id, s)
			}
		case kubestate.ResEndpointSlice:
			if s, ok := as[*kubestate.EndpointSlice](p, e.Key, e.New); ok {
				p.sliceChanged(e.Key, s)
			}
		case kubestate.ResPod:
			// A pod's key holds its node: the delete of another node's
			// key (a pod that moved here) says nothing of this node's.
			if pod, ok := as[*kubestate.Pod](p, e.Key, e.New); ok && (pod != nil || e.Key.Node == p.name) {
				p.podChanged(podID(e.Key), pod)
			}
		case kubestate.ResNode:
			if n, ok := as[*kubestate.Node](p, e.Key, e.New); ok && e.Key.Name == p.name {
				p.zoneChanged(n)
			}
		}
	case *controller.NodeUpdate:
		p.nodeChanged(e.Name)
	case *PodInterfaceEvent:
		k := kubestate.Key{Resource: kubestate.ResPod, Namespace: e.Namespace, Name: e.Name}
		if lp, ok := p.pods[k]; ok && !lp.hostNet {
			p.setPod(k, p.lookup(k, false))
		}
	case *InterfaceEvent:
		// What VPP lost is forgotten whether or not the interface has a
		// role now: a pod's role may be gone for the moment (its
		// interface was looked up while VPP re-created it) and come back.
		for _, rd := range p.renderers {
			if l, ok := rd.(sr.InterfaceLoser); ok && e.Lost {
				l.InterfaceLost(e.Name, e.LostIndex)
			}
		}
		if r, ok := p.roles[e.Name]; ok {
			for i, rd := range p.renderers {
				if err := rd.UpdateInterface(e.Name, r); err != nil {
					p.errs = append(p.errs, fmt.Errorf("renderer %d: interface %s: %w", i, e.Name, err))
				}
			}
		}
	}
	return p.flush()
}

func (p *Processor) flush() error {
	if len(p.errs) == 0 {
		return nil
	}
	err := errors.Join(p.errs...)
	p.errs = nil
	return fmt.Errorf("service processor: %w", err)
}

// entry returns the entry of id, creating it.
func (p *Processor) entry(id sr.ServiceID) *entry {
	e := p.services[id]
	if e == nil {
		e = &entry{id: id}
		p.services[id] = e
	}
	return e
}

func (p *Processor) serviceChanged(id sr.ServiceID, s *kubestate.Service) {
	e := p.services[id]
	if e == nil {
		if s == nil {
			return
		}
		e = p.entry(id)
	}
	if s != nil {
		e.id = id
	}
	e.svc = s
	e.base = p.deriveBase(s)
	p.refresh(id, e)
}

// sliceChanged takes in slice k, new or changed (nil s: deleted), and
// moves it to the service it now names.
func (p *Processor) sliceChanged(k kubestate.Key, s *kubestate.EndpointSlice) {
	ref, known := p.slices[k]
	has := s != nil && s.ServiceName != ""
	// The slice's namespace is its service's: only the name can differ.
	if known && (!has || ref.owner.id.Name != s.ServiceName) {
		p.removeSlice(k, ref)
		p.refresh(ref.owner.id, ref.owner)
		known = false
	}
	if !has {
		return
	}
	if known {
		ref.owner.slices[ref.i] = s
	} else {
		ref.owner = p.entry(sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName})
		p.insertSlice(ref.owner, k, s)
	}
	p.refresh(ref.owner.id, ref.owner)
}

// refresh derives service id again and tells renderers what changed.
func (p *Processor) refresh(id sr.ServiceID, e *entry) {
	old := e.derived
	// The previous output stands for the base unless the service changed.
	sameBase := old.out != nil && old.out == e.base.out
	e.derived = derived{}
	if e.svc != nil {
		e.derived = derive(&e.base, e.slices, &p.view, &p.scratch)
		p.builds++
	}
	switch {
	case old.out == nil && e.out == nil:
	case old.out == nil:
		p.call(id, "add", func(r sr.Renderer) error { return r.AddService(e.out) })
	case e.out == nil:
		p.call(id, "delete", func(r sr.Renderer) error { return r.DeleteService(old.out) })
	case sameBase && sameBackends(old.out, e.out) || !sameBase && old.out.Equal(e.out):
		e.out = old.out // renderers hold this one
	default:
		p.call(id, "update", func(r sr.Renderer) error { return r.UpdateService(old.out, e.out) })
	}
	if e.out != nil {
		e.base.out = e.out
	}
	if e.hostNet != old.hostNet {
		if e.hostNet {
			p.hostNet[id] = struct{}{}
		} else {
			delete(p.hostNet, id)
		}
	}
	if e.hinted != old.hinted {
		if e.hinted {
			p.hinted[id] = struct{}{}
		} else {
			delete(p.hinted, id)
		}
	}
	if !slices.Equal(old.pods, e.pods) {
		for _, k := range old.pods {
			if _, ok := slices.BinarySearchFunc(e.pods, k, compareKeys); !ok {
				p.user(k, id, false)
			}
		}
		for _, k := range e.pods {
			if _, ok := slices.BinarySearchFunc(old.pods, k, compareKeys); !ok {
				p.user(k, id, true)
			}
		}
	}
	if !slices.Equal(old.skips, e.skips) {
		p.logSkips(old.skips, e.skips)
	}
	if e.svc == nil && len(e.slices) == 0 {
		delete(p.services, id)
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("service derived", "service", id.String(), "rendered", e.out != nil, "slices", len(e.slices))
	}
}

// sameBackends tells whether two outputs of one base, which differ in
// their backends only, have the same backends.
func sameBackends(a, b *sr.ContivService) bool {
	for i := range a.Ports {
		x, y := &a.Ports[i], &b.Ports[i]
		if !slices.Equal(x.Backends, y.Backends) || !slices.Equal(x.LocalBackends, y.LocalBackends) {
			return false
		}
	}
	return true
}

// call calls every renderer, collecting errors.
func (p *Processor) call(id sr.ServiceID, op string, f func(sr.Renderer) error) {
	for i, r := range p.renderers {
		if err := f(r); err != nil {
			p.errs = append(p.errs, fmt.Errorf("renderer %d: %s %s: %w", i, op, id, err))
		}
	}
}

// logSkips logs the skips in now that were not in was.
func (p *Processor) logSkips(was, now []Skip) {
	for _, s := range now {
		if _, ok := slices.BinarySearchFunc(was, s, compareSkips); ok {
			continue
		}
		p.log.Log(context.Background(), s.Reason.level(), "service input skipped",
			"service", s.Service.String(), "object", s.Object.String(), "port", s.Port,
			"reason", s.Reason.String(), "detail", s.Detail)
	}
}

// user records (add) or forgets that service id has local pod k as a
// backend. A pod's backend role follows from the set of its users, so it
// can neither go negative nor stick.
func (p *Processor) user(k kubestate.Key, id sr.ServiceID, add bool) {
	if add {
		if !p.addUser(k, id) {
			return
		}
	} else {
		m := p.users[k]
		delete(m, id)
		if len(m) > 0 {
			return
		}
		delete(p.users, k)
	}
	if lp, ok := p.pods[k]; ok {
		p.refreshInterface(lp.ifName)
	}
}

// addUser records that service id has pod k as a backend; true when it is
// the pod's first user.
func (p *Processor) addUser(k kubestate.Key, id sr.ServiceID) bool {
	m := p.users[k]
	if m == nil {
		m = map[sr.ServiceID]struct{}{}
		p.users[k] = m
	}
	m[id] = struct{}{}
	return len(m) == 1
}

// podID is pod key k without its node: the processor knows this node's pods
// only, by namespace and name, as endpoints name them.
func podID(k kubestate.Key) kubestate.Key {
	k.Node = ""
	return k
}

func (p *Processor) podChanged(k kubestate.Key, pod *kubestate.Pod) {
	if pod == nil || pod.NodeName != p.name {
		lp, had := p.pods[k]
		if !had {
			return
		}
		delete(p.pods, k)
		p.unlink(lp.ifName, k)
		p.refreshInterface(lp.ifName)
		return
	}
	p.setPod(k, p.lookup(k, pod.HostNetwork))
}

// lookup finds the interface of local pod k; host-network pods have none.
func (p *Processor) lookup(k kubestate.Key, hostNet bool) localPod {
	if hostNet {
		return localPod{hostNet: true}
	}
	name, ok := p.ifaces.InterfaceByTag(p.tag(k.Namespace, k.Name))
	if !ok {
		return localPod{}
	}
	return localPod{ifName: name}
}

// setPod records local pod k and updates the roles of its interfaces.
func (p *Processor) setPod(k kubestate.Key, lp localPod) {
	was, had := p.pods[k]
	p.pods[k] = lp
	if had && was.ifName == lp.ifName {
		return
	}
	if had {
		p.unlink(was.ifName, k)
		p.refreshInterface(was.ifName)
	}
	if lp.ifName != "" {
		p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
		p.refreshInterface(lp.ifName)
	}
}

func (p *Processor) unlink(ifName string, k kubestate.Key) {
	if ifName == "" {
		return
	}
	ks := slices.DeleteFunc(p.ifPods[ifName], func(x kubestate.Key) bool { return x == k })
	if len(ks) == 0 {
		delete(p.ifPods, ifName)
	} else {
		p.ifPods[ifName] = ks
	}
}

// role is what interface name is: configured roles, frontend for a local
// pod's interface, backend too while a service has the pod as a backend.
func (p *Processor) role(name string) sr.InterfaceRole {
	r := p.static[name]
	for _, k := range p.ifPods[name] {
		r |= sr.RoleFrontend
		if len(p.users[k]) > 0 {
			r |= sr.RoleBackend
		}
	}
	return r
}

// refreshInterface tells renderers when the role of name changed.
func (p *Processor) refreshInterface(name string) {
	if name == "" {
		return
	}
	r := p.role(name)
	if r == p.roles[name] {
		return
	}
	if r == 0 {
		delete(p.roles, name)
	} else {
		p.roles[name] = r
	}
	for i, rd := range p.renderers {
		if err := rd.UpdateInterface(name, r); err != nil {
			p.errs = append(p.errs, fmt.Errorf("renderer %d: interface %s: %w", i, name, err))
		}
	}
}

// readNode reads this node's name, ID, own addresses and pod subnets.
func (p *Processor) readNode() nodeView {
	v := nodeView{
		name:    p.node.NodeName(),
		id:      p.node.NodeID(),
		podNet:  p.subnets.PodSubnetThisNode().Masked(),
		allPods: p.subnets.PodSubnetAllNodes().Masked(),
	}
	for _, ip := range p.node.NodeIPs() {
		if ip.IsValid() {
			v.ips = append(v.ips, ip)
		}
	}
	slices.SortFunc(v.ips, netip.Addr.Compare)
	v.ips = slices.Compact(v.ips)
	return v
}

// nodeChanged follows a NodeUpdate. Only this node's own addresses and
// subnets matter: when the addresses change, renderers are told (they own
// the NodePort frontends) and only services with host-network endpoints are
// derived again; other nodes' updates touch nothing.
func (p *Processor) nodeChanged(name string) {
	if name != p.name {
		return
	}
	was, now := p.view, p.readNode()
	now.zone = was.zone
	sameIPs := slices.Equal(was.ips, now.ips)
	sameNets := was.podNet == now.podNet && was.allPods == now.allPods
	if sameIPs && sameNets && was.id == now.id {
		return
	}
	p.view = now
	if !sameIPs || was.id != now.id {
		node := now.localNode()
		for i, r := range p.renderers {
			if err := r.UpdateLocalNode(node); err != nil {
				p.errs = append(p.errs, fmt.Errorf("renderer %d: local node: %w", i, err))
			}
		}
	}
	var ids []sr.ServiceID
	switch {
	case !sameNets:
		ids = slices.Collect(maps.Keys(p.services))
	case !sameIPs:
		ids = slices.Collect(maps.Keys(p.hostNet))
	}
	slices.SortFunc(ids, compareIDs)
	for _, id := range ids {
		if e := p.services[id]; e != nil {
			p.refresh(id, e)
		}
	}
	p.log.Info("this node's addresses changed", "node", now.name, "ips", len(now.ips), "servicesDerived", len(ids))
}

// zoneChanged follows a change of this node's Node object: when its zone
// changed, only the services with topology hints are derived again.
func (p *Processor) zoneChanged(n *kubestate.Node) {
	zone := ""
	if n != nil {
		zone = n.Zone
	}
	if zone == p.view.zone {
		return
	}
	p.view.zone = zone
	ids := slices.SortedFunc(maps.Keys(p.hinted), compareIDs)
	for _, id := range ids {
		if e := p.services[id]; e != nil {
			p.refresh(id, e)
		}
	}
	p.log.Info("this node's zone changed", "node", p.name, "zone", zone, "servicesDerived", len(ids))
}

// Services returns the rendered services, sorted by ID. They must not be
// modified.
func (p *Processor) Services() []*sr.ContivService {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*sr.ContivService, 0, len(p.services))
	for _, e := range p.services {
		if e.out != nil {
			out = append(out, e.out)
		}
	}
	slices.SortFunc(out, func(a, b *sr.ContivService) int { return compareIDs(a.ID, b.ID) })
	return out
}

// Skipped returns what is currently left out of the rendered services, and
// why, sorted by service.
func (p *Processor) Skipped() []Skip {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Skip
	for _, e := range p.services {
		out = append(out, e.skips...)
	}
	slices.SortFunc(out, compareSkips)
	return out
}

// SkipCounts returns how many skips of each reason there currently are.
func (p *Processor) SkipCounts() map[Reason]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m := map[Reason]int{}
	for _, e := range p.services {
		for _, s := range e.skips {
			m[s.Reason]++
		}
	}
	return m
}

// Interfaces returns every interface with a role.
func (p *Processor) Interfaces() map[string]sr.InterfaceRole {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return maps.Clone(p.roles)
}

func serviceID(k kubestate.Key) sr.ServiceID {
	return sr.ServiceID{Namespace: k.Namespace, Name: k.Name}
}

func compareIDs(a, b sr.ServiceID) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func compareSlices(a, b *kubestate.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) }

func sliceByName(s *kubestate.EndpointSlice, name string) int { return cmp.Compare(s.Name, name) }

// deriveBase is deriveBase, without the "not enforced" report of source
// ranges when the renderer enforces them, and with the renderer's reason
// when it could but cannot now.
func (p *Processor) deriveBase(svc *kubestate.Service) base {
	b := deriveBase(svc)
	if !p.rangesEnforced {
		return b
	}
	why := ""
	if p.rangesWhy != nil {
		why = p.rangesWhy()
	}
	if why == "" {
		b.skips = slices.DeleteFunc(b.skips, func(s Skip) bool { return s.Reason == ReasonSourceRangesNotEnforced })
		return b
	}
	for i := range b.skips {
		if s := &b.skips[i]; s.Reason == ReasonSourceRangesNotEnforced {
			ranges, _, _ := strings.Cut(s.Detail, notEnforced)
			s.Detail = ranges + notEnforced + why
		}
	}
	return b
}
