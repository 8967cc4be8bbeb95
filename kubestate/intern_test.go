package kubestate

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unique"
	"unsafe"
)

// TestDecodeSharesRepeatedStrings holds Decode to its promise: the values
// are those encoded, the strings many objects repeat are one copy, the
// endpoints array has no spare room, and names stay each object's own.
func TestDecodeSharesRepeatedStrings(t *testing.T) {
	// While a handle lives, the runtime keeps its canonical copy: every
	// decode below then returns that one.
	keep := []unique.Handle[string]{unique.Make("node-7"), unique.Make("Pod"), unique.Make("ns"), unique.Make("http"), unique.Make("TCP")}
	slice := func(name string) *EndpointSlice {
		s := &EndpointSlice{Namespace: "ns", Name: name, ServiceName: "web", AddressType: "IPv4",
			Ports: []EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}}}
		for i := range 5 {
			s.Endpoints = append(s.Endpoints, EndpointFields{Addresses: []string{"10.1.7." + strconv.Itoa(i+2)}, Ready: true, Serving: true,
				NodeName: "node-7", TargetKind: "Pod", TargetNamespace: "ns", TargetName: "web-" + strconv.Itoa(i)}.Endpoint())
		}
		return s
	}
	var got []*EndpointSlice
	for _, name := range []string{"web-a", "web-b"} {
		want := slice(name)
		b, err := Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Decode(want.Key(), b)
		if err != nil {
			t.Fatal(err)
		}
		s := o.(*EndpointSlice)
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("decoded %+v, want %+v", s, want)
		}
		if cap(s.Endpoints) != len(s.Endpoints) {
			t.Errorf("endpoints: cap %d for %d", cap(s.Endpoints), len(s.Endpoints))
		}
		got = append(got, s)
	}
	same := func(what, a, b string) {
		t.Helper()
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: two copies of %q", what, a)
		}
	}
	a, b := got[0], got[1]
	same("namespace", a.Namespace, b.Namespace)
	same("target namespace", a.Namespace, a.Endpoints[0].TargetNamespace())
	same("port name", a.Ports[0].Name, b.Ports[0].Name)
	same("protocol", a.Ports[0].Protocol, b.Ports[0].Protocol)
	for i := range a.Endpoints {
		same("node name", a.Endpoints[0].NodeName(), b.Endpoints[i].NodeName())
		same("target kind", a.Endpoints[0].TargetKind(), b.Endpoints[i].TargetKind())
	}
	if unsafe.StringData(a.Endpoints[0].TargetName()) == unsafe.StringData(b.Endpoints[0].TargetName()) {
		t.Error("target names are interned: they rarely repeat")
	}
	for _, h := range keep {
		same("canonical", h.Value(), h.Value())
	}
}

// TestDecodeCompactsEveryResource checks that decoding every resource with
// every field set gives back the encoded value.
func TestDecodeCompactsEveryResource(t *testing.T) {
	for _, want := range sampleObjects() {
		b, err := Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(want.Key(), b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", want.Key(), got, want)
		}
	}
}

// BenchmarkDecodeEndpointSlice decodes a slice of 10 endpoints, as the
// standard benchmark's decode figure does.
func BenchmarkDecodeEndpointSlice(b *testing.B) {
	s := &EndpointSlice{Namespace: "bench", Name: "svc-0-abcde", ServiceName: "svc-0", AddressType: "IPv4",
		Ports: []EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}}}
	for i := range 10 {
		s.Endpoints = append(s.Endpoints, EndpointFields{Addresses: []string{"10.1." + strconv.Itoa(i+1) + ".2"}, Ready: true, Serving: true,
			NodeName: "node-" + strconv.Itoa(i+1), TargetKind: "Pod", TargetNamespace: "bench", TargetName: "pod-" + strconv.Itoa(i+1) + "-0"}.Endpoint())
	}
	raw, err := Encode(s)
	if err != nil {
		b.Fatal(err)
	}
	k := s.Key()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(k, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEndpointHintsStoredFlat: an endpoint without hints decodes with
// nothing behind its pointer to what few have (8 bytes, not two empty
// slices); one with hints keeps them, stored as the endpoint's own
// hintZones and hintNodes fields.
func TestEndpointHintsStoredFlat(t *testing.T) {
	s := &EndpointSlice{Namespace: "ns", Name: "s", AddressType: "IPv4", Endpoints: []Endpoint{
		EndpointFields{Addresses: []string{"10.1.1.1"}, Ready: true}.Endpoint(),
		EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true, HintZones: []string{"z"}, HintNodes: []string{"n"}}.Endpoint(),
	}}
	raw, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"ready":true,"hintZones":["z"],"hintNodes":["n"]}`; !strings.Contains(string(raw), want) {
		t.Errorf("stored %s, want the hints as %s", raw, want)
	}
	o, err := Decode(s.Key(), raw)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*EndpointSlice).Endpoints
	if got[0].more != nil || got[0].ZoneHints() != nil || got[0].NodeHints() != nil {
		t.Errorf("endpoint without hints decoded with %+v", got[0].more)
	}
	if !slices.Equal(got[1].ZoneHints(), []string{"z"}) || !slices.Equal(got[1].NodeHints(), []string{"n"}) {
		t.Errorf("hints %v %v, want [z] [n]", got[1].ZoneHints(), got[1].NodeHints())
	}
}

// TestDecodedPortListsShared: slices (and services) decoded with the same
// short list of ports share one array of them; other lists do not.
func TestDecodedPortListsShared(t *testing.T) {
	decode := func(name, ports string) *EndpointSlice {
		o, err := Decode(Key{Resource: ResEndpointSlice, Namespace: "ns", Name: name},
			[]byte(`{"namespace":"ns","name":"`+name+`","ports":`+ports+`}`))
		if err != nil {
			t.Fatal(err)
		}
		return o.(*EndpointSlice)
	}
	data := func(s *EndpointSlice) *EndpointPort { return unsafe.SliceData(s.Ports) }
	http := `[{"name":"http","protocol":"TCP","port":8080}]`
	a, b := decode("a", http), decode("b", http)
	if data(a) != data(b) || len(a.Ports) != 1 || cap(a.Ports) != 1 {
		t.Errorf("two slices of one port list: %p %p (len %d, cap %d)", data(a), data(b), len(a.Ports), cap(a.Ports))
	}
	if c := decode("c", `[{"name":"http","protocol":"TCP","port":8081}]`); data(c) == data(a) || c.Ports[0].Port != 8081 {
		t.Errorf("another port list shares the first: %+v", c.Ports)
	}
	long := `[{"port":1},{"port":2},{"port":3},{"port":4},{"port":5}]`
	if d, e := decode("d", long), decode("e", long); data(d) == data(e) || len(d.Ports) != 5 {
		t.Errorf("long lists shared: %+v", d.Ports)
	}
}
