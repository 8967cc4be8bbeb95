package kubestate

import (
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
