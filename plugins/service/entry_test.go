package service

import (
	"reflect"
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

// TestFrontOfKeepsAllButBackends: the copy of a template's port keeps
// every field of sr.Port but its backends, whatever fields it has.
func TestFrontOfKeepsAllButBackends(t *testing.T) {
	var p sr.Port
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			f.SetUint(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("sr.Port.%s: a %s this test cannot fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	want := p
	want.Backends, want.LocalBackends = nil, nil
	if got := frontOf(&p); !reflect.DeepEqual(got, want) {
		t.Errorf("frontOf(%+v) = %+v, want %+v", p, got, want)
	}
}
