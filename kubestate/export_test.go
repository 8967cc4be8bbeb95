package kubestate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// DecodeFast exposes the fast path to the external tests.
var DecodeFast = decodeFast

// CompareDecodeFast decodes value as an r with the fast path and with
// encoding/json + compact, and tells how they differ ("" when they agree).
// They agree when the fast path declines, or gives encoding/json's object
// for a value encoding/json accepts; Decode must give encoding/json's
// object or an error naming the key. The fast path's input is overwritten
// afterwards: a decoded string still cut from it would show.
func CompareDecodeFast(r Resource, value []byte) (fast bool, diff string) {
	want, err := New(r)
	if err != nil {
		return false, err.Error()
	}
	jsonErr := json.Unmarshal(value, want)
	if jsonErr == nil {
		compact(want)
	}
	in := append([]byte(nil), value...)
	got, fast := decodeFast(r, in)
	for i := range in {
		in[i] = 'X'
	}
	switch {
	case fast && jsonErr != nil:
		return fast, fmt.Sprintf("fast path accepted what encoding/json refuses (%v): %+v", jsonErr, got)
	case fast && !reflect.DeepEqual(got, want):
		return fast, fmt.Sprintf("fast path gave\n%#v\nencoding/json\n%#v", got, want)
	}
	k := Key{Resource: r, Namespace: "ns", Name: "n"}
	if jsonErr == nil {
		k = want.Key()
	}
	o, err := Decode(k, value)
	switch {
	case jsonErr != nil && err == nil:
		return fast, fmt.Sprintf("Decode accepted what encoding/json refuses (%v)", jsonErr)
	case err != nil && !strings.Contains(err.Error(), k.String()):
		return fast, fmt.Sprintf("error %q does not name the key %s", err, k)
	case err == nil && !reflect.DeepEqual(o, want):
		return fast, fmt.Sprintf("Decode gave\n%#v\nencoding/json\n%#v", o, want)
	}
	return fast, ""
}
