package nat44

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"syscall"
	"testing"

	"contiv.dev/vpp/servicerenderer"
)

// The workload W(N) of BENCH.md as the service processor hands it to the
// renderer on node 1: N ClusterIP services with 10 backends spread over 100
// nodes, 10% of them NodePorts, and the churn of single endpoint changes.

type benchWorkload struct {
	node    servicerenderer.LocalNode
	cfg     Config
	base    []*servicerenderer.ContivService
	added   []*servicerenderer.ContivService // an 11th endpoint
	removed []*servicerenderer.ContivService // the 10th endpoint gone
	current []*servicerenderer.ContivService
}

func benchEndpoint(node, pod int) servicerenderer.Backend {
	return servicerenderer.Backend{
		IP:   servicerenderer.IPOf(netip.AddrFrom4([4]byte{10, 1, byte(node), byte(pod + 2)})),
		Port: 8080, Local: node == 1, Ready: true, Serving: true,
	}
}

func benchService(i int, backends []servicerenderer.Backend) *servicerenderer.ContivService {
	ip := netip.AddrFrom4([4]byte{10, 96 + byte(i>>16), byte(i >> 8), byte(i)})
	p := port("http", 80, 0, backends...)
	if i%10 == 5 {
		p.NodePort = uint16(30000 + i/10)
	}
	return &servicerenderer.ContivService{
		ID:         servicerenderer.ServiceID{Namespace: "bench", Name: fmt.Sprintf("svc-%05d", i)},
		ClusterIPs: []netip.Addr{ip},
		Ports:      []servicerenderer.Port{p},
		Created:    t0,
	}
}

func newBenchWorkload(n int) *benchWorkload {
	w := &benchWorkload{
		node: servicerenderer.LocalNode{Name: "node-1", ID: 1, IPs: ips("192.168.16.1", "172.30.1.1")},
		cfg:  testConfig(),
	}
	w.cfg.SNAT = SNAT{Interface: "GbE", IP: netip.MustParseAddr("192.168.16.1")}
	for i := range n {
		var bs []servicerenderer.Backend
		for j := range 10 {
			e := 10*i + j
			bs = append(bs, benchEndpoint(e%100+1, (e/100)%240))
		}
		w.base = append(w.base, benchService(i, bs))
		more := append(append([]servicerenderer.Backend(nil), bs...), benchEndpoint((10*i+10)%100+1, 245))
		w.added = append(w.added, benchService(i, more))
		w.removed = append(w.removed, benchService(i, append([]servicerenderer.Backend(nil), bs[:9]...)))
	}
	w.current = append([]*servicerenderer.ContivService(nil), w.base...)
	return w
}

func (w *benchWorkload) resyncData() *servicerenderer.ResyncData {
	return &servicerenderer.ResyncData{
		Services:   w.base,
		Interfaces: map[string]servicerenderer.InterfaceRole{"GbE": frontend, "VXLAN-BVI": frontend | backend, "VPP-Host": frontend | backend},
		Node:       w.node,
	}
}

// change applies churn change k: the service it touches goes from its base
// state to changed, or back.
func (w *benchWorkload) change(r *Renderer, k int) error {
	s := (7919*k + 13) % len(w.base)
	old, next := w.current[s], w.base[s]
	if old == w.base[s] {
		next = w.added[s]
		if k%2 == 1 {
			next = w.removed[s]
		}
	}
	w.current[s] = next
	return r.UpdateService(old, next)
}

// applied is a renderer of w resynced and fully applied to vpp.
func applied(b *testing.B, w *benchWorkload, vpp VPP) *Renderer {
	b.Helper()
	r, err := New(Params{Config: w.cfg, VPP: vpp, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Resync(w.resyncData()); err != nil {
		b.Fatal(err)
	}
	if err := r.Apply(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkChange is the per-change cost: one endpoint change through the
// renderer to its VPP calls (a VPP that only counts them).
func BenchmarkChange(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			w := newBenchWorkload(n)
			vpp := &countingVPP{}
			r := applied(b, w, vpp)
			vpp.calls = 0
			ctx := context.Background()
			b.ReportAllocs()
			k := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if err := w.change(r, k); err != nil {
					b.Fatal(err)
				}
				if err := r.Apply(ctx, false); err != nil {
					b.Fatal(err)
				}
				k++
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(k), "cpu-ns/op")
			b.ReportMetric(float64(vpp.calls)/float64(k), "calls/op")
		})
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds, which
// is steadier than wall time on a shared machine (BENCH.md).
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkResync is a full resync of W(N) into an empty VPP: desired state
// built, diffed and every call issued.
func BenchmarkResync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			w := newBenchWorkload(n)
			vpp := &countingVPP{}
			r, err := New(Params{Config: w.cfg, VPP: vpp, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			data := w.resyncData()
			b.ReportAllocs()
			cpu0, runs := cpuTime(), 0
			for b.Loop() {
				runs++
				if err := r.Resync(data); err != nil {
					b.Fatal(err)
				}
				if err := r.Apply(context.Background(), true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(runs), "cpu-ns/op")
			b.ReportMetric(float64(vpp.calls)/float64(runs), "calls/op")
		})
	}
}

// BenchmarkStartup is the renderer's share of an agent's start on W(N), as
// the agent configures it (main VRF 0: each service's cluster IP has its
// verdict route): a new renderer, the resync and the first full apply,
// against an empty VPP (every call issued) and against one that already
// holds W(N) (its dump read, nothing to call). It reports the CPU per
// start and the heap the started renderer holds.
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		w := newBenchWorkload(n)
		w.cfg.MainVRF = 0
		programmed := newFakeVPP()
		start := func(b *testing.B, vpp VPP) *Renderer { return applied(b, w, vpp) }
		start(b, programmed)
		programmed.takeCalls()
		for _, c := range []struct {
			name string
			vpp  func() VPP
		}{
			{"empty", func() VPP { return &countingVPP{} }},
			{"programmed", func() VPP { return programmed }},
		} {
			b.Run(fmt.Sprintf("N=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				cpu0, runs := cpuTime(), 0
				for b.Loop() {
					runs++
					start(b, c.vpp())
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(runs), "cpu-ns/op")
				b.StopTimer()
				base := heapAfterGC()
				r := start(b, c.vpp())
				after := heapAfterGC()
				b.ReportMetric(float64(after-base)/(1<<20), "heap-MiB")
				runtime.KeepAlive(r)
				if calls := programmed.takeCalls(); len(calls) != 0 {
					b.Fatalf("a start against the programmed VPP made %d calls, first %s", len(calls), calls[0])
				}
			})
		}
	}
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
