package service

import (
	"context"
	"net/netip"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// counter is a renderer that only counts calls.
type counter struct{ calls int }

func (c *counter) AddService(*sr.ContivService) error             { c.calls++; return nil }
func (c *counter) UpdateService(_, _ *sr.ContivService) error     { c.calls++; return nil }
func (c *counter) DeleteService(*sr.ContivService) error          { c.calls++; return nil }
func (c *counter) UpdateInterface(string, sr.InterfaceRole) error { c.calls++; return nil }
func (c *counter) UpdateLocalNode(sr.LocalNode) error             { c.calls++; return nil }
func (c *counter) Resync(*sr.ResyncData) error                    { c.calls++; return nil }

// benchRig is W(N) of BENCH.md seen from node 1, with every local pod's
// interface known, and a processor over it with a counting renderer.
type benchRig struct {
	w   *workload.Workload
	p   *Processor
	r   *counter
	obj map[kubestate.Key]kubestate.Object
}

func newBenchRig(b *testing.B, n int) *benchRig {
	b.Helper()
	br := &benchRig{w: workload.New(n)}
	br.obj = br.w.Objects()
	br.fresh(b)
	return br
}

// fresh gives the rig a new processor, with empty state.
func (br *benchRig) fresh(b *testing.B) {
	b.Helper()
	w := br.w
	node := &fakeNode{
		name: workload.NodeName(workload.ThisNode), id: workload.ThisNode,
		ips:    []netip.Addr{workload.VppIP(workload.ThisNode), workload.MgmtIP(workload.ThisNode)},
		podNet: netip.MustParsePrefix("10.1.1.0/24"), allPods: netip.MustParsePrefix("10.1.0.0/16"),
	}
	ifaces := fakeInterfaces{}
	for i, p := range w.Pods {
		ifaces[p.Namespace+"/"+p.Name] = "tap" + strconv.Itoa(i)
	}
	r := &counter{}
	p, err := New(Params{Renderers: []sr.Renderer{r}, Node: node, Subnets: node, Interfaces: ifaces,
		Config: Config{MainInterface: "eth0", HostInterconnect: "tap-vpp2", VXLANBVI: "vxlanBVI"}})
	if err != nil {
		b.Fatal(err)
	}
	br.p, br.r = p, r
}

func (br *benchRig) resync(b *testing.B) {
	ev := &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{Objects: br.obj}}
	if err := br.p.Resync(context.Background(), ev); err != nil {
		b.Fatal(err)
	}
}

// churn is BENCH.md's 1000 changes followed by their undoing in reverse
// order, so that cycling through it keeps the workload's state in range.
// Each New is decoded from its stored bytes, as the controller's watcher
// hands it over.
func (br *benchRig) churn(b *testing.B) []*controller.ChangeEvent {
	cs := br.w.Churn()
	evs := make([]*controller.ChangeEvent, 0, 2*len(cs))
	add := func(prev, next *kubestate.EndpointSlice) {
		raw, err := kubestate.Encode(next)
		if err != nil {
			b.Fatal(err)
		}
		obj, err := kubestate.Decode(next.Key(), raw)
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, &controller.ChangeEvent{Key: next.Key(), Prev: prev, New: obj})
	}
	for _, c := range cs {
		add(c.Prev, c.New)
	}
	for i := len(cs) - 1; i >= 0; i-- {
		add(cs[i].New, cs[i].Prev)
	}
	return evs
}

var benchSizes = []int{1000, 10000}

// cpuTime is the process's user and system CPU time (GC workers included):
// steadier than wall time on a shared machine (BENCH.md).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChange is the per-change path: one decoded EndpointSlice change
// through the processor to its renderer calls.
func BenchmarkChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			br := newBenchRig(b, n)
			br.resync(b)
			evs := br.churn(b)
			ctx := context.Background()
			br.r.calls = 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				ev := evs[i%len(evs)]
				if !br.p.HandlesEvent(ev) {
					b.Fatal("slice change not handled")
				}
				if err := br.p.Update(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(br.r.calls)/float64(b.N), "calls/op")
		})
	}
}

// BenchmarkResync is a full resync of W(N) by a processor without state:
// every service derived once, one Resync call; it also reports the heap
// the processor retains.
func BenchmarkResync(b *testing.B) {
	benchmarkResync(b, true)
}

// BenchmarkResyncUnchanged is a resync handing over the objects the
// processor holds, as periodic and healing resyncs do: nothing to derive.
func BenchmarkResyncUnchanged(b *testing.B) {
	benchmarkResync(b, false)
}

func benchmarkResync(b *testing.B, fresh bool) {
	for _, n := range benchSizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			br := newBenchRig(b, n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			br.resync(b)
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if fresh {
					br.fresh(b)
				}
				br.resync(b)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "retained-MiB")
		})
	}
}

// BenchmarkNodeJoin is node 101 joining after W(N)'s churn: it must touch
// nothing.
func BenchmarkNodeJoin(b *testing.B) {
	br := newBenchRig(b, 10000)
	br.resync(b)
	ctx := context.Background()
	for _, ev := range br.churn(b)[:workload.ChurnChanges] {
		if err := br.p.Update(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	_, vn := workload.JoinNode()
	ev := &controller.NodeUpdate{Name: vn.Name, New: vn}
	calls := br.r.calls
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if br.p.HandlesEvent(ev) {
			if err := br.p.Update(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if br.r.calls != calls {
		b.Fatalf("a node join made %d renderer calls", br.r.calls-calls)
	}
}
