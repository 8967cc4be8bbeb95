package kubestate

import (
	"strconv"
	"testing"
)

// BenchmarkDecodeService decodes a stored ClusterIP Service of two ports,
// as the reflector writes them.
func BenchmarkDecodeService(b *testing.B) {
	raw := []byte(`{"namespace":"bench","name":"svc-0","type":"ClusterIP","clusterIPs":["10.96.0.10"],"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":"8080"},{"name":"https","protocol":"TCP","port":443,"targetPort":"8443"}],"externalTrafficPolicy":"Cluster","internalTrafficPolicy":"Cluster","sessionAffinity":"None","created":"2026-11-26T01:02:03Z"}`)
	k := Key{Resource: ResService, Namespace: "bench", Name: "svc-0"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(k, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeEndpointSlice stores a decoded slice of 10 endpoints, as
// the reflector stores every slice it writes.
func BenchmarkEncodeEndpointSlice(b *testing.B) {
	raw := []byte(`{"namespace":"bench","name":"svc-0-abcde","serviceName":"svc-0","addressType":"IPv4","ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[`)
	for i := range 10 {
		if i > 0 {
			raw = append(raw, ',')
		}
		n := strconv.Itoa(i + 1)
		raw = append(raw, `{"addresses":["10.1.`+n+`.2"],"ready":true,"serving":true,"nodeName":"node-`+n+`","targetKind":"Pod","targetNamespace":"bench","targetName":"pod-`+n+`-0"}`...)
	}
	raw = append(raw, "]}"...)
	o, err := Decode(Key{Resource: ResEndpointSlice, Namespace: "bench", Name: "svc-0-abcde"}, raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(o); err != nil {
			b.Fatal(err)
		}
	}
}
