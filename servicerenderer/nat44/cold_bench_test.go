package nat44

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"contiv.dev/vpp/servicerenderer"
)

// BenchmarkChangeCold is the renderer's per-change path on cold state, as
// the agent runs it (main VRF 0: verdict routes): every change touches
// another service, W(N)'s in the churn's order, so that at N=50000 what
// the renderer holds of the changed service has left the CPU's caches,
// while at N=1000 it stays in them. The changed services are copied in
// blocks of 100 just before they run, outside the timer: the new service
// is fresh in the cache, as the processor's output is, and the old one
// was read (the processor copies it as the new one's template). It
// reports the quickest block of 100 changes (the least disturbed by the
// machine's other work); the ratio of the sizes' figures is the
// renderer's part of the growth of the pipeline's per-change CPU.
func BenchmarkChangeCold(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { coldChanges(b, n, false) })
	}
}

// BenchmarkChangeEvicted is BenchmarkChangeCold with the caches emptied
// before each change (8 MiB read), as the agent's other work between two
// changes (decoding, gRPC, the processor) empties them of the renderer's
// own state too: its maps' headers, scratch buffers and apply machinery.
// Only the changed services were read since. It reports the median
// change.
func BenchmarkChangeEvicted(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { coldChanges(b, n, true) })
	}
}

func coldChanges(b *testing.B, n int, evict bool) {
	w := newBenchWorkload(n)
	w.cfg.MainVRF = 0
	vpp := &countingVPP{}
	r := applied(b, w, vpp)
	vpp.calls = 0
	ctx := context.Background()
	const block = 100
	type change struct {
		old, next *servicerenderer.ContivService
	}
	todo := make([]change, 0, block)
	changed := make([]bool, n)
	k := 0
	next := func() {
		todo = todo[:0]
		for range block {
			s := (7919*k + 13) % n
			old, next := w.current[s], w.base[s]
			if !changed[s] {
				next = w.added[s]
				if k%2 == 1 {
					next = w.removed[s]
				}
			}
			changed[s] = !changed[s]
			k++
			// The processor's output: a fresh copy of the next state
			// holding the ID strings of the old one (its template),
			// which it read.
			next = cloneService(next)
			next.ID = old.ID
			sink += warmth(old)
			w.current[s] = next
			todo = append(todo, change{old, next})
		}
	}
	var flush []uint64
	if evict {
		flush = make([]uint64, 1<<20)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu int64
	var blocks, each []float64
	for i := 0; i < b.N; i += block {
		b.StopTimer()
		next()
		b.StartTimer()
		c0, t0 := cpuTime(), time.Now()
		run := todo[:min(block, b.N-i)]
		for _, c := range run {
			if evict {
				b.StopTimer()
				for j := range flush {
					flush[j]++
				}
				sink += warmth(c.old) + warmth(c.next)
				b.StartTimer()
				t := time.Now()
				changeOne(b, r, ctx, c.old, c.next)
				each = append(each, float64(time.Since(t)))
				continue
			}
			changeOne(b, r, ctx, c.old, c.next)
		}
		if len(run) == block && !evict {
			blocks = append(blocks, float64(time.Since(t0))/block)
		}
		cpu += cpuTime() - c0
	}
	b.StopTimer()
	if !evict {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(vpp.calls)/float64(b.N), "calls/op")
	if len(blocks) > 0 {
		b.ReportMetric(slices.Min(blocks), "best-block-ns/op")
	}
	if len(each) > 0 {
		slices.Sort(each)
		b.ReportMetric(each[len(each)/2], "median-ns/op")
	}
}

// sink keeps warmth's reads.
var sink int

// changeOne is one change and its apply: the span callgrind's
// --toggle-collect names (cold lines counted per change).
//
//go:noinline
func changeOne(b *testing.B, r *Renderer, ctx context.Context, old, next *servicerenderer.ContivService) {
	if err := r.UpdateService(old, next); err != nil {
		b.Fatal(err)
	}
	if err := r.Apply(ctx, false); err != nil {
		b.Fatal(err)
	}
}

// cloneService is a deep copy of svc in fresh memory, laid out as the
// processor makes its outputs: a service with one port and one cluster IP
// has them in its own allocation.
func cloneService(svc *servicerenderer.ContivService) *servicerenderer.ContivService {
	var c *servicerenderer.ContivService
	if len(svc.Ports) == 1 && len(svc.ClusterIPs) == 1 {
		one := new(struct {
			svc  servicerenderer.ContivService
			port [1]servicerenderer.Port
			ip   [1]netip.Addr
		})
		one.svc, one.port[0], one.ip[0] = *svc, svc.Ports[0], svc.ClusterIPs[0]
		c = &one.svc
		c.Ports, c.ClusterIPs = one.port[:], one.ip[:]
	} else {
		c = new(servicerenderer.ContivService)
		*c = *svc
		c.ClusterIPs = slices.Clone(svc.ClusterIPs)
		c.Ports = slices.Clone(svc.Ports)
	}
	c.ExternalIPs = slices.Clone(svc.ExternalIPs)
	for i := range c.Ports {
		c.Ports[i].Backends = slices.Clone(c.Ports[i].Backends)
	}
	return c
}

// warmth reads what the processor reads of a service it replaces: the
// service, its ports and cluster IPs (it copies them as the new one's
// template), and its ID's bytes (it hashes them).
func warmth(svc *servicerenderer.ContivService) int {
	n := len(svc.ID.Namespace) + len(svc.ID.Name) + int(svc.Created.Unix())
	for _, p := range svc.Ports {
		n += int(p.Port) + len(p.Name) + len(p.Backends)
	}
	for _, ip := range svc.ClusterIPs {
		n += int(ip.As16()[15])
	}
	return n + int(hashString(svc.ID.Namespace)+hashString(svc.ID.Name))
}

func hashString(s string) (h uint32) {
	for i := 0; i < len(s); i++ {
		h = h*31 + uint32(s[i])
	}
	return h
}
