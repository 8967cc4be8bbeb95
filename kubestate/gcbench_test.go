package kubestate

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
)

// BenchmarkGCDecodedSlices measures a collection with the endpoint slices
// of W(50000) decoded and live (50 000 slices of 10 endpoints, stored as
// the reflector stores them): the collector's mark work over the decoded
// view, which a change pays in proportion to the heap.
func BenchmarkGCDecodedSlices(b *testing.B) {
	const slices, per = 50000, 10
	view := make([]Object, slices)
	for i := range view {
		n := strconv.Itoa(i)
		raw := []byte(`{"namespace":"bench","name":"svc-` + n + `-abcde","serviceName":"svc-` + n + `","addressType":"IPv4","ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[`)
		for j := range per {
			if j > 0 {
				raw = append(raw, ',')
			}
			m := strconv.Itoa(j)
			raw = append(raw, `{"addresses":["10.`+strconv.Itoa(i>>8&255)+`.`+strconv.Itoa(i&255)+`.`+m+`"],"ready":true,"serving":true,"nodeName":"node-`+strconv.Itoa((i+j)%100)+`","targetKind":"Pod","targetNamespace":"bench","targetName":"pod-`+n+`-`+m+`"}`...)
		}
		raw = append(raw, "]}"...)
		o, err := Decode(Key{Resource: ResEndpointSlice, Namespace: "bench", Name: "svc-" + n + "-abcde"}, raw)
		if err != nil {
			b.Fatal(err)
		}
		view[i] = o
	}
	runtime.GC()
	ms := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(ms)
	cpu0 := ms[1].Value.Float64()
	for b.Loop() {
		runtime.GC()
	}
	metrics.Read(ms)
	b.ReportMetric(float64(ms[0].Value.Uint64())/(1<<20), "scan-MiB")
	b.ReportMetric((ms[1].Value.Float64()-cpu0)*1e6/float64(b.N), "gc-cpu-us/op")
	runtime.KeepAlive(view)
}
