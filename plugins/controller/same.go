package controller

import (
	"reflect"

	"contiv.dev/vpp/kubestate"
)

// same tells whether a put of o to a key that holds prev changes nothing:
// o and prev are the same value. The view compares a change with the
// object it already holds instead of keeping a digest of each stored value
// beside it: at W(50 000) a map of 100 000 digests was ~12 MiB of the
// agent's heap, and hashing each listed value ~0.1 s of its start.
//
// Objects are what kubestate decodes from a stored value (or what a
// producer pushes, which encodes to a storable value): a decoding keeps
// every field a handler sees, so two values that decode the same give
// handlers nothing to do, and the same value always decodes the same. The
// comparison is exact, never a chance: no false "unchanged" can drop a
// real change. EndpointSlices and Services, most of the changes, compare
// field by field (kubestate's Equal: ~0.2 µs for a slice of W(N)
// where SHA-256 took 1.2 µs, BenchmarkSameEndpointSlice); the other kinds
// by reflection.
func same(prev, o kubestate.Object) bool {
	if prev == o {
		return true
	}
	switch p := prev.(type) {
	case *kubestate.EndpointSlice:
		s, ok := o.(*kubestate.EndpointSlice)
		return ok && p.Equal(s)
	case *kubestate.Service:
		s, ok := o.(*kubestate.Service)
		return ok && p.Equal(s)
	}
	return reflect.DeepEqual(prev, o)
}
