package service

import (
	"cmp"
	"context"
	"maps"
	"slices"
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
