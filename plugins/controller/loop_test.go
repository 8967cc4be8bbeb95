package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

func TestHandlersRunInOrderAndInReverseForRemovals(t *testing.T) {
	_, cli := testEtcd(t)
	log := &callLog{}
	a, b, c := newRecorder("A", log), newRecorder("B", log), newRecorder("C", log)
	c.handles = func(ev Event) bool { _, node := ev.(*NodeUpdate); return !node } // C declines node updates
	ctl := New(Params{Client: cli, Handlers: []Handler{a, b, c}, Appliers: []Applier{&applier{log: log}}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	step := func(what string, do func(), want ...string) {
		t.Helper()
		before := len(log.get())
		do()
		eventually(t, what, func() bool { return len(log.get()) >= before+len(want) })
		if got := log.get()[before:]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: calls %q, want %q", what, got, want)
		}
	}
	if got, want := log.get(), []string{"A:resync-startup", "B:resync-startup", "C:resync-startup", "apply:true"}; !reflect.DeepEqual(got, want) {
		t.Errorf("startup: calls %q, want %q", got, want)
	}
	step("put", func() { put(t, cli, ns("x", "1")) }, "A:change:x", "B:change:x", "C:change:x", "apply:false")
	step("delete", func() { del(t, cli, nsKey("x")) }, "C:change:x", "B:change:x", "A:change:x", "apply:false")
	node := &kubestate.VppNode{Name: "n1", ID: 1}
	step("node added", func() { ctl.Push(&NodeUpdate{Name: "n1", New: node}) }, "A:node-update", "B:node-update", "apply:false")
	step("node removed", func() { ctl.Push(&NodeUpdate{Name: "n1", Prev: node}) }, "B:node-update", "A:node-update", "apply:false")
	for _, r := range []*recorder{a, b, c} {
		r.checkConsistent(t)
	}
}

// readyGate is a ReadyHandler that counts how often it was asked.
type readyGate struct {
	*recorder
	ready atomic.Bool
	polls atomic.Int64
}

func (g *readyGate) Ready() bool {
	g.polls.Add(1)
	return g.ready.Load()
}

func TestNothingAppliedBeforeSnapshotAndReadiness(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	put(t, cli, ns("b", "1"))
	h := &readyGate{recorder: newRecorder("nodesync", nil)}
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{h}, Appliers: []Applier{app}})
	// Queued before the controller runs, let alone has a snapshot.
	ctl.Push(&NodeUpdate{Name: "early"})
	start(t, ctl)

	eventually(t, "snapshot and early event taken in, readiness polled twice", func() bool {
		h.mu.Lock()
		n := len(h.others)
		h.mu.Unlock()
		return n == 1 && h.polls.Load() >= 2
	})
	view, resyncs, _ := h.snapshot()
	if !reflect.DeepEqual(resyncs, []ResyncKind{ResyncStartup}) || len(view) != 2 {
		t.Fatalf("resyncs %v view %v, want the startup snapshot of a and b", resyncs, view)
	}
	if n := len(app.calls()); n != 0 || ctl.Ready() {
		t.Fatalf("%d applies (ready %t) while a handler is not ready", n, ctl.Ready())
	}

	// Changes go on being taken in; still nothing applied.
	put(t, cli, ns("c", "1"))
	eventually(t, "c taken in", func() bool { return h.holds(nsKey("c"), ns("c", "1")) })
	polls := h.polls.Load()
	eventually(t, "readiness polled again", func() bool { return h.polls.Load() > polls })
	if n := len(app.calls()); n != 0 {
		t.Fatalf("%d applies while a handler is not ready", n)
	}

	h.ready.Store(true)
	eventually(t, "first apply", func() bool { return len(app.calls()) == 1 })
	if got := app.calls(); !got[0] {
		t.Errorf("first apply full=%t, want a full apply", got[0])
	}
	eventually(t, "ready", ctl.Ready)
	put(t, cli, ns("d", "1"))
	eventually(t, "second apply", func() bool { return len(app.calls()) == 2 })
	if got := app.calls(); got[1] {
		t.Error("an incremental batch applied with full=true")
	}
	h.checkConsistent(t)
}

func TestQueuedChangesCoalesce(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("k", "0"))
	put(t, cli, ns("same", "0"))
	g := newGate(nsKey("gate"))
	rec := newRecorder("rec", nil)
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{g, rec}, Appliers: []Applier{app}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	put(t, cli, ns("gate", "1"))
	<-g.entered // the loop is held: everything below queues up
	for i := 1; i <= 1000; i++ {
		put(t, cli, ns("k", fmt.Sprint(i)))
	}
	put(t, cli, ns("same", "changed"))
	put(t, cli, ns("same", "0")) // back to the value the handlers hold
	put(t, cli, ns("tmp", "1"))
	del(t, cli, nsKey("tmp")) // created then deleted
	last := put(t, cli, ns("last", "1"))
	eventually(t, "watcher queued everything", func() bool { return ctl.Status().WatchRevision >= last })
	if d := ctl.Status().QueueDepth; d != 4 {
		t.Errorf("queue depth %d, want 4 (k, same, tmp, last)", d)
	}
	applies := len(app.calls())
	close(g.release)
	eventually(t, "last taken in", func() bool { return rec.holds(nsKey("last"), ns("last", "1")) })

	_, _, changes := rec.snapshot()
	var got []string
	for _, c := range changes[1:] { // changes[0] is the gate
		got = append(got, c.Key.Name)
	}
	if !reflect.DeepEqual(got, []string{"k", "last"}) {
		t.Fatalf("changes after the gate: %v, want k then last", got)
	}
	if k := changes[1]; !reflect.DeepEqual(k.Prev, ns("k", "0")) || !reflect.DeepEqual(k.New, ns("k", "1000")) {
		t.Errorf("k: prev %v new %v, want the first prev and the last new", k.Prev, k.New)
	}
	if n := ctl.Status().NoOps; n != 2 {
		t.Errorf("no-ops %d, want 2 (same, tmp)", n)
	}
	eventually(t, "apply", func() bool { return len(app.calls()) >= applies+2 })
	if n := len(app.calls()); n != applies+2 {
		t.Errorf("%d applies after release, want 2 (the gate's batch, then one for everything queued)", n-applies)
	}
	rec.checkConsistent(t)
}

// follower follows up every change of key with a mark event.
type follower struct {
	ctl *Controller
	key kubestate.Key
}

type markEvent struct{ of string }

func (e *markEvent) EventName() string { return "mark-" + e.of }

func (f *follower) Name() string                               { return "follower" }
func (f *follower) HandlesEvent(ev Event) bool                 { _, ok := ev.(*ChangeEvent); return ok }
func (f *follower) Resync(context.Context, *ResyncEvent) error { return nil }
func (f *follower) Update(_ context.Context, ev Event) error {
	if e := ev.(*ChangeEvent); e.Key == f.key {
		f.ctl.FollowUp(&markEvent{of: e.Key.Name})
	}
	return nil
}

func TestFollowUpsRunInTheSameBatchAfterTheirEvent(t *testing.T) {
	_, cli := testEtcd(t)
	log := &callLog{}
	g := newGate(nsKey("gate"))
	f := &follower{key: nsKey("x")}
	rec := newRecorder("rec", log)
	ctl := New(Params{Client: cli, Handlers: []Handler{g, f, rec}, Appliers: []Applier{&applier{log: log}}})
	f.ctl = ctl
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	put(t, cli, ns("gate", "1"))
	<-g.entered
	put(t, cli, ns("x", "1"))
	last := put(t, cli, ns("y", "1"))
	eventually(t, "watcher queued x and y", func() bool { return ctl.Status().WatchRevision >= last })
	close(g.release)
	eventually(t, "y applied", func() bool {
		return slices.Contains(log.get(), "rec:change:y") && strings.HasPrefix(log.get()[len(log.get())-1], "apply")
	})

	calls := log.get()
	i := slices.Index(calls, "rec:change:x")
	if i < 0 || !reflect.DeepEqual(calls[i:], []string{"rec:change:x", "rec:mark-x", "rec:change:y", "apply:false"}) {
		t.Errorf("calls %q, want x, its follow-up, y, then one apply", calls)
	}
}

func TestFailuresHealWithBackoff(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	rec := newRecorder("rec", nil)
	const failures = 6
	app := &applier{fail: func(n int) error {
		if n <= failures {
			return fmt.Errorf("injected failure %d", n)
		}
		return nil
	}}
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{app},
		HealingBackoff: Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready after healing", ctl.Ready)

	calls := app.calls()
	if len(calls) != failures+1 || slices.Contains(calls, false) {
		t.Errorf("applies %v, want %d full ones", calls, failures+1)
	}
	_, resyncs, _ := rec.snapshot()
	want := []ResyncKind{ResyncStartup}
	for range failures {
		want = append(want, ResyncHealing)
	}
	if !reflect.DeepEqual(resyncs, want) {
		t.Errorf("resyncs %v, want %v", resyncs, want)
	}
	st := ctl.Status()
	if st.Errors != failures || !strings.Contains(st.LastError, fmt.Sprintf("injected failure %d", failures)) || st.LastErrorTime.IsZero() || st.HealingPending {
		t.Errorf("status %+v", st)
	}
	if st.LastResyncKind != ResyncHealing {
		t.Errorf("last resync %v", st.LastResyncKind)
	}
}

// flaky fails its Update once for a chosen key.
type flaky struct {
	*recorder
	key    kubestate.Key
	failed atomic.Bool
}

func (f *flaky) Update(ctx context.Context, ev Event) error {
	if e, ok := ev.(*ChangeEvent); ok && e.Key == f.key && !f.failed.Swap(true) {
		return errors.New("injected handler failure")
	}
	return f.recorder.Update(ctx, ev)
}

func TestHandlerErrorHealsFromTheCachedView(t *testing.T) {
	_, cli := testEtcd(t)
	f := &flaky{recorder: newRecorder("flaky", nil), key: nsKey("bad")}
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{f}, Appliers: []Applier{app},
		HealingBackoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	put(t, cli, ns("bad", "1"))
	// The failed update is not in the handler's view; the healing resync
	// from the controller's view brings it in.
	eventually(t, "healing resync", func() bool { return f.sawResync(ResyncHealing) })
	eventually(t, "bad held", func() bool { return f.holds(nsKey("bad"), ns("bad", "1")) })
	// Applies: the startup, the failed batch, the healing (full).
	eventually(t, "healing applied", func() bool { calls := app.calls(); return len(calls) >= 3 && calls[len(calls)-1] })
	if calls := app.calls(); !reflect.DeepEqual(calls, []bool{true, false, true}) {
		t.Errorf("applies %v, want startup, the failed batch, the healing", calls)
	}
	if ctl.Status().HealingPending {
		t.Error("healing still pending after a successful healing")
	}
	if st := ctl.Status(); st.Errors != 1 || !strings.Contains(st.LastError, "handler flaky: change-namespace: injected handler failure") {
		t.Errorf("status %+v", st)
	}
}

// panicky panics on its first update.
type panicky struct{ done atomic.Bool }

func (p *panicky) Name() string                               { return "panicky" }
func (p *panicky) HandlesEvent(Event) bool                    { return true }
func (p *panicky) Resync(context.Context, *ResyncEvent) error { return nil }
func (p *panicky) Update(context.Context, Event) error {
	if !p.done.Swap(true) {
		panic("injected panic")
	}
	return nil
}

func TestHandlerPanicDoesNotStopTheLoop(t *testing.T) {
	_, cli := testEtcd(t)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{&panicky{}, rec},
		HealingBackoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	put(t, cli, ns("a", "1"))
	put(t, cli, ns("b", "1"))
	eventually(t, "both taken in", func() bool { return rec.holds(nsKey("b"), ns("b", "1")) && rec.holds(nsKey("a"), ns("a", "1")) })
	eventually(t, "healed", func() bool { return rec.sawResync(ResyncHealing) && !ctl.Status().HealingPending })
	if st := ctl.Status(); !strings.Contains(st.LastError, "panic: injected panic") {
		t.Errorf("last error %q", st.LastError)
	}
}

func TestPeriodicResync(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	log := &callLog{}
	rec := newRecorder("rec", log)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{&applier{log: log}},
		PeriodicResync: 5 * time.Millisecond})
	start(t, ctl)
	eventually(t, "a periodic resync applied", func() bool {
		calls := log.get()
		i := slices.Index(calls, "rec:resync-periodic")
		return i >= 0 && slices.Contains(calls[i:], "apply:true")
	})
	view, _, _ := rec.snapshot()
	if !reflect.DeepEqual(view, map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "1")}) {
		t.Errorf("view after periodic resync %v", view)
	}
}

// shutdownRecorder takes ShutdownEvent.
type shutdownRecorder struct{ *recorder }

func (s shutdownRecorder) HandlesEvent(Event) bool { return true }

func TestCleanShutdown(t *testing.T) {
	_, cli := testEtcd(t)
	log := &callLog{}
	a, b := shutdownRecorder{newRecorder("A", log)}, shutdownRecorder{newRecorder("B", log)}
	ctl := New(Params{Client: cli, Handlers: []Handler{a, b}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	eventually(t, "ready", ctl.Ready)
	if err := ctl.Run(ctx); !errors.Is(err, ErrRunTwice) {
		t.Errorf("second Run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	calls := log.get()
	if got := calls[len(calls)-2:]; !reflect.DeepEqual(got, []string{"B:shutdown", "A:shutdown"}) {
		t.Errorf("last calls %q, want shutdown in reverse order", got)
	}
	// goleak in TestMain checks that no goroutine is left behind.
}

func TestRunsWithoutEtcdOnAPushedSnapshot(t *testing.T) {
	rec := newRecorder("rec", nil)
	app := &applier{}
	ctl := New(Params{Handlers: []Handler{rec}, Appliers: []Applier{app}})
	start(t, ctl)
	ctl.Push(&ChangeEvent{Key: nsKey("early"), New: ns("early", "1")}) // superseded by the snapshot
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{
		nsKey("a"): ns("a", "1"),
	}}})
	eventually(t, "ready", ctl.Ready)
	ctl.Push(&ChangeEvent{Key: nsKey("b"), New: ns("b", "1")})
	ctl.Push(&ChangeEvent{Key: nsKey("liar"), New: ns("other", "1")}) // refused: names another key
	ctl.Push(&ChangeEvent{Key: nsKey("a")})
	eventually(t, "changes taken in", func() bool { return rec.holds(nsKey("b"), ns("b", "1")) && rec.holds(nsKey("a"), nil) })
	view, _, _ := rec.snapshot()
	if !reflect.DeepEqual(view, map[kubestate.Key]kubestate.Object{nsKey("b"): ns("b", "1")}) {
		t.Errorf("view %v", view)
	}
	rec.checkConsistent(t)
}

func TestMinBatchIntervalHoldsBatchesBack(t *testing.T) {
	_, cli := testEtcd(t)
	rec := newRecorder("rec", nil)
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{app}, MinBatchInterval: time.Hour})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	// The startup batch was applied; the next may not come for an hour: the
	// changes wait in the queue, coalescing, untouched by the handlers.
	put(t, cli, ns("a", "1"))
	last := put(t, cli, ns("a", "2"))
	eventually(t, "watcher queued a", func() bool { return ctl.Status().WatchRevision >= last })
	if st := ctl.Status(); st.QueueDepth != 1 || st.Batches != 1 {
		t.Errorf("status %+v: want one queued change and only the startup batch applied", st)
	}
	if view, _, _ := rec.snapshot(); len(view) != 0 || len(app.calls()) != 1 {
		t.Errorf("view %v, %d applies: a batch ran before its interval", view, len(app.calls()))
	}
	// Cleanup stops the controller while it waits: Run must return.
}

// TestBatchHoldBatchesOnlyWhatQueuesUp: changes written one after the
// other, each applied before the next, are applied at once however long
// BatchHold is; once two changes queued up together (one transaction),
// the next apply waits for BatchHold (an hour here: the change after them
// cannot have been applied when the test looks).
func TestBatchHoldBatchesOnlyWhatQueuesUp(t *testing.T) {
	_, cli := testEtcd(t)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, BatchHold: time.Hour})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	for _, n := range []string{"a", "b", "c", "d"} {
		put(t, cli, ns(n, "1"))
		eventually(t, n+" applied at once", func() bool { return rec.holds(nsKey(n), ns(n, "1")) })
	}
	if st := ctl.Status(); st.PacedBatches != 0 {
		t.Errorf("status %+v: a lone change was held back", st)
	}
	putTogether(t, cli, ns("e", "1"), ns("f", "1"))
	eventually(t, "e and f applied at once", func() bool { return rec.holds(nsKey("f"), ns("f", "1")) })
	last := put(t, cli, ns("g", "1"))
	eventually(t, "g held back", func() bool { return ctl.Status().PacedBatches == 1 })
	if st := ctl.Status(); st.QueueDepth != 1 || st.WatchRevision < last || rec.holds(nsKey("g"), ns("g", "1")) {
		t.Errorf("status %+v: the change after two queued up was not held back", st)
	}
}

// TestBatchHoldEndsWithTheBurst: once a held batch holds a lone change, the
// next change is applied at once again.
func TestBatchHoldEndsWithTheBurst(t *testing.T) {
	_, cli := testEtcd(t)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, BatchHold: time.Second})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	putTogether(t, cli, ns("a", "1"), ns("b", "1"))
	eventually(t, "a and b applied", func() bool { return rec.holds(nsKey("b"), ns("b", "1")) })
	put(t, cli, ns("c", "1")) // held: a lone change, which ends the burst
	eventually(t, "c applied", func() bool { return rec.holds(nsKey("c"), ns("c", "1")) })
	paced := ctl.Status().PacedBatches
	put(t, cli, ns("d", "1"))
	eventually(t, "d applied", func() bool { return rec.holds(nsKey("d"), ns("d", "1")) })
	if got := ctl.Status().PacedBatches; got != paced {
		t.Errorf("%d batches held back before d, %d after: d was held too", paced, got)
	}
	rec.checkConsistent(t)
}

// putTogether stores objs in one transaction: their changes reach the
// watcher in one response.
func putTogether(t *testing.T, cli *clientv3.Client, objs ...kubestate.Object) {
	t.Helper()
	ops := make([]clientv3.Op, 0, len(objs))
	for _, o := range objs {
		b, err := kubestate.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(o.Key().String(), string(b)))
	}
	if _, err := cli.Txn(ctxT(t)).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestHandlerPanicLeavesTheOthersTheEvent: the handlers after one that
// panicked take in the event all the same, in the same batch (no healing
// resync brings it: its backoff is an hour).
func TestHandlerPanicLeavesTheOthersTheEvent(t *testing.T) {
	before, after := newRecorder("before", nil), newRecorder("after", nil)
	ctl := New(Params{Handlers: []Handler{before, &panicky{}, after},
		HealingBackoff: Backoff{Initial: time.Hour, Max: time.Hour}})
	start(t, ctl)
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	eventually(t, "ready", ctl.Ready)
	ctl.Push(&ChangeEvent{Key: nsKey("a"), New: ns("a", "1")})
	eventually(t, "after took a in", func() bool { return after.holds(nsKey("a"), ns("a", "1")) })
	if !before.holds(nsKey("a"), ns("a", "1")) {
		t.Error("the handler before the panic did not take a in")
	}
	if st := ctl.Status(); st.Errors != 1 || !strings.Contains(st.LastError, "handler panicky: change-namespace: panic: injected panic") || st.Resyncs != 1 {
		t.Errorf("status %+v", st)
	}
	before.checkConsistent(t)
	after.checkConsistent(t)
}

// TestHeldBatchIsNotWokenByPushes: while a batch is held back (BatchHold,
// an hour here), changes pushed meanwhile wait for the hold to end without
// waking the loop.
func TestHeldBatchIsNotWokenByPushes(t *testing.T) {
	rec := newRecorder("rec", nil)
	ctl := New(Params{Handlers: []Handler{rec}, BatchHold: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ctl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	eventually(t, "ready", ctl.Ready)
	// Two changes queued up together: the next batch is held.
	a, b := ns("a", "1"), ns("b", "1")
	ctl.q.pushChanges([]change{{key: a.Key(), obj: a}, {key: b.Key(), obj: b}})
	eventually(t, "a and b applied", func() bool { return rec.holds(b.Key(), b) })
	ctl.Push(&ChangeEvent{Key: nsKey("c"), New: ns("c", "1")})
	eventually(t, "c held back", func() bool { return ctl.Status().PacedBatches == 1 })
	// wakes is the loop's: read once Run returned.
	held := ctl.Status().QueueDepth
	for i := range 20 {
		ctl.Push(&ChangeEvent{Key: nsKey(fmt.Sprint("d", i)), New: ns(fmt.Sprint("d", i), "1")})
	}
	eventually(t, "all queued", func() bool { return ctl.Status().QueueDepth == held+20 })
	cancel()
	<-done
	// Wake-ups: the startup listing's, a and b's, c's: none for the d's.
	if ctl.wakes > 3 {
		t.Errorf("%d wake-ups of the loop: pushes woke it while the batch was held", ctl.wakes)
	}
	if rec.holds(nsKey("c"), ns("c", "1")) {
		t.Error("c applied during the hold")
	}
}

// TestLoopAllocatesNothingPerChange: a change taken in from the queue,
// handed to the handlers and applied allocates nothing in the loop (the
// queue's entries recycled, one ChangeEvent reused, the status published
// without garbage). The loop's steps run on the test's goroutine.
func TestLoopAllocatesNothingPerChange(t *testing.T) {
	h := &counter{done: make(chan struct{}, 1)}
	ctl := New(Params{Handlers: []Handler{h}, Appliers: []Applier{nopApplier{}}})
	ctx := context.Background()
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	ctl.step(ctx)
	if !ctl.Ready() {
		t.Fatal("not ready after the startup step")
	}
	// Two values of one EndpointSlice, the kind of most changes.
	w := workload.New(10)
	one, two := *w.Slices[0], *w.Slices[1]
	two.Namespace, two.Name = one.Namespace, one.Name
	vals := []*kubestate.EndpointSlice{&one, &two}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		o := vals[i%2]
		i++
		ctl.q.pushChanges([]change{{key: o.Key(), rev: int64(i), obj: o}})
		ctl.step(ctx)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per change", allocs)
	}
	if st := ctl.Status(); st.Events != uint64(i) || st.Batches != uint64(i)+1 || st.Revision != int64(i) {
		t.Errorf("status %+v after %d changes", st, i)
	}
}

type nopApplier struct{}

func (nopApplier) Apply(context.Context, bool) error { return nil }
