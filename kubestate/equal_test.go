package kubestate

import (
	"reflect"
	"testing"
	"time"
)

// TestEqualSeesEveryField fills every field of a Service and of an
// EndpointSlice by reflection (a field added later is covered too), then
// changes one leaf at a time: each change must make the objects unequal,
// and a decoding of the stored value must be equal.
func TestEqualSeesEveryField(t *testing.T) {
	for _, mk := range []func() Object{
		func() Object { return &EndpointSlice{} },
		func() Object { return &Service{} },
	} {
		filled := func() Object {
			o := mk()
			fill(reflect.ValueOf(o).Elem(), new(int))
			return o
		}
		equal := func(a, b Object) bool {
			switch a := a.(type) {
			case *EndpointSlice:
				return a.Equal(b.(*EndpointSlice))
			case *Service:
				return a.Equal(b.(*Service))
			}
			panic("no Equal")
		}
		a := filled()
		raw, err := Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(a.Key(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(a, d) {
			t.Fatalf("%T: a decoding of its value is not equal", a)
		}
		n := 0
		for i := 0; ; i++ {
			b := filled()
			if !mutate(reflect.ValueOf(b).Elem(), new(int), i) {
				break
			}
			n++
			if equal(a, b) || equal(b, a) {
				t.Errorf("%T: leaf %d changed, still equal", a, i)
			}
		}
		if n < 10 {
			t.Fatalf("%T: only %d leaves", a, n)
		}
	}
}

// mutate changes the target-th leaf of v (in fill's order); false when v
// has fewer leaves. A slice's length counts as a leaf of its own.
func mutate(v reflect.Value, seen *int, target int) bool {
	leaf := func(change func()) bool {
		*seen++
		if *seen-1 == target {
			change()
			return true
		}
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return leaf(func() { v.SetString(v.String() + "x") })
	case reflect.Bool:
		return leaf(func() { v.SetBool(!v.Bool()) })
	case reflect.Int32:
		return leaf(func() { v.SetInt(v.Int() + 1) })
	case reflect.Slice:
		if leaf(func() { v.Set(v.Slice(0, v.Len()-1)) }) {
			return true
		}
		for i := range v.Len() {
			if mutate(v.Index(i), seen, target) {
				return true
			}
		}
	case reflect.Pointer:
		if leaf(func() { v.Set(reflect.Zero(v.Type())) }) {
			return true
		}
		return mutate(v.Elem(), seen, target)
	case reflect.Struct:
		if e, ok := v.Interface().(Endpoint); ok { // through its fields
			f := e.Fields()
			if !mutate(reflect.ValueOf(&f).Elem(), seen, target) {
				return false
			}
			v.Set(reflect.ValueOf(f.Endpoint()))
			return true
		}
		if tm, ok := v.Interface().(time.Time); ok {
			return leaf(func() { v.Set(reflect.ValueOf(tm.Add(time.Nanosecond))) })
		}
		for i := range v.NumField() {
			if mutate(v.Field(i), seen, target) {
				return true
			}
		}
	}
	return false
}
