package ksr

import (
	"cmp"
	"slices"
	"sync"

	"contiv.dev/vpp/kubestate"
)

// item names one object whose state may have changed: its resource and its
// informer cache key ("namespace/name", or "name").
type item struct {
	res kubestate.Resource
	key string
}

// queue is a coalescing set of changed items. Informer handlers add to it;
// the writer takes everything at once. Adding an item already queued only
// keeps it queued: the writer reads the object's latest state anyway.
type queue struct {
	mu    sync.Mutex
	items map[item]struct{}
	// ready holds a token while items may be waiting.
	ready chan struct{}
}

func newQueue() *queue {
	return &queue{items: make(map[item]struct{}), ready: make(chan struct{}, 1)}
}

// add queues it and wakes the writer.
func (q *queue) add(it item) {
	q.mu.Lock()
	q.items[it] = struct{}{}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take empties the queue and returns what it held, in a fixed order: by
// resource as reflected() lists them, then by key.
func (q *queue) take() []item {
	q.mu.Lock()
	m := q.items
	q.items = make(map[item]struct{})
	q.mu.Unlock()
	out := make([]item, 0, len(m))
	for it := range m {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b item) int {
		return cmp.Or(cmp.Compare(resourceRank(a.res), resourceRank(b.res)), cmp.Compare(a.key, b.key))
	})
	return out
}

// len is the number of queued items.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
