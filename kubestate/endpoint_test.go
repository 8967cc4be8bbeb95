package kubestate

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"pgregory.net/rapid"
)

// TestCompactSizes holds the models a cluster has most of to their sizes:
// an Endpoint of 48 bytes (104 as a struct of strings), a Service of 176
// (312 with every field inline).
func TestCompactSizes(t *testing.T) {
	if n := unsafe.Sizeof(Endpoint{}); n > 48 {
		t.Errorf("Endpoint is %d bytes, want at most 48", n)
	}
	if n := unsafe.Sizeof(Service{}); n > 176 {
		t.Errorf("Service is %d bytes, want at most 176", n)
	}
}

// TestEndpointAddressForms: an address in its usual text is held as an
// address (Addr gives netip.ParseAddr's), anything else as its text; both
// give back exactly the text they were built from, and so does a stored
// value decoded by either path.
func TestEndpointAddressForms(t *testing.T) {
	for _, c := range []struct {
		addrs []string
		held  bool // as an address
	}{
		{[]string{"10.1.2.3"}, true},
		{[]string{"0.0.0.0"}, true},
		{[]string{"255.255.255.255"}, true},
		{[]string{"fd00::1"}, true},
		{[]string{"2001:db8:0:1:2:3:4:5"}, true},
		{[]string{"::"}, true},
		{[]string{"::ffff:10.1.2.3"}, true}, // IPv4-mapped: kept as IPv6, as ParseAddr gives it
		{[]string{"FD00::1"}, false},        // not its usual text: kept as text
		{[]string{"fd00:0::1"}, false},
		{[]string{"::ffff:a01:203"}, false},
		{[]string{"fe80::1%eth0"}, false}, // a zone
		{[]string{"010.1.2.3"}, false},
		{[]string{"10.1.2.300"}, false},
		{[]string{"10.1.2"}, false},
		{[]string{""}, false},
		{[]string{"example.com"}, false},
		{[]string{"10.1.2.3", "10.1.2.4"}, false}, // several
		{[]string{}, false},
		{nil, false},
	} {
		f := EndpointFields{Addresses: c.addrs, Ready: true, NodeName: "node-1", TargetKind: "Pod", TargetNamespace: "ns", TargetName: "p"}
		e := f.Endpoint()
		a, held := e.Addr()
		if held != c.held {
			t.Errorf("%q: held as an address %v, want %v", c.addrs, held, c.held)
		}
		if held {
			if want, err := netip.ParseAddr(c.addrs[0]); err != nil || a != want {
				t.Errorf("%q: address %v, ParseAddr gives %v (%v)", c.addrs, a, want, err)
			}
		}
		if e.NumAddresses() != len(c.addrs) {
			t.Errorf("%q: %d addresses", c.addrs, e.NumAddresses())
		}
		for i, s := range c.addrs {
			if got := e.Address(i); got != s {
				t.Errorf("%q: address %d is %q", c.addrs, i, got)
			}
		}
		if got := e.Fields(); !reflect.DeepEqual(got, f) {
			t.Errorf("%q: fields %+v, want %+v", c.addrs, got, f)
		}
		// Stored and decoded, by the fast path and by encoding/json.
		s := &EndpointSlice{Namespace: "ns", Name: "s", Endpoints: []Endpoint{e}}
		raw, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(struct {
			Namespace string           `json:"namespace"`
			Name      string           `json:"name"`
			Endpoints []EndpointFields `json:"endpoints"`
		}{"ns", "s", []EndpointFields{f}})
		if string(raw) != string(want) {
			t.Errorf("%q: stored %s, want %s", c.addrs, raw, want)
		}
		for _, dec := range []func() (Object, error){
			func() (Object, error) { return Decode(s.Key(), raw) },
			func() (Object, error) { return decodeJSON(s.Key(), raw) },
		} {
			o, err := dec()
			if err != nil {
				t.Fatal(err)
			}
			d := o.(*EndpointSlice)
			if !d.Equal(s) || !reflect.DeepEqual(d.Endpoints[0].Fields(), f) {
				t.Errorf("%q: decoded %+v, want %+v", c.addrs, d.Endpoints[0].Fields(), f)
			}
		}
	}
}

// TestEndpointRoundTrip: any endpoint's fields survive being built,
// stored and decoded by either path, and the decodings are equal to it
// (Equal) and to each other (the fast path gives encoding/json's).
func TestEndpointRoundTrip(t *testing.T) {
	addr := rapid.Custom(func(t *rapid.T) string {
		switch rapid.IntRange(0, 5).Draw(t, "form") {
		case 0:
			b := rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "v4")
			return netip.AddrFrom4([4]byte(b)).String()
		case 1:
			b := rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "v6")
			return netip.AddrFrom16([16]byte(b)).String()
		case 2:
			b := rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "v6")
			return netip.AddrFrom16([16]byte(b)).StringExpanded() // not the usual text, mostly
		case 3:
			return rapid.SampledFrom([]string{"fe80::1%eth0", "010.0.0.1", "1.2.3.256", "::FFFF:1.2.3.4", "", "x"}).Draw(t, "odd")
		case 4:
			return strconv.Itoa(rapid.IntRange(0, 300).Draw(t, "a")) + ".1.2." + strconv.Itoa(rapid.IntRange(0, 300).Draw(t, "b"))
		}
		return rapid.StringN(0, 12, -1).Draw(t, "text")
	})
	strs := func(label string) *rapid.Generator[[]string] {
		return rapid.Custom(func(t *rapid.T) []string {
			if rapid.IntRange(0, 3).Draw(t, label+" nil") == 0 {
				return nil
			}
			return rapid.SliceOfN(rapid.SampledFrom([]string{"a", "zone-1", "node-2"}), 1, 2).Draw(t, label)
		})
	}
	rapid.Check(t, func(t *rapid.T) {
		f := EndpointFields{
			Ready: rapid.Bool().Draw(t, "ready"), Serving: rapid.Bool().Draw(t, "serving"),
			Terminating:     rapid.Bool().Draw(t, "terminating"),
			NodeName:        rapid.SampledFrom([]string{"", "node-1", "node-2"}).Draw(t, "node"),
			TargetKind:      rapid.SampledFrom([]string{"", "Pod", "Node"}).Draw(t, "kind"),
			TargetNamespace: rapid.SampledFrom([]string{"", "ns", "other"}).Draw(t, "namespace"),
			TargetName:      rapid.SampledFrom([]string{"", "pod-1"}).Draw(t, "name"),
			HintZones:       strs("zones").Draw(t, "zones"),
			HintNodes:       strs("nodes").Draw(t, "nodes"),
		}
		if rapid.IntRange(0, 5).Draw(t, "addresses nil") > 0 {
			f.Addresses = rapid.SliceOfN(addr, 0, 3).Draw(t, "addresses")
		}
		e := f.Endpoint()
		if got := e.Fields(); !reflect.DeepEqual(got, f) {
			t.Fatalf("fields %#v, built from %#v", got, f)
		}
		s := &EndpointSlice{Namespace: "ns", Name: "s", Endpoints: []Endpoint{e}}
		raw, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		// The fast path takes what has no escapes (encoding/json's
		// HTML escapes among them) and gives encoding/json's object.
		if _, diff := CompareDecodeFast(ResEndpointSlice, raw); diff != "" {
			t.Fatalf("%s: %s", raw, diff)
		}
		o, err := Decode(s.Key(), raw)
		if err != nil {
			t.Fatal(err)
		}
		d := o.(*EndpointSlice)
		if !d.Equal(s) || !s.Equal(d) {
			t.Fatalf("%s: decoded %#v, not equal to %#v", raw, d.Endpoints[0].Fields(), f)
		}
		// Stored values do not tell nil from empty: Equal does not either.
		got, want := d.Endpoints[0].Fields(), f
		for _, p := range [][2]*[]string{{&got.HintZones, &want.HintZones}, {&got.HintNodes, &want.HintNodes}} {
			if len(*p[0]) == 0 && len(*p[1]) == 0 {
				*p[0], *p[1] = nil, nil
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded fields %#v, want %#v", raw, got, want)
		}
	})
}

// FuzzEndpointAddress: whatever the text of an endpoint's one address,
// the endpoint gives it back, and holds it as an address only when
// netip.ParseAddr reads it as that address.
func FuzzEndpointAddress(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "fd00::1", "::ffff:1.2.3.4", "FD00::1", "fe80::1%eth0", "1.2.3.04", "", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EndpointFields{Addresses: []string{s}}.Endpoint()
		if got := e.Address(0); got != s {
			t.Fatalf("%q: address %q", s, got)
		}
		if a, ok := e.Addr(); ok {
			if want, err := netip.ParseAddr(s); err != nil || want != a || want.String() != s {
				t.Fatalf("%q: held as %v; ParseAddr gives %v (%v)", s, a, want, err)
			}
		}
	})
}

// TestNamesPastTheTable: once the table of names is full, an endpoint
// keeps a name it has no handle for as a string, with the same value.
func TestNamesPastTheTable(t *testing.T) {
	nameFor("node-known")
	names.mu.Lock()
	saved := maxNames
	maxNames = names.n
	names.mu.Unlock()
	defer func() {
		names.mu.Lock()
		maxNames = saved
		names.mu.Unlock()
	}()
	f := EndpointFields{Addresses: []string{"10.1.1.1"}, NodeName: "node-past-the-table", TargetNamespace: "ns-past-the-table", TargetName: "p"}
	e := f.Endpoint()
	if e.more == nil || e.node != 0 {
		t.Fatalf("a name past the table held as a handle: %+v", e)
	}
	if got := e.Fields(); !reflect.DeepEqual(got, f) {
		t.Errorf("fields %+v, want %+v", got, f)
	}
	known := EndpointFields{NodeName: "node-known"}.Endpoint()
	if known.more != nil || known.NodeName() != "node-known" {
		t.Errorf("a name in the table: %+v, %q", known, known.NodeName())
	}
	other := f
	other.NodeName = "node-past-the-table-2"
	if e2 := other.Endpoint(); e2.equal(&e) || e.equal(&e2) {
		t.Errorf("endpoints of two node names past the table are equal")
	}
	if e2 := f.Endpoint(); !e2.equal(&e) {
		t.Errorf("endpoints of one node name past the table are not equal")
	}
}

// TestStoredFormsUnchanged: a Service and an EndpointSlice, every field
// set, are stored with the bytes the models of strings gave them (the
// Writer compares stored bytes: a change of form would rewrite them all).
func TestStoredFormsUnchanged(t *testing.T) {
	type oldEndpoint struct {
		Addresses       []string `json:"addresses"`
		Ready           bool     `json:"ready,omitempty"`
		Serving         bool     `json:"serving,omitempty"`
		Terminating     bool     `json:"terminating,omitempty"`
		NodeName        string   `json:"nodeName,omitempty"`
		TargetKind      string   `json:"targetKind,omitempty"`
		TargetNamespace string   `json:"targetNamespace,omitempty"`
		TargetName      string   `json:"targetName,omitempty"`
		HintZones       []string `json:"hintZones,omitempty"`
		HintNodes       []string `json:"hintNodes,omitempty"`
	}
	type oldSlice struct {
		Namespace   string         `json:"namespace"`
		Name        string         `json:"name"`
		ServiceName string         `json:"serviceName,omitempty"`
		AddressType string         `json:"addressType,omitempty"`
		Ports       []EndpointPort `json:"ports,omitempty"`
		Endpoints   []oldEndpoint  `json:"endpoints,omitempty"`
		TriggerTime time.Time      `json:"triggerTime,omitzero"`
	}
	type oldService struct { // the Service of strings, field by field
		Namespace                string        `json:"namespace"`
		Name                     string        `json:"name"`
		Type                     string        `json:"type,omitempty"`
		ClusterIPs               []string      `json:"clusterIPs,omitempty"`
		ExternalIPs              []string      `json:"externalIPs,omitempty"`
		LBIngressIPs             []string      `json:"lbIngressIPs,omitempty"`
		LBProxyIPs               []string      `json:"lbProxyIPs,omitempty"`
		Ports                    []ServicePort `json:"ports,omitempty"`
		HealthCheckNodePort      int32         `json:"healthCheckNodePort,omitempty"`
		LoadBalancerSourceRanges []string      `json:"loadBalancerSourceRanges,omitempty"`
		TrafficDistribution      string        `json:"trafficDistribution,omitempty"`
		ExternalTrafficPolicy    string        `json:"externalTrafficPolicy,omitempty"`
		InternalTrafficPolicy    string        `json:"internalTrafficPolicy,omitempty"`
		SessionAffinity          string        `json:"sessionAffinity,omitempty"`
		SessionAffinityTimeout   int32         `json:"sessionAffinityTimeout,omitempty"`
		ProxyName                string        `json:"proxyName,omitempty"`
		Created                  time.Time     `json:"created,omitzero"`
	}
	for _, c := range []struct {
		o   Object
		old any
	}{
		{&Service{}, &oldService{}},
		{&EndpointSlice{}, &oldSlice{}},
	} {
		fill(reflect.ValueOf(c.o).Elem(), new(int))
		raw, err := Encode(c.o)
		if err != nil {
			t.Fatal(err)
		}
		// The same values in the old models, through their stored form.
		if err := json.Unmarshal(raw, c.old); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(c.old)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != string(want) {
			t.Errorf("%T stored as\n%s\nwant\n%s", c.o, raw, want)
		}
		if !strings.Contains(string(raw), `"externalIPs"`) && !strings.Contains(string(raw), `"hintZones"`) {
			t.Errorf("%T: not every field set: %s", c.o, raw)
		}
	}
}

// TestEndpointEdit: Edit changes one endpoint, not a copy of it sharing
// its addresses and hints.
func TestEndpointEdit(t *testing.T) {
	e := EndpointFields{Addresses: []string{"10.1.1.1", "10.1.1.2"}, Ready: true, HintZones: []string{"z"}}.Endpoint()
	copied := e
	e.Edit(func(f *EndpointFields) {
		f.Addresses[0], f.HintZones[0], f.Ready, f.NodeName = "10.9.9.9", "y", false, "node-9"
	})
	want := EndpointFields{Addresses: []string{"10.9.9.9", "10.1.1.2"}, NodeName: "node-9", HintZones: []string{"y"}}
	if got := e.Fields(); !reflect.DeepEqual(got, want) {
		t.Errorf("edited %+v, want %+v", got, want)
	}
	if got, want := copied.Fields(), (EndpointFields{Addresses: []string{"10.1.1.1", "10.1.1.2"}, Ready: true, HintZones: []string{"z"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("a copy became %+v, want %+v", got, want)
	}
}

// TestEncodeSliceAsEncodingJSON: the hand-written stored form of an
// EndpointSlice is encoding/json's of its fields spelled out, byte for
// byte, whatever the strings (escapes, HTML characters, invalid UTF-8),
// addresses, conditions and hints.
func TestEncodeSliceAsEncodingJSON(t *testing.T) {
	type spelled struct {
		Namespace   string           `json:"namespace"`
		Name        string           `json:"name"`
		ServiceName string           `json:"serviceName,omitempty"`
		AddressType string           `json:"addressType,omitempty"`
		Ports       []EndpointPort   `json:"ports,omitempty"`
		Endpoints   []EndpointFields `json:"endpoints,omitempty"`
		TriggerTime time.Time        `json:"triggerTime,omitzero"`
	}
	str := rapid.OneOf(rapid.SampledFrom([]string{"", "a", "node-1", "Pod", "TCP", "<&>", "é", "\u2028", "\"\\", "\x00\x1f", "\xff"}), rapid.String())
	strs := rapid.OneOf(rapid.Just([]string(nil)), rapid.SliceOfN(rapid.OneOf(str, rapid.SampledFrom([]string{"10.1.2.3", "fd00::1"})), 0, 3))
	rapid.Check(t, func(t *rapid.T) {
		v := spelled{
			Namespace: str.Draw(t, "namespace"), Name: str.Draw(t, "name"),
			ServiceName: str.Draw(t, "service"), AddressType: str.Draw(t, "type"),
			Ports: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) EndpointPort {
				return EndpointPort{Name: str.Draw(t, "name"), Protocol: str.Draw(t, "protocol"), Port: rapid.Int32().Draw(t, "port")}
			}), 0, 2).Draw(t, "ports"),
			TriggerTime: rapid.SampledFrom([]time.Time{{}, time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))}).Draw(t, "time"),
		}
		s := &EndpointSlice{Namespace: v.Namespace, Name: v.Name, ServiceName: v.ServiceName, AddressType: v.AddressType,
			Ports: v.Ports, TriggerTime: v.TriggerTime}
		if rapid.Bool().Draw(t, "endpoints") {
			v.Endpoints = []EndpointFields{}
			for range rapid.IntRange(0, 3).Draw(t, "n") {
				f := EndpointFields{
					Addresses: strs.Draw(t, "addresses"),
					Ready:     rapid.Bool().Draw(t, "ready"), Serving: rapid.Bool().Draw(t, "serving"),
					Terminating: rapid.Bool().Draw(t, "terminating"),
					NodeName:    str.Draw(t, "node"), TargetKind: str.Draw(t, "kind"),
					TargetNamespace: str.Draw(t, "ns"), TargetName: str.Draw(t, "target"),
					HintZones: strs.Draw(t, "zones"), HintNodes: strs.Draw(t, "nodes"),
				}
				v.Endpoints = append(v.Endpoints, f)
				s.Endpoints = append(s.Endpoints, f.Endpoint())
			}
			if len(s.Endpoints) == 0 {
				s.Endpoints = []Endpoint{}
			}
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("stored\n%q\nencoding/json\n%q", got, want)
		}
		if m, err := json.Marshal(s); err != nil || string(m) != string(want) {
			t.Fatalf("json.Marshal gives\n%q (%v)\nencoding/json\n%q", m, err, want)
		}
	})
}

// TestNamesConcurrently: endpoints built on several goroutines at once
// with names new to the table (past the end of a chunk of it) read back
// their names on other goroutines (run with -race).
func TestNamesConcurrently(t *testing.T) {
	const workers, each = 4, nameChunk + 100
	out := make(chan Endpoint, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := "concurrent-node-" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				out <- EndpointFields{NodeName: n, TargetNamespace: "concurrent-ns-" + strconv.Itoa(i%7)}.Endpoint()
			}
		}()
	}
	seen := make(map[string]bool)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range out {
			if !strings.HasPrefix(e.NodeName(), "concurrent-node-") || !strings.HasPrefix(e.TargetNamespace(), "concurrent-ns-") {
				t.Errorf("endpoint names %q %q", e.NodeName(), e.TargetNamespace())
			}
			seen[e.NodeName()] = true
		}
	}()
	wg.Wait()
	close(out)
	<-done
	if len(seen) != workers*each {
		t.Errorf("%d distinct node names read back, want %d", len(seen), workers*each)
	}
}
