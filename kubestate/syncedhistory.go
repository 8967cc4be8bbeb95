package kubestate

import "slices"

// maxPastLineages bounds the lineages a MarkerHistory remembers before the
// one it holds: a new one starts at every takeover of the reflector and
// every `contivctl load`.
const maxPastLineages = 64

// MarkerHistory is what a reader of the sync marker (the agent's watcher,
// the reflector's probe) took in: the marker of the output it holds, and
// the lineages of the outputs it held before, newest last. The zero value
// has taken nothing in. It is not safe for concurrent use.
//
// Markers are ordered by etcd (MarkerWriter): within a lineage by their
// generation, each written on the one before it by a compare-and-swap. A
// lineage starts on an etcd that holds no marker (fresh, or wiped: its
// revisions counting again from 1) and whenever a writer marks on a marker
// it did not write; its name is random. So a reader never compares
// generations across lineages, nor etcd revisions across etcd histories: a
// lineage it never saw is a newer output (written after a loss of etcd's
// data, or by another writer), one it left is an older one (etcd restored
// from a backup, or a marker put back).
type MarkerHistory struct {
	last  SyncMarker
	taken bool
	past  []string
}

// Compare tells how the output of marker m stands to the one taken in
// last: -1 older (a lower generation of its lineage, or a lineage taken in
// before it), 0 the same, +1 newer (a higher generation of its lineage, a
// lineage never taken in, or nothing taken in yet).
//
// Markers of reflectors older than lineages have none (""): among them
// the generation, their writer's clock, orders as before.
func (h *MarkerHistory) Compare(m SyncMarker) int {
	switch {
	case !h.taken:
		return 1
	case m.Lineage != h.last.Lineage && slices.Contains(h.past, m.Lineage):
		return -1
	case m.Lineage != h.last.Lineage:
		return 1
	case m.Generation < h.last.Generation:
		return -1
	case m.Generation > h.last.Generation:
		return 1
	}
	return 0
}

// Take records m as the marker of the output taken in; the lineage it
// leaves joins the past ones.
func (h *MarkerHistory) Take(m SyncMarker) {
	if h.taken && m.Lineage != h.last.Lineage {
		h.past = slices.DeleteFunc(h.past, func(l string) bool { return l == h.last.Lineage || l == m.Lineage })
		h.past = append(h.past, h.last.Lineage)
		if n := len(h.past) - maxPastLineages; n > 0 {
			h.past = slices.Delete(h.past, 0, n)
		}
	}
	h.last, h.taken = m, true
}

// Last is the marker taken in last; false when none was.
func (h *MarkerHistory) Last() (SyncMarker, bool) { return h.last, h.taken }
