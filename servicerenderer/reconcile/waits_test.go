package reconcile

import (
	"slices"
	"testing"
)

// A thing waited for keeps its first Since and its newest value, and
// goes when released or when nothing waits for it any more (a table stays
// until every route into it is in).
func TestWaits(t *testing.T) {
	var w Waits[uint32, []string]
	if !w.Add(1, []string{"drop"}, t0) {
		t.Error("first wait not reported first")
	}
	if w.Add(1, []string{"drop", "lookup"}, t0.Add(1)) {
		t.Error("second wait reported first")
	}
	w.Add(0, nil, t0.Add(2))
	got := w.Sorted()
	if len(got) != 2 || got[0].Key != 0 || got[1].Key != 1 || got[1].Since != t0 || len(got[1].Value) != 2 {
		t.Fatalf("waits %+v", got)
	}
	in := map[string]bool{"drop": true} // the routes added since
	w.Keep(func(vrf uint32) bool {
		for _, w := range w.m[vrf].Value {
			if !in[w] {
				return true
			}
		}
		return false
	})
	if !w.Has(1) || w.Has(0) {
		t.Errorf("table 1 (lookup still out) kept %v, table 0 (nothing waiting) kept %v", w.Has(1), w.Has(0))
	}
	w.Delete(1)
	if w.Len() != 0 || w.Sorted() != nil {
		t.Errorf("waits %+v after release, want none (nil)", w.Sorted())
	}
}

// A failure is kept until its object changes (Delete) or a full apply
// runs (Clear); Set tells whether it is new, for logging once.
func TestFailures(t *testing.T) {
	var fs Failures[string, string]
	fs.Delete("x") // no map yet
	if !fs.Set("b", "b refused") || fs.Set("b", "b refused again") || !fs.Set("a", "a refused") {
		t.Error("Set: first not reported as first")
	}
	if got := fs.Sorted(func(a, b string) int { return len(a) - len(b) }); !slices.Equal(got, []string{"a refused", "b refused again"}) {
		t.Errorf("failures %v", got)
	}
	fs.Delete("a")
	if fs.Has("a") || !fs.Has("b") || fs.Len() != 1 {
		t.Error("Delete: wrong failure forgotten")
	}
	fs.Clear()
	if fs.Sorted(nil) != nil {
		t.Error("failures after Clear")
	}
}
