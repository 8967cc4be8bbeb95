package nat44

import (
	"hash/maphash"
	"math/bits"

	"contiv.dev/vpp/servicerenderer"
)

// entryIndex finds a service's entry by its ID: an open-addressing table
// of entry pointers (linear probing, at most half full), each entry's ID
// read from its service (Svc). A lookup reads one slot and the entry it
// leads to, which the change reads anyway, and the ID's bytes, which the
// caller has in hand: against a Go map keyed by ID (its header, directory,
// table, control word and slot, its type's hasher), that is about a dozen
// fewer cache lines on a change arriving after other work emptied the
// caches, and 1 MB at W(50 000) instead of 2.3. The hash is keyed by a
// random seed: service names cannot be chosen to collide.
type entryIndex struct {
	seed  maphash.Seed
	slots []*serviceEntry
	n     int
}

// newEntryIndex is an empty index with room for n entries.
func newEntryIndex(n int) entryIndex {
	size := 8
	if n > 4 {
		size = 1 << bits.Len(uint(2*n-1))
	}
	return entryIndex{seed: maphash.MakeSeed(), slots: make([]*serviceEntry, size)}
}

func (x *entryIndex) hash(id servicerenderer.ServiceID) uint64 {
	h := maphash.String(x.seed, id.Namespace)
	return bits.RotateLeft64(h, 29) ^ maphash.String(x.seed, id.Name)*0x9e3779b97f4a7c15
}

// find is the slot of id: its entry's, or the empty one it would take.
func (x *entryIndex) find(id servicerenderer.ServiceID) int {
	mask := len(x.slots) - 1
	i := int(x.hash(id)) & mask
	for {
		e := x.slots[i]
		if e == nil || e.Svc.ID == id {
			return i
		}
		i = (i + 1) & mask
	}
}

// get is the entry of id; nil when none.
func (x *entryIndex) get(id servicerenderer.ServiceID) *serviceEntry {
	return x.slots[x.find(id)]
}

// put makes e, whose Svc is set, the entry of its ID.
func (x *entryIndex) put(e *serviceEntry) {
	i := x.find(e.Svc.ID)
	if x.slots[i] == nil {
		if 2*(x.n+1) > len(x.slots) {
			x.grow()
			i = x.find(e.Svc.ID)
		}
		x.n++
	}
	x.slots[i] = e
}

// remove drops the entry of id, if any: the entries after it in its run
// move back, so that no lookup stops short of them.
func (x *entryIndex) remove(id servicerenderer.ServiceID) {
	i := x.find(id)
	if x.slots[i] == nil {
		return
	}
	x.n--
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j] != nil; j = (j + 1) & mask {
		// The entry at j may fill the hole at i when its home slot is not
		// in (i, j] (cyclically).
		home := int(x.hash(x.slots[j].Svc.ID)) & mask
		if (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = nil
}

func (x *entryIndex) grow() {
	old := x.slots
	x.slots = make([]*serviceEntry, 2*len(old))
	mask := len(x.slots) - 1
	for _, e := range old {
		if e != nil {
			i := int(x.hash(e.Svc.ID)) & mask
			for x.slots[i] != nil {
				i = (i + 1) & mask
			}
			x.slots[i] = e
		}
	}
}

// len is the number of entries.
func (x *entryIndex) len() int { return x.n }

// all calls f with each entry, in no order.
func (x *entryIndex) all(f func(*serviceEntry)) {
	for _, e := range x.slots {
		if e != nil {
			f(e)
		}
	}
}
