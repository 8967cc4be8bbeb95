package service

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/kubestate"
)

// listedOf is objs as a listing of etcd hands them (ResyncEvent.Listed):
// resource after resource, by key.
func listedOf(objs map[kubestate.Key]kubestate.Object) []kubestate.Object {
	keys := slices.SortedFunc(maps.Keys(objs), func(a, b kubestate.Key) int {
		return cmp.Or(cmp.Compare(slices.Index(kubestate.Resources, a.Resource), slices.Index(kubestate.Resources, b.Resource)),
			cmp.Compare(a.String(), b.String()))
	})
	out := make([]kubestate.Object, len(keys))
	for i, k := range keys {
		out[i] = objs[k]
	}
	return out
}

// A resync that walks the listing (ResyncEvent.Listed) hands the renderers
// what one that walks the snapshot's map does, and leaves the processor
// in the same state: first resyncs and later ones, each way after the other.
func TestListedResyncEqualsMapResync(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newRig(t)
		for _, ns := range propNamespaces {
			for _, name := range propPods {
				r.ifaces[ns+"/"+name] = "tap-" + ns + "-" + name
			}
		}
		draw := func() {
			for range rapid.IntRange(0, 12).Draw(t, "objects") {
				switch rapid.IntRange(0, 3).Draw(t, "kind") {
				case 0:
					s := genService(t)
					r.state[s.Key()] = s
				case 1:
					s := genSlice(t, nil)
					r.state[s.Key()] = s
				case 2:
					p := genPod(t)
					r.state[p.Key()] = p
				case 3:
					n := &kubestate.Node{Name: rapid.SampledFrom([]string{"node-1", "node-2"}).Draw(t, "node"), Zone: rapid.SampledFrom([]string{"", "z1"}).Draw(t, "zone")}
					r.state[n.Key()] = n
				}
			}
		}
		byMap, recMap := r.processor()
		byList, recList := r.processor()
		for i := range 3 {
			draw()
			ev := r.snapshot()
			if err := byMap.Resync(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			ev = r.snapshot()
			ev.Listed = listedOf(ev.State.Objects)
			if err := byList.Resync(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if a, b := recMap.dump(), recList.dump(); a != b {
				t.Fatalf("resync %d: walking the map\n%s\nwalking the listing\n%s", i, a, b)
			}
			if a, b := formatSkips(byMap.Skipped()), formatSkips(byList.Skipped()); a != b {
				t.Fatalf("resync %d: skips walking the map\n%s\nwalking the listing\n%s", i, a, b)
			}
			if a, b := dumpState(byMap.Services(), recMap.ifs, recMap.node), dumpState(byList.Services(), recList.ifs, recList.node); a != b {
				t.Fatalf("resync %d: Services() walking the map\n%s\nwalking the listing\n%s", i, a, b)
			}
			byMap, byList, recMap, recList = byList, byMap, recList, recMap // the other way next
		}
	})
}

// A resync of many services derives them in two goroutines (deriveAll):
// it hands the renderers what one goroutine deriving them all does, first
// and again (outputs kept), source ranges asked of the renderer included.
func TestParallelDeriveEqualsSerial(t *testing.T) {
	r := newRig(t)
	var asked atomic.Int64
	r.cfg.SourceRangesEnforced = true
	r.cfg.SourceRangesNotEnforced = func() string { asked.Add(1); return "no ACL plugin" }
	const n = 3 * parallelDerive / 2
	for i := range n {
		svc := rapid.Custom(genService).Example(i)
		svc.Name = "s" + strconv.Itoa(i)
		if i%7 == 0 {
			rare := kubestate.ServiceRare{}
			if svc.ServiceRare != nil {
				rare = *svc.ServiceRare
			}
			rare.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
			svc.ServiceRare = &rare
		}
		r.state[svc.Key()] = svc
		for j := range i % 3 {
			s := rapid.Custom(func(t *rapid.T) *kubestate.EndpointSlice { return genSlice(t, svc) }).Example(3*i + j)
			s.Name = svc.Name + "-" + strconv.Itoa(j)
			r.state[s.Key()] = s
		}
		if i%50 == 0 {
			pod := rapid.Custom(genPod).Example(i)
			r.state[pod.Key()] = pod
			r.ifaces[pod.Namespace+"/"+pod.Name] = "tap-" + pod.Namespace + "-" + pod.Name
		}
	}
	serial, recSerial := r.processor()
	serial.parallelFrom = math.MaxInt
	parallel, recParallel := r.processor()
	for i := range 2 {
		for _, p := range []*Processor{serial, parallel} {
			if err := p.Resync(context.Background(), r.snapshot()); err != nil {
				t.Fatal(err)
			}
		}
		for _, rec := range []*recorder{recSerial, recParallel} {
			if len(rec.violations) > 0 {
				t.Fatalf("resync %d: renderer contract broken:\n%s", i, strings.Join(rec.violations, "\n"))
			}
		}
		if a, b := recSerial.dump(), recParallel.dump(); a != b {
			t.Fatalf("resync %d: one goroutine\n%s\ntwo\n%s", i, a, b)
		}
		if a, b := formatSkips(serial.Skipped()), formatSkips(parallel.Skipped()); a != b {
			t.Fatalf("resync %d: skips of one goroutine\n%s\ntwo\n%s", i, a, b)
		}
		if serial.builds != parallel.builds {
			t.Fatalf("resync %d: %d services derived by one goroutine, %d by two", i, serial.builds, parallel.builds)
		}
	}
	// The second resync derives again only the services with source
	// ranges (the renderer's answer may have changed).
	if want := n + (n+6)/7; serial.builds != want || asked.Load() == 0 {
		t.Fatalf("%d services derived (want %d), the renderer asked %d times", serial.builds, want, asked.Load())
	}
}

// A panic while services are derived in two goroutines reaches the
// resync's caller (the controller recovers it into an error), whichever
// goroutine it happened on, once neither derives any more.
func TestParallelDerivePanicReachesTheCaller(t *testing.T) {
	r := newRig(t)
	r.cfg.SourceRangesEnforced = true
	r.cfg.SourceRangesNotEnforced = func() string { panic("renderer broken") }
	for i := range 8 {
		svc := &kubestate.Service{Namespace: "a", Name: "s" + strconv.Itoa(i), Type: "ClusterIP",
			ClusterIPs: []string{"10.96.0." + strconv.Itoa(i+1)}, Ports: []kubestate.ServicePort{{Protocol: "TCP", Port: 80}}}
		if i == 6 { // derived by the second goroutine
			svc.Type = "LoadBalancer"
			svc.ServiceRare = &kubestate.ServiceRare{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, LBIngressIPs: []string{"1.1.1.1"}}
		}
		r.state[svc.Key()] = svc
	}
	p, _ := r.processor()
	p.parallelFrom = 2
	defer func() {
		if got := recover(); got != "renderer broken" {
			t.Fatalf("recovered %v, want the renderer's panic", got)
		}
	}()
	_ = p.Resync(context.Background(), r.snapshot())
	t.Fatal("no panic")
}
