package controller

import "contiv.dev/vpp/kubestate"

// view is the cluster state as the handlers have taken it in: the last
// listing with every change applied since. It gives each ChangeEvent its
// Prev, tells no-ops apart by comparing with the objects it holds, and is the snapshot that
// healing and periodic resyncs hand to the handlers. Only the loop
// goroutine touches it.
type view struct {
	snap *Snapshot
	// listedRev is the revision of the last listing: a change at or below
	// it is already in the view.
	listedRev int64
	// ev is the event apply hands out, reused from change to change
	// (handlers do not keep it: ChangeEvent).
	ev ChangeEvent
}

func newView() *view {
	return &view{
		snap: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}},
	}
}

// replace takes in a fresh listing. A key whose stored value could not be
// decoded keeps its last good value: a corrupt write never removes an
// object the data plane serves.
func (v *view) replace(l *listing) {
	for k := range l.bad {
		if o, ok := v.snap.Objects[k]; ok {
			l.snap.Objects[k] = o
		}
	}
	v.snap, v.listedRev = l.snap, l.snap.Revision
}

// outcome tells what applying a change did.
type outcome uint8

const (
	applied outcome = iota
	noop            // the stored value did not change
	stale           // the change is older than the last listing
)

func (o outcome) String() string {
	switch o {
	case applied:
		return "applied"
	case noop:
		return "noop"
	case stale:
		return "stale"
	}
	return "outcome(?)"
}

// apply takes in ch and returns the event handlers get for it: the
// view's one event, valid until the next apply (done clears it).
func (v *view) apply(ch *change) (*ChangeEvent, outcome) {
	if ch.rev != 0 && ch.rev <= v.listedRev {
		return nil, stale
	}
	prev, had := v.snap.Objects[ch.key]
	switch {
	case ch.obj == nil && !had, ch.obj != nil && had && same(prev, ch.obj):
		return nil, noop // a delete of an absent key, a put of the value held
	case ch.obj == nil:
		delete(v.snap.Objects, ch.key)
	default:
		v.snap.Objects[ch.key] = ch.obj
	}
	v.snap.Revision = max(v.snap.Revision, ch.rev)
	v.ev = ChangeEvent{Key: ch.key, Revision: ch.rev, Prev: prev, New: ch.obj}
	return &v.ev, applied
}

// done lets go of the objects of the last event handed out.
func (v *view) done() { v.ev = ChangeEvent{} }
