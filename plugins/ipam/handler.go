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

	"contiv.dev/vpp/ipam"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// DefaultGrace is how long a fresh allocation survives without its pod in
// the cluster state (the CNI allocates before the reflector mirrors the pod).
const DefaultGrace = time.Minute

// NodeIDs gives this node's ID (NodeSync's handler).
type NodeIDs interface {
	// ID is this node's ID, 0 while unknown.
	ID() uint32
}

// VppIPPublisher publishes this node's VPP addresses (NodeSync's handler).
type VppIPPublisher interface {
	PublishVppIPs(ctx context.Context, ips []netip.Prefix) error
}

// Params configures the handler.
type Params struct {
	// Config is the cluster's address configuration.
	Config ipam.Config
	// NodeName is this node's name; required.
	NodeName string
	// NodeIDs gives this node's ID; required.
	NodeIDs NodeIDs
	// Client stores the allocations; nil means no allocator (the plan only,
	// e.g. to render offline).
	Client clientv3.KV
	// Publisher, when set, receives this node's VPP address: NodeIP, or the
	// plan's node interconnect IP when NodeIP is zero.
	Publisher VppIPPublisher
	// NodeIP is this node's configured VPP address; zero means derived.
	NodeIP netip.Prefix
	// Grace keeps fresh allocations of pods not yet reflected (default
	// DefaultGrace).
	Grace time.Duration
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Handler is IPAM's controller handler. Its getters are safe from any
// goroutine.
type Handler struct {
	p   Params
	log *slog.Logger

	mu    sync.RWMutex
	plan  *ipam.Plan
	alloc *ipam.Allocator
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
	if p.Grace <= 0 {
		p.Grace = DefaultGrace
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{p: p, log: p.Logger}, nil
}

// Name implements controller.Handler.
func (h *Handler) Name() string { return "ipam" }

// HandlesEvent implements controller.Handler: pod changes.
func (h *Handler) HandlesEvent(ev controller.Event) bool {
	ce, ok := ev.(*controller.ChangeEvent)
	return ok && ce.Key.Resource == kubestate.ResPod
}

// Ready implements controller.ReadyHandler: the plan is derived.
func (h *Handler) Ready() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.plan != nil
}

// Resync implements controller.Handler.
func (h *Handler) Resync(ctx context.Context, ev *controller.ResyncEvent) error {
	id := h.p.NodeIDs.ID()
	if id == 0 {
		return errors.New("ipam: this node has no ID yet")
	}
	h.mu.RLock()
	plan, alloc := h.plan, h.alloc
	h.mu.RUnlock()
	if plan == nil || plan.NodeID != id {
		var err error
		if plan, err = ipam.NewPlan(h.p.Config, id); err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
		alloc = nil
		if h.p.Client != nil {
			alloc, err = ipam.NewAllocator(ctx, ipam.AllocatorParams{
				Subnet: plan.PodSubnet, Store: NewStore(h.p.Client, h.p.NodeName, h.log),
				Grace: h.p.Grace, Logger: h.log,
			})
			if err != nil {
				return fmt.Errorf("ipam: %w", err)
			}
		}
		h.mu.Lock()
		h.plan, h.alloc = plan, alloc
		h.mu.Unlock()
		h.log.Info("ipam: address plan", "node", h.p.NodeName, "id", id, "podSubnet", plan.PodSubnet,
			"nodeIP", plan.NodeInterconnectIP, "hostInterconnect", plan.HostInterconnect)
	}
	var errs []error
	if alloc != nil {
		live := map[ipam.PodID]bool{}
		if ev.State != nil {
			for _, o := range ev.State.Objects {
				if p, ok := o.(*kubestate.Pod); ok && p.NodeName == h.p.NodeName {
					live[ipam.PodID{Namespace: p.Namespace, Name: p.Name}] = true
				}
			}
		}
		if err := alloc.Sync(ctx, func(p ipam.PodID) bool { return live[p] }); err != nil {
			errs = append(errs, fmt.Errorf("ipam: %w", err))
		}
	}
	if h.p.Publisher != nil {
		ip := h.p.NodeIP
		if !ip.IsValid() {
			ip = plan.NodeInterconnectIP
		}
		if ip.IsValid() {
			if err := h.p.Publisher.PublishVppIPs(ctx, []netip.Prefix{ip}); err != nil {
				errs = append(errs, fmt.Errorf("ipam: publish node IP: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Update implements controller.Handler: a deleted pod's address is released.
func (h *Handler) Update(ctx context.Context, ev controller.Event) error {
	ce, ok := ev.(*controller.ChangeEvent)
	if !ok || ce.New != nil {
		return nil
	}
	h.mu.RLock()
	alloc := h.alloc
	h.mu.RUnlock()
	if alloc == nil {
		return nil
	}
	if err := alloc.Release(ctx, ipam.PodID{Namespace: ce.Key.Namespace, Name: ce.Key.Name}); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	return nil
}

// Plan returns a copy of this node's address plan, nil before the first
// resync.
func (h *Handler) Plan() *ipam.Plan {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.plan == nil {
		return nil
	}
	p := *h.plan
	return &p
}

// Allocator hands out this node's pod IPs; nil before the first resync or
// without an etcd client.
func (h *Handler) Allocator() *ipam.Allocator {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.alloc
}
