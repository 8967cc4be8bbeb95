package kubestate

// MarkerHistory is what a reader of the sync marker (the agent's watcher)
// took in: the marker of the output it holds. The zero value has taken
// nothing in. It is not safe for concurrent use.
type MarkerHistory struct {
	last  SyncMarker
	taken bool
}

// Compare tells how the output of marker m stands to the one taken in
// last: -1 older, 0 the same, +1 newer (or nothing taken in yet).
func (h *MarkerHistory) Compare(m SyncMarker) int {
	switch {
	case !h.taken || m.Generation > h.last.Generation:
		return 1
	case m.Generation < h.last.Generation:
		return -1
	}
	return 0
}

// Take records m as the marker of the output taken in.
func (h *MarkerHistory) Take(m SyncMarker) {
	h.last, h.taken = m, true
}

// Last is the marker taken in last; false when none was.
func (h *MarkerHistory) Last() (SyncMarker, bool) { return h.last, h.taken }
