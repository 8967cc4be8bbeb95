package kubestate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// FuzzDecodeFast is the differential test of Decode's fast path: on any
// bytes, as any resource, it gives encoding/json's object or declines.
// Seeds: the objects of the benchmark's W(1000) (a sample of each kind)
// and of the example cluster, as the Writer stores them, and mutations of
// them that take the slow path.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range seedValues(f) {
		f.Add(uint8(slices.Index(kubestate.Resources, s.res)), s.value)
	}
	for _, c := range trickyValues {
		f.Add(uint8(slices.Index(kubestate.Resources, c.res)), []byte(c.value))
	}
	f.Fuzz(func(t *testing.T, res uint8, value []byte) {
		r := kubestate.Resources[int(res)%len(kubestate.Resources)]
		if _, diff := kubestate.CompareDecodeFast(r, value); diff != "" {
			t.Fatalf("%s %q: %s", r, value, diff)
		}
	})
}

// seed is a stored value and its resource.
type seed struct {
	res   kubestate.Resource
	value []byte
}

// seedValues encodes a sample of W(1000)'s objects, every object of the
// example cluster, and each of them reindented.
func seedValues(tb testing.TB) []seed {
	w := workload.New(1000)
	var objs []kubestate.Object
	for i := 0; i < w.N; i += 97 {
		objs = append(objs, w.Services[i], w.Slices[i])
	}
	objs = append(objs, w.Pods[0], w.Nodes[0], w.VppNodes[0], workload.Slice(9, 10, true))
	f, err := os.Open("../deploy/examples/cluster.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cluster, err := kubestate.LoadYAML(f)
	if err != nil {
		tb.Fatal(err)
	}
	objs = append(objs, cluster...)
	var out []seed
	for _, o := range objs {
		b, err := kubestate.Encode(o)
		if err != nil {
			tb.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "\t"); err != nil {
			tb.Fatal(err)
		}
		r := o.Key().Resource
		out = append(out, seed{r, b}, seed{r, ind.Bytes()})
	}
	return out
}
