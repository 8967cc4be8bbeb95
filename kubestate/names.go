package kubestate

import (
	"sync"
	"sync/atomic"
)

// name is a handle of an interned string: an endpoint holds its node name
// and its target's namespace as 4 bytes each instead of 16-byte string
// headers. 0 is "". Handles are never reused nor forgotten: the strings
// are a cluster's node names and namespaces, a few KB per thousand, and
// the table holds at most maxNames of them; past that, endpoints keep
// their names as strings (endpointMore).
type name uint32

// nameChunk is the number of names in one chunk of the table.
const nameChunk = 1024

// names is the table: chunks that never move, found through a directory
// that is replaced (not changed) when it grows, so that reading a handle
// takes no lock. A handle reaches a reader with the endpoint holding it,
// after the slot it names was written. Looking a name up takes no lock
// either (ids, a sync.Map: a listing's endpoints look up their node names
// half a million times, mostly from one goroutine); giving a handle does.
var names struct {
	mu  sync.Mutex
	ids sync.Map // string → name
	n   int      // handles given, 0 included
	dir atomic.Pointer[[]*[nameChunk]string]
}

// maxNames bounds the table (a handle has 24 bits in Endpoint.bits) and
// what it can hold on to: ~20 MB of the longest names.
//
// ASSUMPTION: the distinct node names and namespaces an agent sees in its
// life fit (a cluster's thousands, and the churn of autoscaled nodes and
// of the namespaces of test runs over months). Past the bound an agent
// keeps working: endpoints of new names hold them as strings (~100 bytes
// more each) until it restarts.
var maxNames = 1 << 18

// nameFor returns the handle of s; false when the table is full.
func nameFor(s string) (name, bool) {
	if s == "" {
		return 0, true
	}
	if h, ok := names.ids.Load(s); ok {
		return h.(name), true
	}
	names.mu.Lock()
	defer names.mu.Unlock()
	if h, ok := names.ids.Load(s); ok {
		return h.(name), true
	}
	if names.n >= maxNames {
		return 0, false
	}
	if names.n == 0 {
		names.n = 1
	}
	h := name(names.n)
	var dir []*[nameChunk]string
	if p := names.dir.Load(); p != nil {
		dir = *p
	}
	if int(h)/nameChunk == len(dir) {
		dir = append(dir[:len(dir):len(dir)], new([nameChunk]string))
		names.dir.Store(&dir)
	}
	c := canonical(s)
	dir[h/nameChunk][h%nameChunk] = c
	names.ids.Store(c, h)
	names.n++
	return h, true
}

// String returns the string h stands for.
func (h name) String() string {
	if h == 0 {
		return ""
	}
	return (*names.dir.Load())[h/nameChunk][h%nameChunk]
}
