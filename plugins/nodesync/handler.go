package nodesync

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"contiv.dev/vpp/internal/retryloop"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
)

// DefaultClaimTimeout bounds one claim of this node's ID by the background
// writer.
const DefaultClaimTimeout = time.Minute

// DefaultWriteTimeout bounds one etcd request of the background writer.
const DefaultWriteTimeout = 5 * time.Second

// Params configures the handler.
type Params struct {
	// Client reaches etcd; required.
	Client noderegistry.Etcd
	// NodeName is this node's Kubernetes name; required.
	NodeName string
	// StateFile keeps this node's ID on local disk; empty means none.
	StateFile string
	// MaxID is the largest ID the address plan fits (0: no bound).
	MaxID uint32
	// ID is this node's ID as claimed at agent start (noderegistry.Claim,
	// before the controller runs); 0 means none: the background writer
	// claims it after the first resync.
	ID uint32
	// ClaimTimeout bounds one claim (default DefaultClaimTimeout).
	ClaimTimeout time.Duration
	// WriteTimeout bounds one etcd request (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// RetryMin and RetryMax bound the background writer's backoff
	// (defaults retryloop.DefaultMin and retryloop.DefaultMax).
	RetryMin, RetryMax time.Duration
	// Events receives the NodeUpdates (the controller); SetEvents may set
	// it later, before the controller runs.
	Events controller.FollowUpper
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Handler is NodeSync's controller handler. Its getters are safe from any
// goroutine; the controller calls the rest from its loop. Its etcd writes
// (claims, publishes) run on its background writer, never on the caller's
// goroutine.
type Handler struct {
	p      Params
	log    *slog.Logger
	events controller.FollowUpper
	w      *retryloop.Loop

	mu     sync.RWMutex
	table  *noderegistry.Nodes
	id     uint32
	vppIPs []netip.Prefix // as last given to PublishVppIPs; nil: keep the record's
	synced bool
	// selfLost is set while this node's record is missing from etcd
	// though its Kubernetes Node exists (lost with etcd's data): the table
	// keeps the last one, so that nothing of this node (its NodePorts)
	// goes away while the writer claims the ID again.
	selfLost bool
	// released is set when the writer found this node's ID no longer held
	// in etcd, until it claims the ID again: the record's delete may be
	// delivered late (Nodes and records are watched apart), and the Node's
	// re-creation must then have the ID claimed.
	released bool
	// The writer's work: gen counts the requests, done is the last one
	// written; claimGen is the request that asked for a claim (0: none).
	gen, done, claimGen uint64
	// clashes are this node's VPP addresses found to be another node's
	// management address, as last logged (clash.go).
	clashes []string
}

var (
	_ controller.Handler      = (*Handler)(nil)
	_ controller.ReadyHandler = (*Handler)(nil)
)

// New returns a handler; it claims the ID in its first resync.
func New(p Params) (*Handler, error) {
	if p.Client == nil {
		return nil, fmt.Errorf("nodesync: no etcd client: %w", noderegistry.ErrInvalid)
	}
	if p.NodeName == "" {
		return nil, fmt.Errorf("nodesync: no node name: %w", noderegistry.ErrInvalid)
	}
	if p.ClaimTimeout <= 0 {
		p.ClaimTimeout = DefaultClaimTimeout
	}
	if p.WriteTimeout <= 0 {
		p.WriteTimeout = DefaultWriteTimeout
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{p: p, log: p.Logger, events: p.Events, table: noderegistry.NewNodes(), id: p.ID}
	h.w = retryloop.New(retryloop.Params{Work: h.write, Min: p.RetryMin, Max: p.RetryMax})
	return h, nil
}

// SetEvents sets where NodeUpdates go; call it before the controller runs.
func (h *Handler) SetEvents(f controller.FollowUpper) { h.events = f }

// Name implements controller.Handler.
func (h *Handler) Name() string { return "nodesync" }

// HandlesEvent implements controller.Handler: changes of node records and
// Kubernetes Nodes, and the shutdown (which stops the background writer).
func (h *Handler) HandlesEvent(ev controller.Event) bool {
	switch ev := ev.(type) {
	case *controller.ChangeEvent:
		return ev.Key.Resource == kubestate.ResVppNode || ev.Key.Resource == kubestate.ResNode
	case *controller.ShutdownEvent:
		return true
	}
	return false
}

// Ready implements controller.ReadyHandler: this node has its ID and the
// table was built.
func (h *Handler) Ready() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.id != 0 && h.synced
}

// Resync implements controller.Handler: it rebuilds the table from the
// snapshot and asks the background writer to claim this node's ID if it has
// none (or its record is lost while its Kubernetes Node exists) and to
// republish its addresses if they changed. It does no etcd I/O. No
// NodeUpdate is emitted: every handler resyncs.
func (h *Handler) Resync(_ context.Context, ev *controller.ResyncEvent) error {
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
	h.selfLost = false
	if last, ok := h.table.Record(h.p.NodeName); ok && h.lostSelf(records, nodes) {
		records = append(records, last)
		h.selfLost = true
	}
	err := h.table.Reset(records, nodes)
	h.synced = true
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("nodesync: bad values left out", "err", err)
	}
	h.checkClashes()
	h.ensureSelf(true)
	return nil
}

// Update implements controller.Handler. It does no etcd I/O but on
// ShutdownEvent, when it lets the writer finish within ctx, then stops it.
func (h *Handler) Update(ctx context.Context, ev controller.Event) error {
	if _, ok := ev.(*controller.ShutdownEvent); ok {
		if err := h.w.Shutdown(ctx, h.written); err != nil {
			h.log.Warn("nodesync: stopped with writes pending", "err", err)
		}
		return nil
	}
	ce, ok := ev.(*controller.ChangeEvent)
	if !ok {
		return nil
	}
	var (
		ch      noderegistry.Change
		changed bool
		err     error
	)
	self := ce.Key.Name == h.p.NodeName
	h.mu.Lock()
	switch ce.Key.Resource {
	case kubestate.ResVppNode:
		rec, _ := ce.New.(*kubestate.VppNode)
		_, haveK8sNode := h.table.K8sMgmtIPs(h.p.NodeName)
		kept, _ := h.table.Record(h.p.NodeName)
		switch {
		case self && rec == nil && h.id != 0 && haveK8sNode:
			h.selfLost = true // kept in the table; claimed again below
		case self && h.selfLost && rec != nil && len(rec.VppIPs) == 0 && kept != nil && len(kept.VppIPs) > 0:
			// Claimed again, not yet republished: keep the addresses
			// until the writer republishes them.
			h.selfLost = false
		case self:
			h.selfLost = false
			fallthrough
		default:
			ch, changed, err = h.table.SetRecord(ce.Key.Name, rec)
		}
	case kubestate.ResNode:
		n, _ := ce.New.(*kubestate.Node)
		if self && n == nil && h.selfLost {
			// The Node is gone too: the record was released, not lost
			// with etcd's data; this node leaves the table.
			h.selfLost = false
			ch, changed, err = h.table.SetRecord(ce.Key.Name, nil)
			_, _, _ = h.table.SetK8sNode(ce.Key.Name, nil) // no record left: no change
			break
		}
		ch, changed, err = h.table.SetK8sNode(ce.Key.Name, n)
	}
	// This node's Kubernetes Node changed (addresses to republish), or its
	// record was lost (to claim again).
	ensure := self && (ce.Key.Resource == kubestate.ResNode || h.selfLost)
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("nodesync: bad values left out", "key", ce.Key.String(), "err", err)
	}
	// A Kubernetes Node without a record changes no node, yet may be the
	// one whose address this node's VPP has.
	h.checkClashes()
	if changed {
		h.log.Debug("nodesync: node changed", "node", ch.Name, "change", ch.String())
		if h.events != nil {
			h.events.FollowUp(&controller.NodeUpdate{Name: ch.Name, Prev: ch.Prev, New: ch.New})
		}
	}
	if ensure {
		h.ensureSelf(false)
	}
	return nil
}

// lostSelf tells whether this node's record is missing from records while
// its Kubernetes Node is in nodes and it has an ID: lost with etcd's data,
// not released.
func (h *Handler) lostSelf(records []*kubestate.VppNode, nodes []*kubestate.Node) bool {
	has := func(name string) bool { return name == h.p.NodeName }
	return h.id != 0 &&
		!slices.ContainsFunc(records, func(r *kubestate.VppNode) bool { return has(r.Name) }) &&
		slices.ContainsFunc(nodes, func(n *kubestate.Node) bool { return has(n.Name) })
}

// ensureSelf asks the writer to claim this node's ID if needed and to
// republish its addresses.
func (h *Handler) ensureSelf(startup bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.id
	_, haveRecord := h.table.Record(h.p.NodeName)
	haveRecord = haveRecord && !h.selfLost && !h.released
	_, haveK8sNode := h.table.K8sMgmtIPs(h.p.NodeName)
	switch {
	case id == 0 && startup, id != 0 && !haveRecord && haveK8sNode:
		if id != 0 {
			h.log.Warn("nodesync: this node's record is missing: claiming its ID again", "node", h.p.NodeName, "id", id)
		}
		h.gen++
		h.claimGen = h.gen
	case id == 0:
		return
	case !haveRecord:
		h.log.Warn("nodesync: this node's record is missing and its Kubernetes Node is gone: not claiming again",
			"node", h.p.NodeName, "id", id)
		return
	default:
		h.gen++
	}
	h.w.Kick()
}

// PublishVppIPs has this node's VPP addresses published (with the
// management addresses of its Kubernetes Node). It only records them and
// returns: the background writer writes them, if they changed, once etcd
// answers. The error is always nil.
func (h *Handler) PublishVppIPs(_ context.Context, ips []netip.Prefix) error {
	ips = slices.Clone(ips)
	if ips == nil {
		ips = []netip.Prefix{}
	}
	h.mu.Lock()
	if h.vppIPs != nil && slices.Equal(h.vppIPs, ips) && h.done == h.gen {
		h.mu.Unlock()
		return nil
	}
	h.vppIPs = ips
	h.gen++
	h.w.Kick()
	h.mu.Unlock()
	h.checkClashes()
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
