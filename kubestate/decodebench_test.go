package kubestate

import "testing"

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
