package kubestate

import (
	"slices"
	"sync"
	"sync/atomic"
	"unique"
)

// compact makes a freshly decoded object smaller without changing its
// value: the strings many objects repeat (namespaces, node names, target
// kinds, port names, protocols, types and policies) become canonical
// copies (unique.Make: the runtime's intern table, looked up through the
// bounded cache canonicals), and the endpoints array loses the room the
// decoder's appends left in it. An endpoint's names are handles of the
// table of names and its target kind "Pod" a bit (Endpoint.set), so a
// cluster's 100 000 endpoints hold no copy of them at all.
//
// The runtime forgets a canonical copy once nothing holds its handle; the
// cache holds the values it caches until it starts again (see canonicals),
// after which objects decoded may hold a new copy of a value. Names, IPs
// and other values that rarely repeat are left alone.
func compact(o Object) {
	switch o := o.(type) {
	case *Service:
		intern(&o.Namespace)
		intern(&o.Type)
		intern(&o.ExternalTrafficPolicy)
		intern(&o.InternalTrafficPolicy)
		intern(&o.SessionAffinity)
		for i := range o.Ports {
			p := &o.Ports[i]
			intern(&p.Name)
			intern(&p.Protocol)
			intern(&p.TargetPort)
		}
	case *EndpointSlice:
		intern(&o.Namespace)
		intern(&o.AddressType)
		for i := range o.Ports {
			intern(&o.Ports[i].Name)
			intern(&o.Ports[i].Protocol)
		}
		if cap(o.Endpoints) > len(o.Endpoints) {
			o.Endpoints = slices.Clone(o.Endpoints)
		}
		// The endpoints' names are interned as they are built (Endpoint.set).
	case *Pod:
		intern(&o.Namespace)
		intern(&o.NodeName)
		intern(&o.HostIP)
	}
}

// intern replaces *s by its canonical copy.
func intern(s *string) {
	if *s != "" {
		*s = canonical(*s)
	}
}

// canonicals caches the canonical copies of the values interned lately, by
// value: looking one up in a map costs a tenth of unique.Make (~0.4 µs, a
// weak pointer made strong each time), which a slice's endpoints pay for
// every node name. Holding them keeps the runtime from forgetting them, so
// sharing outlives a collection cycle too. The cache is bounded: when full,
// it starts again empty, so that names a cluster no longer uses (deleted
// namespaces, nodes) do not pile up. Looking a value up takes no lock (m,
// a sync.Map: a decode looks up several per object); adding one does.
var canonicals struct {
	mu sync.Mutex
	m  atomic.Pointer[sync.Map] // string → string
	n  int                      // values in m
}

// maxCanonicals bounds canonicals: a cluster's namespaces, node names,
// port names and the few fixed values, with room to spare.
const maxCanonicals = 1 << 14

// canonical returns the canonical copy of s (not "").
func canonical(s string) string {
	if m := canonicals.m.Load(); m != nil {
		if c, ok := m.Load(s); ok {
			return c.(string)
		}
	}
	canonicals.mu.Lock()
	defer canonicals.mu.Unlock()
	m := canonicals.m.Load()
	if m != nil {
		if c, ok := m.Load(s); ok {
			return c.(string)
		}
	}
	if m == nil || canonicals.n >= maxCanonicals {
		m = new(sync.Map)
		canonicals.m.Store(m)
		canonicals.n = 0
	}
	c := unique.Make(s).Value()
	m.Store(c, c)
	canonicals.n++
	return c
}

// lists caches the canonical copies of short lists (of up to maxListLen
// elements) decoded lately, as canonicals caches strings: most
// EndpointSlices of a cluster list the same one or two ports, and so do
// most Services, which then share one array instead of holding one each.
// The elements' strings are canonical copies (interned as decoded), so
// that the cache holds nothing of a decoded value.
type lists[T comparable] struct {
	mu sync.Mutex
	m  map[listKey[T]][]T
}

const maxListLen = 4

type listKey[T comparable] struct {
	n int
	a [maxListLen]T
}

// The lists of ports the fast path shares.
var (
	endpointPortLists lists[EndpointPort]
	servicePortLists  lists[ServicePort]
)

// get returns the canonical copy of got (not empty), or a copy of its own
// when got is long.
func (c *lists[T]) get(got []T) []T {
	if len(got) > maxListLen {
		return slices.Clone(got)
	}
	var k listKey[T]
	k.n = copy(k.a[:], got)
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.m[k]; ok {
		return l
	}
	if len(c.m) >= maxCanonicals || c.m == nil {
		c.m = make(map[listKey[T]][]T, 64)
	}
	l := slices.Clip(slices.Clone(got))
	c.m[k] = l
	return l
}
