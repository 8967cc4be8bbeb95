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
