package nodesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"contiv.dev/vpp/kubestate"
	nsync "contiv.dev/vpp/nodesync"
	"contiv.dev/vpp/plugins/controller"
)

// DefaultClaimTimeout bounds the claim of this node's ID in one resync.
const DefaultClaimTimeout = time.Minute

// Params configures the handler.
type Params struct {
	// Client reaches etcd; required.
	Client nsync.Etcd
	// NodeName is this node's Kubernetes name; required.
	NodeName string
	// StateFile keeps this node's ID on local disk; empty means none.
	StateFile string
	// MaxID is the largest ID the address plan fits (0: no bound).
	MaxID uint32
	// ClaimTimeout bounds one claim (default DefaultClaimTimeout).
	ClaimTimeout time.Duration
	// Events receives the NodeUpdates (the controller); SetEvents may set
	// it later, before the controller runs.
	Events controller.FollowUpper
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Handler is NodeSync's controller handler. Its getters are safe from any
// goroutine; the controller calls the rest from its loop.
type Handler struct {
	p      Params
	log    *slog.Logger
	events controller.FollowUpper

	mu     sync.RWMutex
	table  *nsync.Nodes
	id     uint32
	vppIPs []netip.Prefix // as last given to PublishVppIPs; nil: keep the record's
	synced bool
}

var (
	_ controller.Handler      = (*Handler)(nil)
	_ controller.ReadyHandler = (*Handler)(nil)
)

// New returns a handler; it claims the ID in its first resync.
func New(p Params) (*Handler, error) {
	if p.Client == nil {
		return nil, fmt.Errorf("nodesync: no etcd client: %w", nsync.ErrInvalid)
	}
	if p.NodeName == "" {
		return nil, fmt.Errorf("nodesync: no node name: %w", nsync.ErrInvalid)
	}
	if p.ClaimTimeout <= 0 {
		p.ClaimTimeout = DefaultClaimTimeout
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{p: p, log: p.Logger, events: p.Events, table: nsync.NewNodes()}, nil
}

// SetEvents sets where NodeUpdates go; call it before the controller runs.
func (h *Handler) SetEvents(f controller.FollowUpper) { h.events = f }

// Name implements controller.Handler.
func (h *Handler) Name() string { return "nodesync" }

// HandlesEvent implements controller.Handler: changes of node records and
// Kubernetes Nodes.
func (h *Handler) HandlesEvent(ev controller.Event) bool {
	ce, ok := ev.(*controller.ChangeEvent)
	return ok && (ce.Key.Resource == kubestate.ResVppNode || ce.Key.Resource == kubestate.ResNode)
}

// Ready implements controller.ReadyHandler: this node has its ID and the
// table was built.
func (h *Handler) Ready() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.id != 0 && h.synced
}

// Resync implements controller.Handler: it rebuilds the table from the
// snapshot, claims this node's ID if it has none (or its record is lost
// while its Kubernetes Node exists) and republishes the management
// addresses if they changed. No NodeUpdate is emitted: every handler
// resyncs.
func (h *Handler) Resync(ctx context.Context, ev *controller.ResyncEvent) error {
	var records []*kubestate.VppNode
	var nodes []*kubestate.Node
	if ev.State != nil {
		for _, o := range ev.State.Objects {
			switch o := o.(type) {
			case *kubestate.VppNode:
				records = append(records, o)
			case *kubestate.Node:
				nodes = append(nodes, o)
			}
		}
	}
	h.mu.Lock()
	err := h.table.Reset(records, nodes)
	h.synced = true
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("nodesync: bad values left out", "error", err)
	}
	return h.ensureSelf(ctx, true)
}

// Update implements controller.Handler.
func (h *Handler) Update(ctx context.Context, ev controller.Event) error {
	ce, ok := ev.(*controller.ChangeEvent)
	if !ok {
		return nil
	}
	var (
		ch      nsync.Change
		changed bool
		err     error
	)
	h.mu.Lock()
	switch ce.Key.Resource {
	case kubestate.ResVppNode:
		rec, _ := ce.New.(*kubestate.VppNode)
		ch, changed, err = h.table.SetRecord(ce.Key.Name, rec)
	case kubestate.ResNode:
		n, _ := ce.New.(*kubestate.Node)
		ch, changed, err = h.table.SetK8sNode(ce.Key.Name, n)
	}
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("nodesync: bad values left out", "key", ce.Key.String(), "error", err)
	}
	if changed {
		h.log.Debug("nodesync: node changed", "node", ch.Name, "change", ch.String())
		if h.events != nil {
			h.events.FollowUp(&controller.NodeUpdate{Name: ch.Name, Prev: ch.Prev, New: ch.New})
		}
	}
	if ce.Key.Resource == kubestate.ResNode && ce.Key.Name == h.p.NodeName {
		return h.ensureSelf(ctx, false)
	}
	return nil
}

// ensureSelf claims this node's ID if needed and republishes its
// management addresses if they changed.
func (h *Handler) ensureSelf(ctx context.Context, startup bool) error {
	h.mu.RLock()
	id := h.id
	_, haveRecord := h.table.Record(h.p.NodeName)
	_, haveK8sNode := h.table.K8sMgmtIPs(h.p.NodeName)
	h.mu.RUnlock()
	switch {
	case id == 0 && startup, id != 0 && !haveRecord && haveK8sNode:
		if id != 0 {
			h.log.Warn("nodesync: this node's record is missing: claiming its ID again", "node", h.p.NodeName, "id", id)
		}
		cctx, cancel := context.WithTimeout(ctx, h.p.ClaimTimeout)
		defer cancel()
		got, err := nsync.Claim(cctx, nsync.Params{
			Client: h.p.Client, Name: h.p.NodeName, StateFile: h.p.StateFile,
			WantID: id, MaxID: h.p.MaxID, Logger: h.log,
		})
		if err != nil {
			return fmt.Errorf("nodesync: %w", err)
		}
		h.mu.Lock()
		h.id = got
		h.mu.Unlock()
		id = got
	case id == 0:
		return nil
	case !haveRecord:
		h.log.Warn("nodesync: this node's record is missing and its Kubernetes Node is gone: not claiming again",
			"node", h.p.NodeName, "id", id)
		return nil
	}
	return h.publish(ctx)
}

// PublishVppIPs publishes this node's VPP addresses (with the management
// addresses of its Kubernetes Node). It writes only what changed.
func (h *Handler) PublishVppIPs(ctx context.Context, ips []netip.Prefix) error {
	h.mu.Lock()
	h.vppIPs = slices.Clone(ips)
	if h.vppIPs == nil {
		h.vppIPs = []netip.Prefix{}
	}
	h.mu.Unlock()
	return h.publish(ctx)
}

// publish makes this node's record carry the wanted addresses.
func (h *Handler) publish(ctx context.Context) error {
	h.mu.RLock()
	id := h.id
	var addrs nsync.Addresses
	rec, haveRecord := h.table.Record(h.p.NodeName)
	if haveRecord {
		addrs, _ = nsync.RecordAddresses(rec) // canonical already
	}
	haveVppIPs := h.vppIPs != nil
	if haveVppIPs {
		addrs.VppIPs = slices.Clone(h.vppIPs)
	}
	mgmt, haveK8sNode := h.table.K8sMgmtIPs(h.p.NodeName)
	if haveK8sNode {
		addrs.MgmtIPs = mgmt
	}
	h.mu.RUnlock()
	if id == 0 {
		return fmt.Errorf("nodesync: publish: this node has no ID yet")
	}
	if !haveVppIPs && !haveK8sNode {
		return nil // nothing of ours to publish yet
	}
	wrote, err := nsync.Publish(ctx, h.p.Client, h.p.NodeName, id, addrs)
	if err != nil {
		if errors.Is(err, nsync.ErrReleased) {
			h.log.Warn("nodesync: this node's ID was released", "node", h.p.NodeName, "id", id)
		}
		return fmt.Errorf("nodesync: %w", err)
	}
	if wrote {
		h.log.Info("nodesync: addresses published", "node", h.p.NodeName, "id", id,
			"vppIPs", addrs.VppIPs, "mgmtIPs", addrs.MgmtIPs)
	}
	return nil
}

// ID is this node's ID, 0 before it is claimed.
func (h *Handler) ID() uint32 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.id
}

// NodeName is this node's name.
func (h *Handler) NodeName() string { return h.p.NodeName }

// ThisNode returns this node's state; false before its ID is claimed. Until
// the controller delivers this node's record, it holds only name and ID.
func (h *Handler) ThisNode() (*kubestate.VppNode, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.id == 0 {
		return nil, false
	}
	if n, ok := h.table.Get(h.p.NodeName); ok {
		return n, true
	}
	return &kubestate.VppNode{Name: h.p.NodeName, ID: h.id}, true
}

// AllNodes returns a copy of every node with an ID, this one included,
// ordered by ID.
func (h *Handler) AllNodes() []*kubestate.VppNode {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.table.All()
}

// NodeByName returns a copy of node name's state.
func (h *Handler) NodeByName(name string) (*kubestate.VppNode, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.table.Get(name)
}
