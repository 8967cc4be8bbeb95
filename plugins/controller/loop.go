package controller

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/etcdfeed"
)

// DefaultBatchHold is the BatchHold of a controller that sets none: at
// 1000 changes a second, five changes a batch.
const DefaultBatchHold = 5 * time.Millisecond

// DefaultPeriodicResync is the interval of the periodic full reconcile the
// agent configures by default.
const DefaultPeriodicResync = 10 * time.Minute

const (
	// maxFollowUps bounds the follow-ups of one batch: a handler that
	// follows up forever must not hang the loop.
	maxFollowUps = 100_000
	// shutdownTimeout bounds the handlers' work on ShutdownEvent.
	shutdownTimeout = 5 * time.Second
)

// ErrRunTwice is returned by a second call of Run.
var ErrRunTwice = errors.New("controller: Run called twice")

// Params configures a Controller.
type Params struct {
	// Logger receives the controller's logs; nil discards them.
	Logger *slog.Logger
	// Client is the etcd client the watcher lists and watches through. Nil
	// runs without a watcher: the caller then pushes the startup
	// ResyncEvent (with a State) itself, e.g. to render offline.
	Client *clientv3.Client
	// Handlers take in every event, in this order.
	Handlers []Handler
	// Appliers are called once per batch, after the handlers, in this order.
	Appliers []Applier
	// ApplyObservers are told about every apply step (Observe).
	ApplyObservers []ApplyObserver
	// MinBatchInterval is the least time between two batches; 0 applies as
	// soon as possible.
	MinBatchInterval time.Duration
	// BatchHold batches changes when they queue up: once the loop found
	// more than one event queued, it applies next no sooner than BatchHold
	// after its last apply, taking in what queued meanwhile, for as long as
	// each such batch holds more than one. A lone change (nothing else
	// queued with it) is applied at once, so a change's latency grows only
	// while changes come faster than the loop takes them in one by one.
	// 0 takes DefaultBatchHold; negative turns it off.
	BatchHold time.Duration
	// HealingBackoff paces the healing resyncs after failures and the
	// re-listing of etcd while it is unreachable (default 100ms to 30s).
	HealingBackoff Backoff
	// PeriodicResync is the interval of the full reconcile that repairs
	// drift made behind the agent's back; 0 turns it off (see
	// DefaultPeriodicResync).
	PeriodicResync time.Duration
	// Resources are the kinds of objects watched (default kubestate.Resources).
	Resources []kubestate.Resource
	// PodNode, when set, is the node whose pods are watched: only the keys
	// under kubestate.PodPrefix(PodNode) are listed, watched and decoded.
	// Empty watches every node's pods.
	PodNode string
	// RelistJitter spreads the re-listing after etcd comes back over a
	// random delay below it, so that thousands of agents do not all list
	// at once after an etcd restart; 0 re-lists at once. Most reconnections
	// need no re-list at all: the watch resumes when etcd kept its history.
	RelistJitter time.Duration
	// ClusterSize, when set, is the number of nodes: the re-listing
	// spreads over one RelistJitter per 500 nodes.
	ClusterSize func() int
	// HistoryCheck is how often a running watch checks that etcd still
	// holds the history it follows (the newest put it read, at its
	// revision): one read of one key. A reconnection checks it anyway;
	// behind an etcd gRPC proxy, whose agents' connections outlive an etcd
	// restored from a backup or wiped, nothing else notices. A lost
	// history is listed again (after RelistJitter's spread). Zero means
	// DefaultHistoryCheck; negative, never.
	HistoryCheck time.Duration
	// RequireSynced takes in only listings that are a complete reflector
	// output: etcd holds the layout marker and a sync marker
	// (kubestate.Completeness) no older than the one taken in last
	// (kubestate.MarkerHistory: etcd's order, never a clock's; at the same
	// marker, a revision no older).
	// Any other listing is held: the handlers keep the last state taken
	// in, Status.Held says why (not ready), and etcd is listed again when
	// the sync marker is written. A watched wipe (the marker deleted, or
	// keys deleted at a revision without it) is not taken in either. The
	// agent sets it.
	RequireSynced bool
}

// Controller is the agent's event loop: one goroutine takes queued events
// in batches, hands them to the handlers and calls the appliers once per
// batch. Every method is safe from any goroutine.
type Controller struct {
	p        Params
	log      *slog.Logger
	reversed []Handler
	q        *queue
	st       *status
	feed     *etcdfeed.Feed // nil without a Client
	// hooks are the feed's test hooks, set by tests before Run.
	hooks   *etcdfeed.Hooks
	running atomic.Bool

	fmu     sync.Mutex
	inBatch bool
	follow  []Event

	// Owned by the loop goroutine.
	view       *view
	heal       healer
	healQueued bool    // a healing resync is queued, not yet taken in
	readyBo    *delays // polls of ReadyHandlers before the first apply
	readyAlarm alarm
	pace       alarm // MinBatchInterval, BatchHold
	lastApply  time.Time
	queuedUp   bool      // the last batch taken in held more than one event
	batchStart time.Time // first compute since the last apply
	started    bool      // the startup listing has been taken in
	dirty      bool      // taken in but not applied
	full       bool      // the next apply reconciles fully
	unhealthy  bool      // a handler failed since the last resync
	followUps  int       // follow-ups delivered in this batch
	// tally is what the loop counted since it last published its status
	// (publish): one lock a batch, not one an event.
	tally struct{ events, noOps uint64 }
	// wakes counts the loop's wake-ups by a push (read by tests once Run
	// returned).
	wakes int
}

var _ FollowUpper = (*Controller)(nil)

// New returns a controller; Run starts it.
func New(p Params) *Controller {
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	p.HealingBackoff = p.HealingBackoff.withDefaults()
	p.MinBatchInterval = max(p.MinBatchInterval, 0)
	if p.BatchHold == 0 {
		p.BatchHold = DefaultBatchHold
	}
	p.BatchHold = max(p.BatchHold, 0)
	p.PeriodicResync = max(p.PeriodicResync, 0)
	if len(p.Resources) == 0 {
		p.Resources = kubestate.Resources
	}
	p.Handlers = slices.Clone(p.Handlers)
	p.Resources = slices.Clone(p.Resources)
	c := &Controller{
		p:        p,
		log:      p.Logger,
		reversed: slices.Clone(p.Handlers),
		q:        newQueue(),
		st:       newStatus(),
		view:     newView(),
		heal:     healer{bo: newBackoff(p.HealingBackoff)},
		readyBo:  newBackoff(Backoff{Initial: 10 * time.Millisecond, Max: time.Second}),
		hooks:    &etcdfeed.Hooks{},
	}
	slices.Reverse(c.reversed)
	if p.Client != nil {
		c.feed = etcdfeed.New(etcdfeed.Params{
			Logger: p.Logger, Client: p.Client, Resources: p.Resources, PodNode: p.PodNode,
			Backoff:      etcdfeed.Backoff{Initial: p.HealingBackoff.Initial, Max: p.HealingBackoff.Max},
			RelistJitter: p.RelistJitter, ClusterSize: p.ClusterSize,
			RequireSynced: p.RequireSynced, HistoryCheck: historyCheck(p.HistoryCheck), Hooks: c.hooks,
		}, feedSink{c.q})
	}
	return c
}

// feedSink queues what the etcd feed hands on for the loop.
type feedSink struct{ q *queue }

// Resync queues l as a startup or relist resync: it supersedes the
// changes queued before it.
func (s feedSink) Resync(l *etcdfeed.Listing, startup bool) {
	kind := ResyncRelist
	if startup {
		kind = ResyncStartup
	}
	s.q.pushResync(kind, &listing{snap: &Snapshot{Revision: l.Revision, Objects: l.Objects}, bad: l.Bad, listed: l.Listed})
}

// Changes queues chs, one wake-up of the loop.
func (s feedSink) Changes(chs []etcdfeed.Change) { s.q.pushFed(chs) }

// Run runs the loop and the etcd watcher until ctx is cancelled, then
// delivers ShutdownEvent and returns once every goroutine it started has
// ended. It may be called once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if c.feed != nil {
		wg.Go(func() { _ = c.feed.Run(ctx) })
	}
	c.loop(ctx)
	cancel()
	wg.Wait()
	return nil
}

// Push queues ev for the loop; it never blocks. A ChangeEvent's Prev is
// ignored: the controller knows what the handlers hold.
func (c *Controller) Push(ev Event) {
	switch e := ev.(type) {
	case nil:
	case *ChangeEvent:
		if e != nil {
			c.pushChange(e)
		}
	case *ResyncEvent:
		if e != nil {
			c.pushResync(e)
		}
	default:
		c.q.pushEvent(ev)
	}
}

// pushChange queues a pushed change. Its object is encoded as etcd stores
// it, so that an object that cannot be stored is refused.
func (c *Controller) pushChange(e *ChangeEvent) {
	ch := change{key: e.Key, rev: e.Revision}
	if e.New != nil {
		if got := e.New.Key(); got != e.Key {
			c.log.Error("change dropped: value names another key", "key", e.Key.String(), "valueKey", got.String())
			return
		}
		if _, err := kubestate.Encode(e.New); err != nil {
			c.log.Error("change dropped", "key", e.Key.String(), "err", err)
			return
		}
		ch.obj = e.New
	}
	c.q.pushChange(ch)
}

// pushResync queues a pushed resync; a snapshot's objects are encoded as
// pushChange's.
func (c *Controller) pushResync(e *ResyncEvent) {
	kind := e.Kind
	if kind < ResyncStartup || kind > ResyncPeriodic {
		kind = ResyncPeriodic
		if e.State != nil {
			kind = ResyncRelist
		}
	}
	if e.State == nil {
		c.q.pushResyncOf(kind, nil, e.DataplaneRestarted)
		return
	}
	l := newListing(e.State.Revision, len(e.State.Objects))
	for k, o := range e.State.Objects {
		if _, err := kubestate.Encode(o); err != nil {
			c.log.Error("snapshot object dropped", "key", k.String(), "err", err)
			continue
		}
		l.put(k, o)
	}
	c.q.pushResyncOf(kind, l, e.DataplaneRestarted)
}

// FollowUp implements FollowUpper: called by a handler during a batch, ev
// is delivered in the same batch after the current event; otherwise (and
// for ChangeEvent and ResyncEvent) it is pushed.
func (c *Controller) FollowUp(ev Event) {
	switch ev.(type) {
	case nil:
		return
	case *ChangeEvent, *ResyncEvent:
		c.Push(ev)
		return
	}
	c.fmu.Lock()
	if c.inBatch {
		c.follow = append(c.follow, ev)
		c.fmu.Unlock()
		return
	}
	c.fmu.Unlock()
	c.q.pushEvent(ev)
}

// RequestRelist asks the etcd feed to list etcd again and resync every
// handler from the fresh listing (e.g. on an operator's request).
func (c *Controller) RequestRelist() {
	if c.feed != nil {
		c.feed.RequestRelist()
	}
}

func (c *Controller) loop(ctx context.Context) {
	var periodic <-chan time.Time
	if c.p.PeriodicResync > 0 {
		t := time.NewTicker(c.p.PeriodicResync)
		defer t.Stop()
		periodic = t.C
	}
	defer c.heal.alarm.stop()
	defer c.readyAlarm.stop()
	defer c.pace.stop()
	for {
		// While a batch is held back, what is queued waits for the pace
		// alarm: a push does not wake the loop only to find it must wait
		// (the token it leaves wakes the loop once after).
		wake := c.q.wake
		if c.pace.on {
			wake = nil
		}
		select {
		case <-ctx.Done():
			c.shutdown(ctx)
			return
		case <-wake:
			c.wakes++
		case <-periodic:
			c.q.pushResync(ResyncPeriodic, nil)
		case <-c.heal.alarm.C():
			c.heal.alarm.fired()
			c.healQueued = true
			c.q.pushResync(ResyncHealing, nil)
		case <-c.readyAlarm.C():
			c.readyAlarm.fired()
		case <-c.pace.C():
			c.pace.fired()
		}
		c.step(ctx)
	}
}

// step takes in what is queued, if anything may be taken in, and applies
// what was taken in, if it may be applied.
func (c *Controller) step(ctx context.Context) {
	if !c.started && !c.q.hasListing() {
		return // nothing before the startup snapshot
	}
	if wait := c.untilNext(); wait > 0 {
		if !c.pace.on && (c.dirty || c.q.depth() > 0) { // else the next push wakes the loop
			c.pace.set(wait)
			c.st.update(func(s *Status) { s.PacedBatches++ })
		}
		return
	}
	b := c.q.drain()
	if !b.empty() {
		c.queuedUp = b.resync == nil && len(b.entries) > 1
		if !c.dirty {
			c.batchStart = time.Now()
		}
		c.compute(ctx, b)
		c.q.recycle(b.entries)
	}
	if c.dirty && c.apply(ctx) {
		return // apply published
	}
	if !b.empty() {
		c.publish(false)
	}
}

// publish writes the loop's part of the status: what it counted since the
// last publish, its view's revision, a pending healing, and one more
// batch if one was just applied.
func (c *Controller) publish(applied bool) {
	c.st.update(func(s *Status) {
		s.Events += c.tally.events
		s.NoOps += c.tally.noOps
		if applied {
			s.Batches++
		}
		s.Revision = c.view.snap.Revision
		s.HealingPending = c.heal.alarm.on || c.healQueued
	})
	c.tally.events, c.tally.noOps = 0, 0
}

// untilNext is how long the next batch must wait; none (≤ 0, without
// reading the clock) when no interval applies.
func (c *Controller) untilNext() time.Duration {
	iv := c.interval()
	if iv == 0 {
		return 0
	}
	return time.Until(c.lastApply.Add(iv))
}

// interval is the least time from the last apply to the next batch:
// MinBatchInterval, or BatchHold while changes queue up.
func (c *Controller) interval() time.Duration {
	if c.queuedUp {
		return max(c.p.MinBatchInterval, c.p.BatchHold)
	}
	return c.p.MinBatchInterval
}

// compute hands one batch to the handlers.
func (c *Controller) compute(ctx context.Context, b batch) {
	c.fmu.Lock()
	c.inBatch = true
	c.fmu.Unlock()
	defer func() {
		c.fmu.Lock()
		c.inBatch = false
		c.follow = nil
		c.fmu.Unlock()
	}()
	c.followUps = 0
	if b.resync != nil {
		c.resync(ctx, b)
		return
	}
	for i := range b.entries {
		e := &b.entries[i]
		if !e.isChange() {
			c.deliver(ctx, e.ev)
			continue
		}
		ev, out := c.view.apply(&e.ch)
		switch out {
		case noop:
			c.tally.noOps++
			if c.log.Enabled(ctx, slog.LevelDebug) {
				c.log.Debug("no-op change dropped", "key", e.ch.key.String(), "rev", e.ch.rev)
			}
		case stale:
			if c.log.Enabled(ctx, slog.LevelDebug) {
				c.log.Debug("stale change dropped", "key", e.ch.key.String(), "rev", e.ch.rev, "listedRev", c.view.listedRev)
			}
		case applied:
			c.dirty = true
			c.deliver(ctx, ev)
			c.view.done()
		}
	}
}

// resync takes in a batch holding a resync: the view takes in the listing
// and every queued change, the handlers resync from it, then the batch's
// other events are delivered in order.
func (c *Controller) resync(ctx context.Context, b batch) {
	r := b.resync
	var listed []kubestate.Object
	if r.list != nil {
		if len(r.list.bad) == 0 {
			listed = r.list.listed
		}
		c.view.replace(r.list)
	}
	for i := range b.entries {
		if e := &b.entries[i]; e.isChange() {
			if _, out := c.view.apply(&e.ch); out == applied {
				listed = nil
			}
		}
	}
	c.view.done()
	if len(listed) != len(c.view.snap.Objects) {
		listed = nil
	}
	ev := &ResyncEvent{Kind: r.kind, State: c.view.snap, DataplaneRestarted: r.restarted, Listed: listed}
	c.log.Info("resync", "kind", r.kind, "rev", ev.State.Revision, "objects", len(ev.State.Objects))
	c.started, c.dirty, c.full = true, true, true
	c.unhealthy, c.healQueued = false, false
	for _, h := range c.p.Handlers {
		if err := c.guard(h, ev, func() error { return h.Resync(ctx, ev) }); err != nil {
			c.fail(err)
		}
	}
	c.st.update(func(s *Status) {
		s.Resyncs++
		s.LastResync = time.Now()
		s.LastResyncKind = r.kind
	})
	c.deliverFollowUps(ctx)
	for _, e := range b.entries {
		if !e.isChange() {
			c.deliver(ctx, e.ev)
		}
	}
}

// fail records a handler or apply error and schedules a healing resync.
func (c *Controller) fail(err error) {
	c.log.Error("controller error; healing resync scheduled", "err", err)
	c.st.setError(err)
	c.unhealthy = true
	c.heal.schedule()
	c.st.update(func(s *Status) { s.HealingPending = true })
}

// apply calls every Applier once, unless the first apply still waits for
// a ReadyHandler; it tells whether it did (and published the status).
func (c *Controller) apply(ctx context.Context) bool {
	if !c.st.ready.Load() {
		if name := c.notReady(); name != "" {
			if !c.readyAlarm.on {
				d := c.readyBo.delay()
				c.log.Debug("first apply waits for a handler", "handler", name, "retryIn", d)
				c.readyAlarm.set(d)
			}
			return false
		}
	}
	c.readyAlarm.stop()
	c.readyBo.reset()
	full := c.full
	c.dirty, c.full = false, false
	var errs []error
	_ = Observe(c.p.ApplyObservers, full, func() error {
		for _, a := range c.p.Appliers {
			if err := c.applyOne(ctx, a, full); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	c.lastApply = time.Now()
	c.st.observeBatch(full, c.lastApply.Sub(c.batchStart))
	healed := full && !c.unhealthy && len(errs) == 0
	switch {
	case len(errs) > 0 && ctx.Err() == nil:
		c.fail(errors.Join(errs...))
	case healed:
		c.heal.healed()
	}
	c.publish(true) // before ready: a ready controller shows its first batch
	if healed && !c.st.ready.Swap(true) {
		c.log.Info("first full sync applied: ready")
	}
	return true
}

// notReady names a ReadyHandler that is not ready, or returns "".
func (c *Controller) notReady() string {
	for _, h := range c.p.Handlers {
		if r, ok := h.(ReadyHandler); ok && !r.Ready() {
			return h.Name()
		}
	}
	return ""
}
