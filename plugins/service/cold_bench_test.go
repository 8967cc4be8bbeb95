package service

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// decodedObjects is W(N)'s base state as the controller's snapshot holds
// it: every object decoded from its stored bytes (interned names, each
// object's own strings in one allocation), not the workload's own.
func decodedObjects(b *testing.B, w *workload.Workload) map[kubestate.Key]kubestate.Object {
	b.Helper()
	objs := w.Objects()
	for k, o := range objs {
		objs[k] = decode(b, o)
	}
	return objs
}

func decode[T kubestate.Object](b *testing.B, o T) T {
	b.Helper()
	raw, err := kubestate.Encode(o)
	if err != nil {
		b.Fatal(err)
	}
	d, err := kubestate.Decode(o.Key(), raw)
	if err != nil {
		b.Fatal(err)
	}
	return d.(T)
}

// BenchmarkChangeCold is the per-change path on cold state: every change
// touches another service, each of W(N)'s in turn (the churn's order:
// stride 7919), so that at N=50000 what the processor holds of the changed
// service has left the CPU's caches, as in the pipeline figure, while at
// N=1000 it stays in them. A service's slice goes to 9 endpoints at one
// visit and back to its 10 at the next. The changes are decoded in blocks
// of 100 just before they run, outside the timer: the new object is in
// the cache, as the watcher's just-decoded objects are. The ratio of the
// two sizes' cpu-ns/op is the processor's part of the growth figure.
func BenchmarkChangeCold(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			w := workload.New(n)
			br := &benchRig{w: w, obj: decodedObjects(b, w)}
			br.fresh(b)
			br.resync(b)
			ctx := context.Background()
			changed := make([]bool, n)
			// held is the slice of each service the processor holds: the
			// events' Prev, as the controller's view gives it.
			held := make([]kubestate.Object, n)
			for s, sl := range w.Slices {
				held[s] = br.obj[sl.Key()]
			}
			const block = 100
			evs := make([]*controller.ChangeEvent, 0, block)
			raws := make([][]byte, 0, block)
			svcs := make([]int, 0, block)
			visit := 0
			next := func() {
				evs, raws, svcs = evs[:0], raws[:0], svcs[:0]
				for range block {
					s := (7919*visit + 13) % n
					visit++
					now := workload.Slice(s, workload.EndpointsPer-1, false)
					if changed[s] {
						now = w.Slices[s]
					}
					changed[s] = !changed[s]
					raw, err := kubestate.Encode(now)
					if err != nil {
						b.Fatal(err)
					}
					raws, svcs = append(raws, raw), append(svcs, s)
					evs = append(evs, &controller.ChangeEvent{Key: now.Key()})
				}
				// Decoded last, as the watcher does just before handing
				// them over: their memory is what was touched last.
				for i, ev := range evs {
					o, err := kubestate.Decode(ev.Key, raws[i])
					if err != nil {
						b.Fatal(err)
					}
					ev.Key, ev.Prev, ev.New = o.Key(), held[svcs[i]], o
					held[svcs[i]] = o
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var cpu int64
			var blocks []float64 // wall ns per change of each full block
			for i := 0; i < b.N; i += block {
				b.StopTimer()
				next()
				b.StartTimer()
				c0, t0 := cpuTime(b), time.Now()
				todo := evs[:min(block, b.N-i)]
				for _, ev := range todo {
					if !br.p.HandlesEvent(ev) {
						b.Fatal("slice change not handled")
					}
					if err := br.p.Update(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				if len(todo) == block {
					blocks = append(blocks, float64(time.Since(t0))/block)
				}
				cpu += int64(cpuTime(b) - c0)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			if len(blocks) > 0 {
				// The quickest block: the least disturbed by the machine's
				// other work (and by the collector).
				b.ReportMetric(slices.Min(blocks), "best-block-ns/op")
			}
		})
	}
}

// BenchmarkResyncDecoded is a full resync of W(N) by a processor without
// state, its snapshot decoded from stored bytes as the controller's is:
// the processor's part of the pipeline's resync figure.
func BenchmarkResyncDecoded(b *testing.B) {
	for _, n := range []int{1000, 50000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			w := workload.New(n)
			br := &benchRig{w: w, obj: decodedObjects(b, w)}
			b.ReportAllocs()
			b.ResetTimer()
			var cpu int64
			for range b.N {
				b.StopTimer()
				br.fresh(b)
				b.StartTimer()
				c0 := cpuTime(b)
				br.resync(b)
				cpu += int64(cpuTime(b) - c0)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
