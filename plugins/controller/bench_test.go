package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

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
		raw, _ := kubestate.Encode(o)
		chs[i] = change{key: o.Key(), rev: int64(i + 1), raw: raw, obj: o}
	}
	b.ResetTimer()
	for i := range b.N {
		q.pushChange(chs[i%len(chs)])
		if i%10000 == 9999 {
			q.drain()
		}
	}
}
