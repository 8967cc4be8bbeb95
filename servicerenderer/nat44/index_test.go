package nat44

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

// TestEntryIndexAsMap: any sequence of puts, removes and gets finds in
// the index what a map keyed by ID holds, with as many entries; a small
// index starts at 8 slots and grows through its lookups' runs.
func TestEntryIndexAsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := newEntryIndex(rapid.IntRange(0, 20).Draw(t, "room"))
		want := map[servicerenderer.ServiceID]*serviceEntry{}
		genID := rapid.Custom(func(t *rapid.T) servicerenderer.ServiceID {
			return servicerenderer.ServiceID{
				Namespace: fmt.Sprint("ns", rapid.IntRange(0, 2).Draw(t, "ns")),
				Name:      fmt.Sprint("s", rapid.IntRange(0, 40).Draw(t, "name")),
			}
		})
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			id := genID.Draw(t, "id")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				e := &serviceEntry{}
				e.Svc = &servicerenderer.ContivService{ID: id}
				x.put(e)
				want[id] = e
			case 1:
				x.remove(id)
				delete(want, id)
			}
			if got := x.get(id); got != want[id] {
				t.Fatalf("get(%v) = %p, want %p", id, got, want[id])
			}
			if x.len() != len(want) {
				t.Fatalf("len %d, want %d", x.len(), len(want))
			}
		}
		for id, e := range want {
			if x.get(id) != e {
				t.Fatalf("get(%v) lost", id)
			}
		}
		n := 0
		x.all(func(e *serviceEntry) {
			n++
			if want[e.Svc.ID] != e {
				t.Fatalf("all gave %v, not held", e.Svc.ID)
			}
		})
		if n != len(want) {
			t.Fatalf("all gave %d entries, want %d", n, len(want))
		}
	})
}
