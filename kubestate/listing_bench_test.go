package kubestate_test

import (
	"testing"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// BenchmarkDecodeListingW50000 decodes the stored values of W(50 000) (an
// agent's listing at start: ~100 000 Services, EndpointSlices, Pods and
// nodes), as its start does (ParseKey and Decode of each); ns/op and allocations are per listing.
func BenchmarkDecodeListingW50000(b *testing.B) {
	type kv struct {
		key string
		raw []byte
	}
	var values []kv
	for k, o := range workload.New(50000).Objects() {
		raw, err := kubestate.Encode(o)
		if err != nil {
			b.Fatal(err)
		}
		values = append(values, kv{k.String(), raw})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range values {
			k, err := kubestate.ParseKey(v.key)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := kubestate.Decode(k, v.raw); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(values)), "values")
}
