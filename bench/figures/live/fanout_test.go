package live

import (
	"bytes"
	"runtime"
	"testing"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// TestChangeSeqAlwaysChanges checks what the fan-out and agent-change
// figures rely on: written in turn from W(N)'s base, cyclically, every
// value of the sequence differs from what its key holds, so that no write
// is dropped as a no-op and every one reaches the VPP.
func TestChangeSeqAlwaysChanges(t *testing.T) {
	w := workload.New(100)
	cur := map[kubestate.Key][]byte{}
	for _, s := range w.Slices {
		b, err := kubestate.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		cur[s.Key()] = b
	}
	seq := changeSeq(w)
	if len(seq) != 2*workload.ChurnChanges {
		t.Fatalf("%d changes, want %d", len(seq), 2*workload.ChurnChanges)
	}
	for i := range 2 * len(seq) {
		s := seq[i%len(seq)]
		b, err := kubestate.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(cur[s.Key()], b) {
			t.Fatalf("write %d (%s) changes nothing", i, s.Key())
		}
		cur[s.Key()] = b
	}
}

// TestHeapSplitSeesAllocations checks that the non-etcd part of the split
// grows by what this test keeps alive (the heap profile samples, so only
// roughly).
func TestHeapSplitSeesAllocations(t *testing.T) {
	_, before := heapSplit()
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	_, after := heapSplit()
	if grew := after - before; grew < 32<<20 {
		t.Errorf("heap outside etcd grew by %.1f MiB holding 64 MiB", grew/(1<<20))
	}
	runtime.KeepAlive(keep)
}
