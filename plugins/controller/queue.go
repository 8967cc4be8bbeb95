package controller

import (
	"sync"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/etcdfeed"
)

// change is the new value of one key as a producer saw it.
type change struct {
	key kubestate.Key
	// rev is the etcd revision of the change; 0 when not from etcd.
	rev int64
	// obj is the decoding of the stored value; nil for a delete.
	obj kubestate.Object
}

// listing is a full list of the watched resources at one revision.
type listing struct {
	snap *Snapshot
	// bad holds the keys whose stored value could not be decoded: the
	// controller keeps their last good value.
	bad map[kubestate.Key]bool
	// listed holds the objects of a listing read from etcd in the order
	// read (ResyncEvent.Listed); nil for a pushed snapshot.
	listed []kubestate.Object
}

// newListing is an empty listing at rev with room for n objects.
func newListing(rev int64, n int) *listing {
	return &listing{
		snap: &Snapshot{Revision: rev, Objects: make(map[kubestate.Key]kubestate.Object, n)},
		bad:  map[kubestate.Key]bool{},
	}
}

// put adds o, the decoding of the stored value, under k.
func (l *listing) put(k kubestate.Key, o kubestate.Object) {
	l.snap.Objects[k] = o
}

// pendingResync is the one resync a queue holds: queued resyncs merge.
type pendingResync struct {
	// kind is the most significant kind merged in (startup before relist
	// before healing before periodic).
	kind ResyncKind
	// list is the newest listing merged in; nil means resync from the
	// controller's cached view.
	list *listing
	// restarted is set when a resync merged in says the data plane
	// restarted (ResyncEvent.DataplaneRestarted).
	restarted bool
}

// entry is one queued item: a change (ev nil) or another event. A change
// is held by value: queueing one allocates nothing once the queue's
// slices have grown.
type entry struct {
	ch change
	ev Event
}

// isChange tells whether e is a change.
func (e *entry) isChange() bool { return e.ev == nil }

// batch is what one drain of the queue takes out.
type batch struct {
	resync  *pendingResync
	entries []entry
}

func (b batch) empty() bool { return b.resync == nil && len(b.entries) == 0 }

// queue is where producers leave work for the loop. Pushing never blocks
// and never drops: changes to one key coalesce in place (the newest value
// kept at the position of the first), a listing supersedes the changes
// queued before it, and resyncs merge into one. The queue thus stays
// bounded by the number of keys in etcd plus the other events queued.
type queue struct {
	mu      sync.Mutex
	entries []entry
	// spare is the entries of the batch drained before, handed back by
	// the loop (recycle): the next drain's entries are appended to it.
	spare  []entry
	index  map[kubestate.Key]int // position of a key's change in entries
	resync *pendingResync
	// wake holds a token while there is something to drain.
	wake chan struct{}
}

func newQueue() *queue {
	return &queue{index: map[kubestate.Key]int{}, wake: make(chan struct{}, 1)}
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pushChange queues ch, coalescing it with a queued change of its key.
func (q *queue) pushChange(ch change) {
	q.mu.Lock()
	q.putLocked(ch)
	q.mu.Unlock()
	q.signal()
}

// pushChanges queues chs in order, as pushChange, with one wake-up of the
// loop.
func (q *queue) pushChanges(chs []change) {
	q.mu.Lock()
	for _, ch := range chs {
		q.putLocked(ch)
	}
	q.mu.Unlock()
	q.signal()
}

// pushFed queues the changes the etcd feed hands on, as pushChanges.
func (q *queue) pushFed(chs []etcdfeed.Change) {
	q.mu.Lock()
	for _, ch := range chs {
		q.putLocked(change{key: ch.Key, rev: ch.Rev, obj: ch.Obj})
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) putLocked(ch change) {
	if i, ok := q.index[ch.key]; ok {
		q.entries[i].ch = ch
	} else {
		q.index[ch.key] = len(q.entries)
		q.entries = append(q.entries, entry{ch: ch})
	}
}

// pushEvent queues an event that is neither a change nor a resync.
func (q *queue) pushEvent(ev Event) {
	q.mu.Lock()
	q.entries = append(q.entries, entry{ev: ev})
	q.mu.Unlock()
	q.signal()
}

// pushResync queues a resync of kind; with a listing, the changes queued
// so far are superseded (the listing holds their outcome).
func (q *queue) pushResync(kind ResyncKind, l *listing) { q.pushResyncOf(kind, l, false) }

// pushResyncOf is pushResync; restarted says the data plane restarted.
func (q *queue) pushResyncOf(kind ResyncKind, l *listing, restarted bool) {
	q.mu.Lock()
	if l != nil && len(q.index) > 0 {
		kept := q.entries[:0]
		for _, e := range q.entries {
			if !e.isChange() {
				kept = append(kept, e)
			}
		}
		clear(q.entries[len(kept):])
		q.entries = kept
		clear(q.index)
	}
	switch {
	case q.resync == nil:
		q.resync = &pendingResync{kind: kind, list: l, restarted: restarted}
	default:
		q.resync.kind = min(q.resync.kind, kind)
		q.resync.restarted = q.resync.restarted || restarted
		if l != nil {
			q.resync.list = l
		}
	}
	q.mu.Unlock()
	q.signal()
}

// hasListing tells whether a listing is queued.
func (q *queue) hasListing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.resync != nil && q.resync.list != nil
}

// depth is the number of queued items.
func (q *queue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.entries)
	if q.resync != nil {
		n++
	}
	return n
}

// drain takes everything queued. The batch's entries are the loop's until
// it hands them back (recycle).
func (q *queue) drain() batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := batch{resync: q.resync, entries: q.entries}
	q.resync, q.entries, q.spare = nil, q.spare, nil
	// Each key's own delete, not clear: a map keeps the room of its
	// largest burst, which clear would go through at every batch.
	for i := range b.entries {
		if b.entries[i].isChange() {
			delete(q.index, b.entries[i].ch.key)
		}
	}
	return b
}

// recycle hands back the entries of a drained batch once the loop is done
// with them: the queue appends to them again after the next drain, so
// that a steady flow of changes allocates no slices. A batch larger than
// maxSpare is let go (the queue does not keep a burst's memory).
func (q *queue) recycle(entries []entry) {
	if cap(entries) == 0 || cap(entries) > maxSpare {
		return
	}
	clear(entries) // drop the objects and events they refer to
	q.mu.Lock()
	if q.spare == nil {
		q.spare = entries[:0]
	}
	q.mu.Unlock()
}

// maxSpare is the largest batch whose entries are recycled.
const maxSpare = 1024
