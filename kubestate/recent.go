package kubestate

import (
	"hash/maphash"
	"sync/atomic"
)

// recent caches values of string keys looked up lately, each in the slot
// of its key's hash (a later key of that slot replaces it), read and
// written without a lock: what the decoder looks up for most fields of
// most values (a canonical copy, a name's handle) costs a hash and a
// compare instead of a lock and a map's lookup. A value cached stays
// right: the caller caches only values that never change for their key.
type recent[V any] struct {
	slots [256]atomic.Pointer[recentEntry[V]]
}

type recentEntry[V any] struct {
	key string
	v   V
}

var recentSeed = maphash.MakeSeed()

func (c *recent[V]) slot(key string) *atomic.Pointer[recentEntry[V]] {
	return &c.slots[maphash.String(recentSeed, key)%uint64(len(c.slots))]
}

// get returns the value cached for key, if it is.
func (c *recent[V]) get(key string) (v V, ok bool) {
	if e := c.slot(key).Load(); e != nil && e.key == key {
		return e.v, true
	}
	return v, false
}

// put caches v for key; key must not be cut from a caller's buffer.
func (c *recent[V]) put(key string, v V) { c.slot(key).Store(&recentEntry[V]{key, v}) }
