package nat44

import "contiv.dev/vpp/servicerenderer"

// slotChunk is the number of entries in one chunk of slotted: 32 KiB,
// which Go's allocator gives page-aligned (a smaller object with
// pointers starts 8 bytes into its slot, after its type): every entry
// is then one aligned cache line.
const slotChunk = 512

// slotted places the entries of services by value in chunks that never
// move (a frontend's claimants point into them), a freed place given
// again before a new one: the entries lie dense, one aligned cache line
// each, instead of one allocation per service. Services are found by ID
// (Renderer.services); slotted only decides where their entries live.
type slotted struct {
	chunks []*[slotChunk]serviceEntry
	used   int             // places given so far
	free   []*serviceEntry // places given back, to give again
}

// take returns an empty place.
func (t *slotted) take() *serviceEntry {
	if n := len(t.free); n > 0 {
		e := t.free[n-1]
		t.free = t.free[:n-1]
		return e
	}
	if t.used == len(t.chunks)*slotChunk {
		t.chunks = append(t.chunks, new([slotChunk]serviceEntry))
	}
	e := &t.chunks[t.used/slotChunk][t.used%slotChunk]
	t.used++
	return e
}

// give empties e, a place take returned, and keeps it for the next take.
func (t *slotted) give(e *serviceEntry) {
	*e = serviceEntry{}
	t.free = append(t.free, e)
}

// entry is svc's entry; nil when there is none.
func (r *Renderer) entry(svc *servicerenderer.ContivService) *serviceEntry {
	return r.services[svc.ID]
}

// newEntry makes the entry of svc, a service the renderer does not hold.
func (r *Renderer) newEntry(svc *servicerenderer.ContivService) *serviceEntry {
	e := r.slotted.take()
	r.services[svc.ID] = e
	return e
}

// dropEntry forgets e, the entry of svc, which holds no claim any more.
func (r *Renderer) dropEntry(svc *servicerenderer.ContivService, e *serviceEntry) {
	delete(r.services, svc.ID)
	r.slotted.give(e)
}
