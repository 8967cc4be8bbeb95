package controller

import (
	"bytes"

	"contiv.dev/vpp/kubestate"
)

// view is the cluster state as the handlers have taken it in: the last
// listing with every change applied since. It gives each ChangeEvent its
// Prev, tells no-ops apart by the stored bytes, and is the snapshot that
// healing and periodic resyncs hand to the handlers. Only the loop
// goroutine touches it.
type view struct {
	snap *Snapshot
	raw  map[kubestate.Key][]byte
	// listedRev is the revision of the last listing: a change at or below
	// it is already in the view.
	listedRev int64
}

func newView() *view {
	return &view{
		snap: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}},
		raw:  map[kubestate.Key][]byte{},
	}
}

// replace takes in a fresh listing. A key whose stored value could not be
// decoded keeps its last good value: a corrupt write never removes an
// object the data plane serves.
func (v *view) replace(l *listing) {
	for k := range l.bad {
		if o, ok := v.snap.Objects[k]; ok {
			l.snap.Objects[k] = o
			l.raw[k] = v.raw[k]
		}
	}
	v.snap, v.raw, v.listedRev = l.snap, l.raw, l.snap.Revision
}

// outcome tells what applying a change did.
type outcome uint8

const (
	applied outcome = iota
	noop            // the stored value did not change
	stale           // the change is older than the last listing
)

// apply takes in ch and returns the event handlers get for it.
func (v *view) apply(ch *change) (*ChangeEvent, outcome) {
	if ch.rev != 0 && ch.rev <= v.listedRev {
		return nil, stale
	}
	prevRaw, had := v.raw[ch.key]
	if had == (ch.obj != nil) && bytes.Equal(prevRaw, ch.raw) {
		return nil, noop
	}
	ev := &ChangeEvent{Key: ch.key, Revision: ch.rev, Prev: v.snap.Objects[ch.key], New: ch.obj}
	if ch.obj == nil {
		delete(v.snap.Objects, ch.key)
		delete(v.raw, ch.key)
	} else {
		v.snap.Objects[ch.key] = ch.obj
		v.raw[ch.key] = ch.raw
	}
	v.snap.Revision = max(v.snap.Revision, ch.rev)
	return ev, applied
}
