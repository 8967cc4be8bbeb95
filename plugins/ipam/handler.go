package ipam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/retryloop"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// DefaultGrace is how long a fresh allocation survives without its pod in
// the cluster state (the CNI allocates before the reflector mirrors the pod).
const DefaultGrace = time.Minute

// DefaultWriteTimeout bounds one etcd request of the background writer.
const DefaultWriteTimeout = 5 * time.Second

// NodeIDs gives this node's ID (NodeSync's handler).
type NodeIDs interface {
	// ID is this node's ID, 0 while unknown.
	ID() uint32
}

// VppIPPublisher publishes this node's VPP addresses (NodeSync's handler).
type VppIPPublisher interface {
	// PublishVppIPs is called on the controller loop: it must not wait
	// for etcd (NodeSync's only records the addresses).
	PublishVppIPs(ctx context.Context, ips []netip.Prefix) error
}

// Params configures the handler.
type Params struct {
	// Config is the cluster's address configuration.
	Config addrplan.Config
	// NodeName is this node's name; required.
	NodeName string
	// NodeIDs gives this node's ID; required.
	NodeIDs NodeIDs
	// Client stores the allocations; nil means no allocator (the plan only,
	// e.g. to render offline).
	Client clientv3.KV
	// Publisher, when set, receives this node's VPP addresses: NodeIP, or
	// the plan's node interconnect IP when NodeIP is zero, then NodeIP6
	// when set.
	Publisher VppIPPublisher
	// NodeIP is this node's configured VPP address; zero means derived.
	NodeIP netip.Prefix
	// NodeIP6 is this node's IPv6 VPP address; zero means none.
	NodeIP6 netip.Prefix
	// Grace keeps fresh allocations of pods not yet reflected (default
	// DefaultGrace).
	Grace time.Duration
	// WriteTimeout bounds one etcd request (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// RetryMin and RetryMax bound the background writer's backoff
	// (defaults retryloop.DefaultMin and retryloop.DefaultMax).
	RetryMin, RetryMax time.Duration
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Handler is IPAM's controller handler. Its getters are safe from any
// goroutine. Its etcd I/O (loading the allocations, writing them) runs on
// its background writer, never on the caller's goroutine.
type Handler struct {
	p     Params
	log   *slog.Logger
	w     *retryloop.Loop
	store *persister // nil without Client

	mu    sync.RWMutex
	plan  *addrplan.Plan
	alloc *addrplan.Allocator
	live  map[addrplan.PodID]bool   // this node's pods in the cluster state
	inUse func(addrplan.PodID) bool // SetInUse; nil: none
	// recheck asks the writer to compare etcd with the allocations; it is
	// the resync that asked (0: none), checked the last one checked.
	recheck, checked uint64
}

var (
	_ controller.Handler      = (*Handler)(nil)
	_ controller.ReadyHandler = (*Handler)(nil)
)

// New checks p and returns a handler; the plan is derived in its first
// resync, once the node has its ID.
func New(p Params) (*Handler, error) {
	if p.NodeName == "" || p.NodeIDs == nil {
		return nil, errors.New("ipam: a node name and a node ID source are required")
	}
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	if ip := p.NodeIP6.Addr(); p.NodeIP6.IsValid() && (!ip.Is6() || ip.Is4In6()) {
		return nil, fmt.Errorf("ipam: node IPv6 address %s is not IPv6", p.NodeIP6)
	}
	if p.Grace <= 0 {
		p.Grace = DefaultGrace
	}
	if p.WriteTimeout <= 0 {
		p.WriteTimeout = DefaultWriteTimeout
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{p: p, log: p.Logger, live: map[addrplan.PodID]bool{}}
	h.w = retryloop.New(retryloop.Params{Work: h.write, Min: p.RetryMin, Max: p.RetryMax})
	if p.Client != nil {
		h.store = newPersister(NewStore(p.Client, p.NodeName, h.log), p.WriteTimeout, h.w.Kick)
	}
	return h, nil
}

// Name implements controller.Handler.
func (h *Handler) Name() string { return "ipam" }

// HandlesEvent implements controller.Handler: changes of this node's pods,
// and the shutdown (which stops the background writer). A pod's key holds
// its node: a change under another node's key (the delete of a pod's
// unscheduled key when it moves here included) says nothing of this node's
// pods.
func (h *Handler) HandlesEvent(ev controller.Event) bool {
	switch ev := ev.(type) {
	case *controller.ChangeEvent:
		return ev.Key.Resource == kubestate.ResPod && ev.Key.Node == h.p.NodeName
	case *controller.ShutdownEvent:
		return true
	}
	return false
}

// Ready implements controller.ReadyHandler: the plan is derived.
func (h *Handler) Ready() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.plan != nil
}

// Resync implements controller.Handler: it derives the plan (once the
// node has its ID), releases the addresses of pods gone from the cluster
// state, has the background writer make etcd's records equal to the
// allocations (and load them first, after the plan is derived) and has this
// node's VPP address published. It does no etcd I/O.
func (h *Handler) Resync(ctx context.Context, ev *controller.ResyncEvent) error {
	id := h.p.NodeIDs.ID()
	if id == 0 {
		return errors.New("ipam: this node has no ID yet")
	}
	live := map[addrplan.PodID]bool{}
	if ev.State != nil {
		for _, o := range ev.State.Objects {
			if p, ok := o.(*kubestate.Pod); ok && p.NodeName == h.p.NodeName {
				live[addrplan.PodID{Namespace: p.Namespace, Name: p.Name}] = true
			}
		}
	}
	h.mu.Lock()
	plan, alloc := h.plan, h.alloc
	if plan == nil || plan.NodeID != id {
		var err error
		if plan, err = addrplan.NewPlan(h.p.Config, id); err != nil {
			h.mu.Unlock()
			return fmt.Errorf("ipam: %w", err)
		}
		h.plan, h.alloc, alloc = plan, nil, nil
		h.log.Info("ipam: address plan", "node", h.p.NodeName, "id", id, "podSubnet", plan.PodSubnet,
			"nodeIP", plan.NodeInterconnectIP, "hostInterconnect", plan.HostInterconnect)
	}
	h.live = live
	if h.store != nil {
		h.recheck++
		h.w.Kick()
	}
	h.mu.Unlock()
	var errs []error
	if alloc != nil {
		// Releases are recorded for the writer: no etcd I/O here.
		inUse := h.inUseFunc()
		if err := alloc.Prune(ctx, func(p addrplan.PodID) bool { return live[p] || inUse(p) }); err != nil {
			errs = append(errs, fmt.Errorf("ipam: %w", err))
		}
	}
	if h.p.Publisher != nil {
		if ips := h.vppIPs(plan); len(ips) > 0 {
			if err := h.p.Publisher.PublishVppIPs(ctx, ips); err != nil {
				errs = append(errs, fmt.Errorf("ipam: publish node IP: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// vppIPs are the VPP addresses this node publishes: the IPv4 one (NodeIP,
// else the plan's), then the IPv6 one when configured.
func (h *Handler) vppIPs(plan *addrplan.Plan) []netip.Prefix {
	ip4 := h.p.NodeIP
	if !ip4.IsValid() {
		ip4 = plan.NodeInterconnectIP
	}
	var ips []netip.Prefix
	for _, ip := range []netip.Prefix{ip4, h.p.NodeIP6} {
		if ip.IsValid() {
			ips = append(ips, ip)
		}
	}
	return ips
}

// Update implements controller.Handler: it keeps track of this node's pods;
// a deleted pod's address is released (recorded for the writer: no etcd
// I/O). On ShutdownEvent it lets the writer finish within ctx, then stops
// it.
func (h *Handler) Update(ctx context.Context, ev controller.Event) error {
	if _, ok := ev.(*controller.ShutdownEvent); ok {
		if err := h.w.Shutdown(ctx, h.written); err != nil {
			h.log.Warn("ipam: stopped with writes pending", "err", err)
		}
		return nil
	}
	ce, ok := ev.(*controller.ChangeEvent)
	if !ok {
		return nil
	}
	pod := addrplan.PodID{Namespace: ce.Key.Namespace, Name: ce.Key.Name}
	p, _ := ce.New.(*kubestate.Pod)
	h.mu.Lock()
	if p != nil && p.NodeName == h.p.NodeName {
		h.live[pod] = true
	} else {
		delete(h.live, pod)
	}
	alloc := h.alloc
	h.mu.Unlock()
	if alloc == nil || ce.New != nil {
		return nil
	}
	if h.inUseFunc()(pod) {
		// Still wired: its address goes with the CNI's DEL (or the pod
		// manager's sweep), not with the pod's object.
		h.log.Info("ipam: pod deleted from the cluster state but still wired: address kept until its CNI DEL", "pod", pod.String())
		return nil
	}
	if err := alloc.Release(ctx, pod); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	return nil
}

// SetInUse gives the handler the pod manager's view (pods.Manager.Wired):
// a pod that is in use keeps its address whatever the cluster state says
// (not yet mirrored past the grace period, or its object deleted before
// the CNI's DEL came): the address is on the pod's interface, in VPP and
// in the pod, until its owner releases it. Call it before the controller
// runs; nil forgets it.
func (h *Handler) SetInUse(f func(addrplan.PodID) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inUse = f
}

func (h *Handler) inUseFunc() func(addrplan.PodID) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.inUse == nil {
		return func(addrplan.PodID) bool { return false }
	}
	return h.inUse
}

// Plan returns a copy of this node's address plan, nil before the first
// resync.
func (h *Handler) Plan() *addrplan.Plan {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.plan == nil {
		return nil
	}
	p := *h.plan
	return &p
}

// Allocator hands out this node's pod IPs; nil until the writer loaded the
// allocations from etcd after the first resync, or without an etcd client.
// Its allocations and releases are local at once and reach etcd through the
// writer (an allocation made while etcd is down is persisted when it is
// back).
func (h *Handler) Allocator() *addrplan.Allocator {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.alloc
}
