package controller

import (
	"context"

	"contiv.dev/vpp/kubestate"
)

// Event is anything the loop applies.
type Event interface {
	// EventName is a short name for logs and metrics.
	EventName() string
}

// ResyncKind tells why a full resync runs.
type ResyncKind uint8

// The kinds of resync.
const (
	// ResyncStartup is the first full snapshot after the agent starts.
	ResyncStartup ResyncKind = iota + 1
	// ResyncRelist follows a lost or compacted watch: etcd was listed again.
	ResyncRelist
	// ResyncHealing follows a failed apply.
	ResyncHealing
	// ResyncPeriodic repairs drift made behind the agent's back.
	ResyncPeriodic
)

// String names the kind.
func (k ResyncKind) String() string {
	switch k {
	case ResyncStartup:
		return "startup"
	case ResyncRelist:
		return "relist"
	case ResyncHealing:
		return "healing"
	case ResyncPeriodic:
		return "periodic"
	}
	return "unknown"
}

// MarshalText makes a kind print as its name in JSON (status, REST).
func (k ResyncKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Snapshot is the whole cluster state at one etcd revision.
type Snapshot struct {
	Revision int64
	Objects  map[kubestate.Key]kubestate.Object
}

// ResyncEvent hands every handler the full state. Handlers rebuild their
// state from it and must not keep or mutate State.
//
// Pushed to the controller, a ResyncEvent with a State (a fresh list of
// etcd) replaces the controller's view and supersedes the changes queued
// before it; one without State asks for a resync from the controller's
// cached view (healing, periodic, on request).
//
// DataplaneRestarted says that the data plane restarted since the last
// resync and holds none of what was applied: handlers feeding renderers
// tell them before the full apply that follows. Resyncs queued together
// merge it (set when any of them has it).
//
// Listed, when set, holds State's objects in the order etcd listed them
// (by key, resource after resource), each once: the resync of a listing
// taken in as listed, no change applied to it and no value of an earlier
// view kept for a key whose stored value did not decode; nil otherwise.
// Each object is stored under its own key (Object.Key). The decoder
// allocated them in this order: a handler walking Listed rather than
// State.Objects reads memory in order. Handlers must not keep or mutate it.
type ResyncEvent struct {
	Kind               ResyncKind
	State              *Snapshot
	DataplaneRestarted bool
	Listed             []kubestate.Object
}

// EventName implements Event.
func (e *ResyncEvent) EventName() string { return "resync-" + e.Kind.String() }

// ChangeEvent is one changed key: Prev is the value before, New the value
// after (nil = absent). Changes to one key queued together are coalesced
// into one (Prev of the first, New of the last); no-op changes are dropped.
//
// The controller hands every change in the same ChangeEvent, filled
// afresh: a handler may keep its fields (the key, the objects) but not the
// event itself past Update. ASSUMPTION: the agent's handlers (ipam,
// nodesync, service's processor, syncmetrics, healthcheck, simnode's CNI)
// keep none; a new handler that must keep events copies them.
type ChangeEvent struct {
	Key      kubestate.Key
	Revision int64
	Prev     kubestate.Object
	New      kubestate.Object
}

// EventName implements Event.
func (e *ChangeEvent) EventName() string { return "change-" + string(e.Key.Resource) }

// NodeUpdate tells that a node record appeared, changed or disappeared.
// Prev or New is nil when the node did not exist before or after.
type NodeUpdate struct {
	Name string
	Prev *kubestate.VppNode
	New  *kubestate.VppNode
}

// EventName implements Event.
func (e *NodeUpdate) EventName() string { return "node-update" }

// ShutdownEvent is delivered, in reverse handler order, to the handlers that
// declare it when the controller stops. Nothing is applied after it: the
// data plane keeps its state while the agent is away.
type ShutdownEvent struct{}

// EventName implements Event.
func (e *ShutdownEvent) EventName() string { return "shutdown" }

// Handler takes in events and computes its desired state. Handlers never
// talk to VPP: the Applier does, once per batch.
type Handler interface {
	// Name names the handler in logs and status.
	Name() string
	// HandlesEvent tells whether Update should be called for ev. Resyncs
	// always go to every handler.
	HandlesEvent(ev Event) bool
	// Resync rebuilds the handler's state from a full snapshot.
	Resync(ctx context.Context, ev *ResyncEvent) error
	// Update takes in one (non-resync) event. Handlers are called in
	// their fixed order, in reverse order for removals (a ChangeEvent or
	// NodeUpdate whose New is nil).
	Update(ctx context.Context, ev Event) error
}

// ReadyHandler is implemented by handlers that must be ready (e.g. NodeSync
// has its ID) before the first apply.
type ReadyHandler interface {
	Ready() bool
}

// Applier is the single apply step of a batch: after every handler took in
// the batch, Apply pushes what changed to the data plane. full is set after
// a resync: the applier then reconciles against the data plane's real state.
type Applier interface {
	Apply(ctx context.Context, full bool) error
}

// ApplyObserver is told about every apply step, on the loop goroutine:
// ApplyStarting before the appliers run, Applied after them with their
// joined error (nil when all succeeded). Observers watch what the apply
// step does (readiness, metrics, health); they never change it.
type ApplyObserver interface {
	ApplyStarting(full bool)
	Applied(full bool, err error)
}

// Observe runs apply between the hooks of obs, each called in order, and
// returns apply's error.
func Observe(obs []ApplyObserver, full bool, apply func() error) error {
	for _, o := range obs {
		o.ApplyStarting(full)
	}
	err := apply()
	for _, o := range obs {
		o.Applied(full, err)
	}
	return err
}

// FollowUpper lets a handler queue an event derived from the one it is
// handling; it is applied in the same batch, after the current event.
// A ChangeEvent or ResyncEvent follow-up changes the cluster view and is
// queued for the next batch instead.
type FollowUpper interface {
	FollowUp(ev Event)
}
