package service

import (
	"testing"
	"unsafe"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// TestEntryIsOneCacheLine: a service's entry, what a change of it reads
// first, fits one 64-byte cache line (the allocator's 64-byte size class
// places it on one).
func TestEntryIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Fatalf("an entry is %d bytes, want 64", n)
	}
}

// TestEntryID: an entry knows its ID, which it does not hold, from its
// output, its Service, or its slices, whichever it has; every one names
// the same service.
func TestEntryID(t *testing.T) {
	id := sr.ServiceID{Namespace: "default", Name: "web"}
	svc := &kubestate.Service{Namespace: id.Namespace, Name: id.Name}
	sl := &kubestate.EndpointSlice{Namespace: id.Namespace, Name: "web-abcde", ServiceName: id.Name}
	for _, e := range []*entry{
		{out: &sr.ContivService{ID: id}},
		{svc: svc},
		{svc: svc, out: &sr.ContivService{ID: id}},
		{slices: []*kubestate.EndpointSlice{sl}},
	} {
		if got := e.id(); got != id {
			t.Errorf("%+v: id %v, want %v", e, got, id)
		}
	}
	if got := new(entry).id(); got != (sr.ServiceID{}) {
		t.Errorf("an empty entry's id is %v", got)
	}
}
