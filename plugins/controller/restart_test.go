package controller

import (
	"context"
	"slices"
	"sync"
	"testing"

	"contiv.dev/vpp/kubestate"
)

// TestQueueMergesDataplaneRestarted: a restart said by any of the resyncs
// queued together survives their merge.
func TestQueueMergesDataplaneRestarted(t *testing.T) {
	q := newQueue()
	q.pushResync(ResyncPeriodic, nil)
	q.pushResyncOf(ResyncHealing, nil, true)
	q.pushResync(ResyncPeriodic, nil)
	if b := q.drain(); b.resync == nil || !b.resync.restarted || b.resync.kind != ResyncHealing {
		t.Fatalf("merged resync %+v, want healing with the restart", b.resync)
	}
	q.pushResync(ResyncPeriodic, emptyListing(3))
	if b := q.drain(); b.resync == nil || b.resync.restarted {
		t.Fatalf("resync %+v, want no restart", b.resync)
	}
}

// restartSeer notes, per resync, whether it said the data plane restarted.
type restartSeer struct {
	mu   sync.Mutex
	seen []bool
}

func (r *restartSeer) Name() string            { return "restart-seer" }
func (r *restartSeer) HandlesEvent(Event) bool { return false }
func (r *restartSeer) Update(context.Context, Event) error {
	return nil
}

func (r *restartSeer) Resync(_ context.Context, ev *ResyncEvent) error {
	r.mu.Lock()
	r.seen = append(r.seen, ev.DataplaneRestarted)
	r.mu.Unlock()
	return nil
}

func (r *restartSeer) get() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestDataplaneRestartReachesHandlersInTheResync: a pushed resync saying
// the data plane restarted reaches every handler, on the loop, in the
// resync it asked for; the next resync does not say it again.
func TestDataplaneRestartReachesHandlersInTheResync(t *testing.T) {
	seer := &restartSeer{}
	ctl := New(Params{Handlers: []Handler{seer}, Appliers: []Applier{&applier{}}})
	start(t, ctl)
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	eventually(t, "ready", ctl.Ready)
	ctl.Push(&ResyncEvent{Kind: ResyncHealing, DataplaneRestarted: true})
	eventually(t, "the restart's resync", func() bool { return len(seer.get()) == 2 })
	ctl.Push(&ResyncEvent{Kind: ResyncPeriodic})
	eventually(t, "a later resync", func() bool { return len(seer.get()) == 3 })
	if got := seer.get(); !slices.Equal(got, []bool{false, true, false}) {
		t.Errorf("restart seen per resync %v, want [false true false]", got)
	}
}
