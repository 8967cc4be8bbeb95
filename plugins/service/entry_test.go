package service

import (
	"slices"
	"testing"
	"unsafe"

	"contiv.dev/vpp/kubestate"
)

// TestEntryIsOneCacheLine: a service's entry, what a change of it reads
// first, fits one 64-byte cache line (the allocator's 64-byte size class
// places it on one).
func TestEntryIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Fatalf("an entry is %d bytes, want 64", n)
	}
}

// TestEntrySlices: an entry's slices through every count it moves
// between: none, one (held in the entry), several (in its rare part),
// and back, kept sorted; the rare part goes when it holds nothing.
func TestEntrySlices(t *testing.T) {
	sl := func(name string) *kubestate.EndpointSlice {
		return &kubestate.EndpointSlice{Namespace: "default", Name: name, ServiceName: "web"}
	}
	names := func(e *entry) string {
		s := ""
		for _, x := range e.slices() {
			s += x.Name + " "
		}
		return s
	}
	var e entry
	for _, step := range []struct {
		add, del string
		want     string
		rare     bool
	}{
		{add: "b", want: "b ", rare: false},
		{add: "a", want: "a b ", rare: true},
		{add: "c", want: "a b c ", rare: true},
		{del: "b", want: "a c ", rare: true},
		{del: "a", want: "c ", rare: false},
		{del: "c", want: "", rare: false},
	} {
		if step.add != "" {
			i, found := e.find(step.add)
			if found {
				t.Fatalf("%s found before it was added", step.add)
			}
			e.addSlice(i, sl(step.add))
		} else {
			i := e.at(step.del)
			e.setSlices(slices.Delete(e.slices(), i, i+1)) // as sliceChanged does
		}
		if got := names(&e); got != step.want || (e.rare != nil) != step.rare {
			t.Fatalf("after %+v: slices %q, rare part %v", step, got, e.rare != nil)
		}
		for _, x := range e.slices() {
			if e.slices()[e.at(x.Name)] != x {
				t.Fatalf("after %+v: at(%s) is not its place", step, x.Name)
			}
		}
	}
}
