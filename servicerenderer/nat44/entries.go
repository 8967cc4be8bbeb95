package nat44

import "contiv.dev/vpp/servicerenderer"

// slotChunk is the number of entries in one chunk of slotted: 32 KiB,
// which Go's allocator gives page-aligned (a smaller object with
// pointers starts 8 bytes into its slot, after its type): every entry
// is then one aligned cache line.
const slotChunk = 512

// slotted holds the entries of services by their slot
// (servicerenderer.ContivService.Slot), by value, in chunks that never
// move (a frontend's claimants point into them): a change finds its
// service's entry from the slot, in one cache line, without hashing its
// ID or reading a map. Slot 0 (none) is never held.
type slotted struct {
	chunks []*[slotChunk]serviceEntry
}

// at is the place of slot s; nil when no chunk holds it yet.
func (t *slotted) at(s uint32) *serviceEntry {
	if c := int(s / slotChunk); c < len(t.chunks) {
		return &t.chunks[c][s%slotChunk]
	}
	return nil
}

// make is the place of slot s, making its chunk.
func (t *slotted) make(s uint32) *serviceEntry {
	for int(s/slotChunk) >= len(t.chunks) {
		t.chunks = append(t.chunks, new([slotChunk]serviceEntry))
	}
	return t.at(s)
}

// entry is svc's entry; nil when there is none. A slot's place holds the
// entry when it holds one of the same ID (no string is read when, as the
// processor makes them, svc's ID strings are those of the service last
// set); otherwise (no slot, or a value made by hand) the ID finds it.
func (r *Renderer) entry(svc *servicerenderer.ContivService) *serviceEntry {
	if svc.Slot != 0 {
		if e := r.slotted.at(svc.Slot); e != nil && e.Svc != nil && e.Svc.ID == svc.ID {
			return e
		}
	}
	return r.services[svc.ID]
}

// newEntry makes the entry of svc, a service the renderer does not hold:
// in its slot's place when that is free, else apart.
func (r *Renderer) newEntry(svc *servicerenderer.ContivService) *serviceEntry {
	var e *serviceEntry
	if svc.Slot != 0 {
		if at := r.slotted.make(svc.Slot); at.Svc == nil {
			e = at
		}
	}
	if e == nil {
		e = new(serviceEntry)
	}
	r.services[svc.ID] = e
	return e
}

// dropEntry forgets e, the entry of svc, which holds no claim any more.
func (r *Renderer) dropEntry(svc *servicerenderer.ContivService, e *serviceEntry) {
	delete(r.services, svc.ID)
	*e = serviceEntry{} // frees its slot's place, if it is there
}
