package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
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
	// that reason. It is asked at every derivation of a service with
	// some, from more than one goroutine at once in a resync of many
	// services (deriveAll); a resync after its answer changed reports
	// every service anew.
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
	// Wired, when set, tells which pods this node's CNI wired (the
	// agent's pod manager): each is a local pod while VPP has its
	// interface, its Pod object known or not (yet).
	Wired WiredPods
}

// WiredPods is what the processor needs of the agent's pod manager.
type WiredPods interface {
	// Wired tells whether the CNI wired pod namespace/name on this node.
	Wired(namespace, name string) bool
	// WiredPods lists the pods wired on this node (ResPod keys).
	WiredPods() []kubestate.Key
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
	wired     WiredPods
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
	// slices tells whose an EndpointSlice is: a change of a slice reaches
	// everything it touches with this one lookup (and a search of the
	// owner's few slices).
	slices map[sliceName]*entry
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
	// parallelFrom is the number of services from which a resync derives
	// them in two goroutines (parallelDerive; tests change it).
	parallelFrom int
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
		wired:     p.Wired,
		tag:       tag,
		static:    staticRoles(p.Config),
		name:      p.Node.NodeName(),

		rangesEnforced: p.Config.SourceRangesEnforced,
		rangesWhy:      p.Config.SourceRangesNotEnforced,
		parallelFrom:   parallelDerive,
	}
	if port := p.Config.ProxyHealthPort; port != 0 {
		pr.proxyHealth = ProxyHealthService(port)
	}
	pr.reset(0)
	return pr, nil
}

func (p *Processor) reset(n int) {
	p.services = make(map[sr.ServiceID]*entry, n)
	p.slices = make(map[sliceName]*entry, n)
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
// state. A service whose Service and EndpointSlices are the very objects
// the processor held, seen from an unchanged node, keeps its output
// without a derivation.
func (p *Processor) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	if ev.State == nil {
		return fmt.Errorf("service processor: %s: %w", ev.EventName(), ErrNoSnapshot)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old, oldView := p.services, p.view
	p.name = p.node.NodeName()
	p.view = p.readNode()
	p.reset(len(ev.State.Objects) / 2)
	es := p.index(ev)
	p.indexWired()
	sortEntries(es)
	p.deriveAll(es, old, oldView.equal(&p.view))
	out := make([]*sr.ContivService, 0, len(es))
	for _, ke := range es {
		id, e := ke.id, ke.e
		o := old[id]
		if e.hostNet {
			p.hostNet[id] = struct{}{}
		}
		if e.hinted {
			p.hinted[id] = struct{}{}
		}
		if e.rare != nil {
			for _, k := range e.rare.pods {
				p.addUser(k, id)
			}
			if o != nil {
				p.logSkips(o.skips(), e.rare.skips)
			} else {
				p.logSkips(nil, e.rare.skips)
			}
		}
		if e.out != nil {
			out = append(out, e.out)
		}
	}
	for name := range p.ifPods {
		p.roles[name] = p.role(name)
	}
	if ev.DataplaneRestarted {
		// Before the full apply of this resync: what the renderers applied
		// is gone with VPP's state.
		for _, r := range p.renderers {
			if rr, ok := r.(sr.Restarter); ok {
				rr.VPPRestarted()
			}
		}
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

// deriveAll derives the output of each entry of es; one whose Service and
// EndpointSlices are the very objects of its entry in old, seen from an
// unchanged node (sameView), keeps that entry's output without a
// derivation: periodic and healing resyncs hand over the objects the
// processor holds. Many entries are derived in two goroutines, half each:
// a derivation reads its entry's inputs and the node's view and writes its
// entry only (and asks Config.SourceRangesNotEnforced, which any goroutine
// may call, for a service with source ranges).
func (p *Processor) deriveAll(es []keyedEntry, old map[sr.ServiceID]*entry, sameView bool) {
	run := func(es []keyedEntry, scratch *[]candidate) (builds int) {
		for _, ke := range es {
			e := ke.e
			if o := old[ke.id]; sameView && o != nil && p.unchanged(o, e) {
				e.out, e.rare, e.hostNet, e.hinted = o.out, o.rare, o.hostNet, o.hinted
				continue
			}
			b := p.deriveBase(e.svc)
			e.set(b.skips, derive(&b, e.slices, &p.view, scratch))
			builds++
		}
		return builds
	}
	if len(es) < p.parallelFrom {
		p.builds += run(es, &p.scratch)
		return
	}
	half := len(es) / 2
	var (
		builds   int
		panicked any
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		var scratch []candidate
		builds = run(es[half:], &scratch)
	}()
	mine := func() int {
		defer func() { <-done }() // no derivation goes on past a panic here
		return run(es[:half], &p.scratch)
	}()
	if panicked != nil {
		panic(panicked) // on the controller's goroutine, which recovers it
	}
	p.builds += mine + builds
}

// parallelDerive is the number of services from which a resync derives
// them in two goroutines: below it, a goroutine costs more than it saves.
const parallelDerive = 2048

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
				prev, _ := e.Prev.(*kubestate.EndpointSlice)
				p.sliceChanged(sliceNameOf(e.Key), s, prev)
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
		p.podInterface(kubestate.Key{Resource: kubestate.ResPod, Namespace: e.Namespace, Name: e.Name})
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
