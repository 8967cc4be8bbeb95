package controller

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// counter counts the changes it takes in and signals when it reached want.
type counter struct {
	n    atomic.Int64
	want atomic.Int64
	done chan struct{}
}

func (c *counter) Name() string                               { return "counter" }
func (c *counter) HandlesEvent(Event) bool                    { return true }
func (c *counter) Resync(context.Context, *ResyncEvent) error { return nil }
func (c *counter) Update(context.Context, Event) error {
	if c.n.Add(1) == c.want.Load() {
		c.done <- struct{}{}
	}
	return nil
}

// BenchmarkLoopChanges measures a change's way through the loop (queue,
// coalescing, view, handler, one apply per batch) without etcd.
func BenchmarkLoopChanges(b *testing.B) {
	h := &counter{done: make(chan struct{}, 1)}
	ctl := New(Params{Handlers: []Handler{h}, Appliers: []Applier{&applier{}}})
	start(b, ctl)
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	eventually(b, "ready", ctl.Ready)
	objs := make([]*kubestate.Namespace, b.N)
	for i := range objs {
		objs[i] = ns(fmt.Sprint("ns-", i), "1")
	}
	h.want.Store(int64(b.N))
	b.ResetTimer()
	for _, o := range objs {
		ctl.Push(&ChangeEvent{Key: o.Key(), New: o})
	}
	<-h.done
	b.StopTimer()
	b.ReportMetric(float64(ctl.Status().Batches-1), "batches")
}

// BenchmarkEtcdPutToHandler measures the latency from an etcd write to the
// handler taking it in (etcd commit, watch, queue, loop), one at a time.
func BenchmarkEtcdPutToHandler(b *testing.B) {
	_, cli := testEtcd(b)
	h := &counter{done: make(chan struct{}, 1)}
	ctl := New(Params{Client: cli, Handlers: []Handler{h}})
	start(b, ctl)
	eventually(b, "ready", ctl.Ready)
	b.ResetTimer()
	for i := range b.N {
		h.want.Store(int64(i + 1))
		put(b, cli, ns("a", fmt.Sprint(i)))
		<-h.done
	}
}

// BenchmarkQueueCoalesce measures pushing changes to 1000 keys, drained
// every 10000 pushes.
func BenchmarkQueueCoalesce(b *testing.B) {
	q := newQueue()
	chs := make([]change, 1000)
	for i := range chs {
		o := ns(fmt.Sprint("ns-", i), "1")
		chs[i] = change{key: o.Key(), rev: int64(i + 1), obj: o}
	}
	b.ResetTimer()
	for i := range b.N {
		q.pushChange(chs[i%len(chs)])
		if i%10000 == 9999 {
			q.drain()
		}
	}
}

// BenchmarkViewHeapW10000 reports the heap the view retains holding
// W(10000) as listed from etcd: each object decoded from its stored bytes,
// as the watcher does, and whatever the view keeps to tell no-ops apart.
func BenchmarkViewHeapW10000(b *testing.B) {
	stored := storedValues(b, workload.New(10000).Objects())
	var heap float64
	for range b.N {
		before := liveHeap()
		l := newListing(1, len(stored))
		for k, raw := range stored {
			// a value of its own, as each etcd response's
			o, err := kubestate.Decode(k, cloneBytes(raw))
			if err != nil {
				b.Fatal(err)
			}
			l.put(k, o)
		}
		v := newView()
		v.replace(l)
		l = nil
		heap = float64(liveHeap()-before) / (1 << 20)
		runtime.KeepAlive(v)
	}
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(float64(len(stored)), "objects")
}

// storedValues encodes objs as etcd stores them.
func storedValues(b *testing.B, objs map[kubestate.Key]kubestate.Object) map[kubestate.Key][]byte {
	out := make(map[kubestate.Key][]byte, len(objs))
	for k, o := range objs {
		raw, err := kubestate.Encode(o)
		if err != nil {
			b.Fatal(err)
		}
		out[k] = raw
	}
	return out
}

func cloneBytes(p []byte) []byte { return append([]byte(nil), p...) }

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSameEndpointSlice measures comparing a changed EndpointSlice of
// W(N) with the one the view holds (its last endpoint differs), the cost
// the view adds to a change.
func BenchmarkSameEndpointSlice(b *testing.B) {
	decode := func(o kubestate.Object) kubestate.Object {
		raw, err := kubestate.Encode(o)
		if err != nil {
			b.Fatal(err)
		}
		d, err := kubestate.Decode(o.Key(), raw)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	prev, next := decode(workload.Slice(5, 11, true)), decode(workload.Slice(5, 11, true))
	s := next.(*kubestate.EndpointSlice)
	last := s.Endpoints[len(s.Endpoints)-1].Fields()
	last.Ready = !last.Ready
	s.Endpoints[len(s.Endpoints)-1] = last.Endpoint()
	for b.Loop() {
		if same(prev, next) {
			b.Fatal("a changed slice compares the same")
		}
	}
}

// BenchmarkDecodeEndpointSlice decodes the value BenchmarkDigestEndpointSlice
// hashes, for comparison.
func BenchmarkDecodeEndpointSlice(b *testing.B) {
	sl := workload.Slice(5, 11, true)
	raw, err := kubestate.Encode(sl)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := kubestate.Decode(sl.Key(), raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopStepW10000 measures the loop's own work for one change at a
// time with W(10000) in its view: queue, drain, the view's compare and
// Prev, the dispatch to eight handlers that take every event and do
// nothing, one apply that does nothing, the status. The steps run on the
// benchmark's goroutine (no hand-off between goroutines); each change
// flips the readiness of the last endpoint of one of the EndpointSlices,
// in turn.
func BenchmarkLoopStepW10000(b *testing.B) {
	objs := workload.New(10000).Objects()
	l := newListing(1, len(objs))
	var slices []*kubestate.EndpointSlice
	for k, raw := range storedValues(b, objs) {
		o, err := kubestate.Decode(k, raw)
		if err != nil {
			b.Fatal(err)
		}
		l.put(k, o)
		if s, ok := o.(*kubestate.EndpointSlice); ok && len(s.Endpoints) > 0 {
			slices = append(slices, s)
		}
	}
	// Each slice's other value: its last endpoint's readiness flipped.
	flipped := make([]*kubestate.EndpointSlice, len(slices))
	for i, s := range slices {
		raw, err := kubestate.Encode(s)
		if err != nil {
			b.Fatal(err)
		}
		o, err := kubestate.Decode(s.Key(), raw)
		if err != nil {
			b.Fatal(err)
		}
		f := o.(*kubestate.EndpointSlice)
		last := f.Endpoints[len(f.Endpoints)-1].Fields()
		last.Ready = !last.Ready
		f.Endpoints[len(f.Endpoints)-1] = last.Endpoint()
		flipped[i] = f
	}
	hs := make([]Handler, 8)
	for i := range hs {
		hs[i] = &counter{done: make(chan struct{}, 1)}
	}
	ctl := New(Params{Handlers: hs, Appliers: []Applier{benchApplier{}}})
	ctx := context.Background()
	ctl.q.pushResync(ResyncStartup, l)
	ctl.step(ctx)
	if !ctl.Ready() {
		b.Fatal("not ready after the startup step")
	}
	rev := int64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % len(slices)
		o := slices[j]
		if (i/len(slices))%2 == 0 {
			o = flipped[j]
		}
		rev++
		ctl.q.pushChanges([]change{{key: o.Key(), rev: rev, obj: o}})
		ctl.step(ctx)
	}
	b.StopTimer()
	if st := ctl.Status(); st.Events != uint64(b.N) {
		b.Fatalf("%d events for %d changes", st.Events, b.N)
	}
}

// benchApplier applies nothing.
type benchApplier struct{}

func (benchApplier) Apply(context.Context, bool) error { return nil }
