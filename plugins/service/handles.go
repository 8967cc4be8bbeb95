package service

// handles hands out the services' handles (sr.ContivService.Handle):
// small numbers from 1, those of deleted services given again first, so
// that renderers can index their per-service state by them in a slice as
// long as the most services known at once.
type handles struct {
	next uint32   // the highest handle given so far
	free []uint32 // handles given back, to give again
}

// get returns a handle in use by no one.
func (h *handles) get() uint32 {
	if n := len(h.free); n > 0 {
		x := h.free[n-1]
		h.free = h.free[:n-1]
		return x
	}
	h.next++
	return h.next
}

// put gives back handle x (0, no handle, is ignored).
func (h *handles) put(x uint32) {
	if x != 0 {
		h.free = append(h.free, x)
	}
}
