package pods

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
)

// BenchmarkAddDelLatency measures CNI ADD and DEL through the socket and
// the controller's loop against the simulated VPP served on its own
// socket (govpp's socket client, as the agent's), with real netns and
// veths, for 1, 10 and 100 pods at once: each iteration ADDs that many
// pods concurrently, then DELs them concurrently. It reports the p50 and
// p99 of one call's latency (ms), and the time the controller's loop
// spent on the ADDs of one iteration (add-loop-ms: the rest of an ADD is
// the kernel's veth and eth0 work, off the loop, and waiting) in how
// many loop turns (add-batches: the ADDs queued while the loop was busy
// run together).
//
//	go test -run '^$' -bench AddDelLatency -benchtime 3x ./plugins/pods/
//
// ipam=etcd writes each allocation to etcd before answering (the test
// harness's synchronous store); ipam=behind answers at once, as the
// agent's IPAM does (its writer persists in the background).
func BenchmarkAddDelLatency(b *testing.B) {
	for _, ipamMode := range []string{"behind", "etcd"} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("ipam=%s/pods=%d", ipamMode, n), func(b *testing.B) { benchAddDel(b, vpp.PodLinkAFPacket, ipamMode, n) })
		}
	}
}

// BenchmarkTapAddDelLatency is BenchmarkAddDelLatency (ipam=behind) with
// tap pods: the simulated VPP makes each tap's kernel end in the pod's
// netns (sim/tap.go), under its lock, as VPP's main thread does.
//
//	go test -run '^$' -bench TapAddDelLatency -benchtime 3x ./plugins/pods/
func BenchmarkTapAddDelLatency(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { benchAddDel(b, vpp.PodLinkTap, "behind", n) })
	}
}

func benchAddDel(b *testing.B, kind vpp.PodLinkKind, ipamMode string, n int) {
	{
		{
			e := newEnvOn(b, 24, true)
			if kind == vpp.PodLinkTap {
				e.kind = kind
				e.vpp.SetVhostNet(true)
				b.Cleanup(e.vpp.Close)
			}
			if ipamMode == "behind" {
				a, err := addrplan.NewAllocator(context.Background(), addrplan.AllocatorParams{
					Subnet: e.plan.PodSubnet, Store: &memStore{m: map[addrplan.PodID]string{}},
				})
				if err != nil {
					b.Fatal(err)
				}
				e.alloc = a
			}
			e.m = e.newManager()
			e.loopBusy, e.addBatches = new(atomic.Int64), new(atomic.Int64)
			c := e.loop(time.Minute)
			var add, del []time.Duration
			var addBusy time.Duration // the loop's time in the ADDs
			var mu sync.Mutex
			b.ResetTimer()
			for it := range b.N {
				b.StopTimer()
				reqs := make([]Request, n)
				for i := range reqs {
					reqs[i] = e.request(fmt.Sprintf("b%d-%d", it, i), e.netns())
				}
				b.StartTimer()
				busy := e.loopBusy.Load()
				for _, op := range []string{cniapi.PathAdd, cniapi.PathDel} {
					var wg sync.WaitGroup
					for i := range reqs {
						wg.Go(func() {
							start := time.Now()
							_, ce, err := call(c, op, reqs[i])
							d := time.Since(start)
							if err != nil || ce != nil {
								b.Errorf("%s %s: %v %v", op, reqs[i].Pod, err, ce)
							}
							mu.Lock()
							if op == cniapi.PathAdd {
								add = append(add, d)
							} else {
								del = append(del, d)
							}
							mu.Unlock()
						})
					}
					wg.Wait()
					if op == cniapi.PathAdd {
						addBusy += time.Duration(e.loopBusy.Load() - busy)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(ms(addBusy)/float64(b.N), "add-loop-ms")
			b.ReportMetric(float64(e.addBatches.Load())/float64(b.N), "add-batches")
			for name, ds := range map[string][]time.Duration{"add": add, "del": del} {
				slices.Sort(ds)
				b.ReportMetric(ms(ds[len(ds)*50/100]), name+"-p50-ms")
				b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*99/100)]), name+"-p99-ms")
			}
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// memStore keeps allocations in memory: the benchmark's "IPAM writes
// behind" variant, as the agent's IPAM does (plugins/ipam's persister
// answers at once and writes etcd in the background).
type memStore struct {
	mu sync.Mutex
	m  map[addrplan.PodID]string
}

func (s *memStore) List(context.Context) (map[addrplan.PodID]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m), nil
}

func (s *memStore) Put(_ context.Context, p addrplan.PodID, ip netip.Addr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[p] = ip.String()
	return nil
}

func (s *memStore) Delete(_ context.Context, p addrplan.PodID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, p)
	return nil
}

// BenchmarkRecreateAfterVPPRestart measures how long the pod manager
// takes to bring 100 wired pods back after VPP restarted: the resync that
// re-creates every pod's interface from its record (the agent's readiness
// waits for it). It reports that time (ms).
//
//	go test -run '^$' -bench RecreateAfterVPPRestart -benchtime 3x ./plugins/pods/
func BenchmarkRecreateAfterVPPRestart(b *testing.B) {
	const n = 100
	e := newEnvOn(b, 24, true)
	ctx := context.Background()
	for i := range n {
		if _, err := e.m.Add(ctx, e.request(fmt.Sprintf("r%d", i), e.netns())); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		connects := e.conn.Status().Connects
		e.vpp.Restart()
		e.vpp.CreateTable(1)
		for e.conn.Status().Connects == connects {
			time.Sleep(time.Millisecond)
		}
		ev := resyncEvent()
		ev.DataplaneRestarted = true
		b.StartTimer()
		start := time.Now()
		if err := e.m.Resync(ctx, ev); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		if got := len(e.podInterfaces()); got != n {
			b.Fatalf("%d pods back; want %d", got, n)
		}
		if back, why := e.m.Back(); !back {
			b.Fatal(why)
		}
	}
	slices.Sort(took)
	b.ReportMetric(ms(took[len(took)/2]), "recreate100-ms")
}
