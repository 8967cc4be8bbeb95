package kubestate

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// TestDecodeFastReadsEveryField fills every field of the fast path's
// models by reflection (so a field added later is covered too) and checks
// that the fast path takes the encoding and gives encoding/json's object.
func TestDecodeFastReadsEveryField(t *testing.T) {
	for _, o := range []Object{&EndpointSlice{}, &Service{}, &Pod{}} {
		fill(reflect.ValueOf(o).Elem(), new(int))
		b, err := Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		fast, diff := CompareDecodeFast(o.Key().Resource, b)
		if diff != "" {
			t.Fatalf("%s: %s", b, diff)
		}
		if !fast {
			t.Errorf("%s: fast path not taken", b)
		}
	}
}

// fill sets every field of v to a value of its own, slices to two elements.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("v" + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range s.Len() {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Endpoint]() { // built from its fields
			var f EndpointFields
			fill(reflect.ValueOf(&f).Elem(), n)
			v.Set(reflect.ValueOf(f.Endpoint()))
			return
		}
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, *n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

// TestPlainRun checks plainRun against plainByte: it stops at the first
// byte that does not stand for itself, whatever the bytes around it.
func TestPlainRun(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 24)
	for range 200000 {
		for i := range b {
			b[i] = 'a' + byte(r.IntN(26)) // plain
		}
		n := r.IntN(len(b) + 1) // plain bytes before the first other one
		if n < len(b) {
			c := byte(r.IntN(256))
			for plainByte[c] {
				c = byte(r.IntN(256))
			}
			b[n] = c
			for i := n + 1; i < len(b); i++ {
				b[i] = byte(r.IntN(256)) // anything after it
			}
		}
		from := r.IntN(n + 1)
		if got := plainRun(b, from); got != n {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", b, from, got, n)
		}
	}
}

// TestStoredEndpoint: an endpoint of one address and no hints, as the
// Writer stores it, is read by storedEndpoint (without looking its keys
// up) into the endpoint stored; any other form is left to the general
// reader untouched.
func TestStoredEndpoint(t *testing.T) {
	takes := []EndpointFields{
		{Addresses: []string{"10.1.2.3"}},
		{Addresses: []string{"10.1.2.3"}, Ready: true, Serving: true, NodeName: "node-1", TargetKind: "Pod", TargetNamespace: "ns", TargetName: "web-1"},
		{Addresses: []string{"fd00::1"}, Serving: true, Terminating: true, TargetKind: "Node", TargetName: "n"},
		{Addresses: []string{"010.1.2.3"}, Ready: true, NodeName: "node-2"}, // not an address's usual text: kept as text
		{Addresses: []string{"a\u00e9b"}, TargetNamespace: "other"},
	}
	declines := []EndpointFields{
		{},                      // addresses null
		{Addresses: []string{}}, // none
		{Addresses: []string{"10.1.2.3", "10.1.2.4"}}, // several
		{Addresses: []string{"10.1.2.3"}, HintZones: []string{"z"}},
		{Addresses: []string{"a\"b"}}, // escaped
	}
	read := func(b []byte) (Endpoint, bool, int) {
		d := decoder{b: b, s: string(b)}
		e, ok := d.storedEndpoint()
		return e, ok, d.i
	}
	for _, f := range takes {
		want := f.Endpoint()
		b := want.appendJSON(nil)
		e, ok, i := read(b)
		if !ok || i != len(b) {
			t.Errorf("%s: not read (%v, at %d)", b, ok, i)
			continue
		}
		if !e.equal(&want) {
			t.Errorf("%s: read %+v, want %+v", b, e.Fields(), f)
		}
	}
	for _, f := range declines {
		e := f.Endpoint()
		b := e.appendJSON(nil)
		if _, ok, i := read(b); ok || i != 0 {
			t.Errorf("%s: read by storedEndpoint (%v, at %d)", b, ok, i)
		}
	}
	for _, b := range []string{
		`{"addresses":["10.1.2.3"],"serving":true,"ready":true}`, // out of order
		`{"addresses":["10.1.2.3"], "ready":true}`,               // white space
		`{"addresses":["10.1.2.3"],"ready":true,"ready":true}`,   // twice
		`{"addresses":["10.1.2.3"],"ready":false}`,
		`{"addresses":["10.1.2.3"],"nodeName":1}`,
		`{"addresses":["10.1.2.3"],"other":1}`,
	} {
		if _, ok, i := read([]byte(b)); ok || i != 0 {
			t.Errorf("%s: read by storedEndpoint (%v, at %d)", b, ok, i)
		}
	}
}
