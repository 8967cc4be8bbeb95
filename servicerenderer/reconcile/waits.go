package reconcile

import (
	"cmp"
	"slices"
	"time"
)

// Waits are the things (interfaces by name, FIB tables by VRF) whose
// objects wait for VPP to make them: not failures, and no reason to heal;
// they are tried again when news of them comes and by every full apply.
// Each has a value V (what waits) and since when it waits.
type Waits[K cmp.Ordered, V any] struct {
	m map[K]Wait[K, V]
}

// Wait is one thing waited for.
type Wait[K cmp.Ordered, V any] struct {
	Key   K
	Value V
	// Since is when the renderer first found VPP without it.
	Since time.Time
}

// Add records that k waits, now with v; first tells whether it did not
// wait before (its Since is then now).
func (w *Waits[K, V]) Add(k K, v V, now time.Time) (first bool) {
	x, ok := w.m[k]
	if !ok {
		if w.m == nil {
			w.m = map[K]Wait[K, V]{}
		}
		x = Wait[K, V]{Key: k, Since: now}
	}
	x.Value = v
	w.m[k] = x
	return !ok
}

// Has tells whether k waits.
func (w *Waits[K, V]) Has(k K) bool {
	_, ok := w.m[k]
	return ok
}

// Delete records that k waits no more.
func (w *Waits[K, V]) Delete(k K) { delete(w.m, k) }

// Len is the number of things waited for.
func (w *Waits[K, V]) Len() int { return len(w.m) }

// Keep drops what waits no more: those for which waits is false.
func (w *Waits[K, V]) Keep(waits func(K) bool) {
	for k := range w.m {
		if !waits(k) {
			delete(w.m, k)
		}
	}
}

// Sorted lists what waits, by key (nil when nothing does).
func (w *Waits[K, V]) Sorted() []Wait[K, V] {
	var ws []Wait[K, V]
	for _, x := range w.m {
		ws = append(ws, x)
	}
	slices.SortFunc(ws, func(a, b Wait[K, V]) int { return cmp.Compare(a.Key, b.Key) })
	return ws
}

// PendingTable is a FIB table whose routes (R) wait for VPP to make it.
type PendingTable[R any] struct {
	VRF uint32
	// Routes are the routes waiting, sorted.
	Routes []R
	// Since is when the renderer first found VPP without it.
	Since time.Time
}

// PendingTables lists the tables routes wait for, by VRF, each with the
// routes waiting (waiting, sorted by compare). A table stays pending
// until every route into it is in: the renderer drops it (Keep) once
// waiting has none.
func PendingTables[R any](tables *Waits[uint32, struct{}], waiting func(vrf uint32) []R, compare func(a, b R) int) []PendingTable[R] {
	ps := make([]PendingTable[R], 0, tables.Len())
	for _, w := range tables.Sorted() {
		rs := waiting(w.Key)
		slices.SortFunc(rs, compare)
		ps = append(ps, PendingTable[R]{VRF: w.Key, Routes: rs, Since: w.Since})
	}
	return ps
}
