package ipam

import (
	"context"
	"testing"

	"contiv.dev/vpp/addrplan"
)

// TestPodInUseKeepsItsAddress: a pod the pod manager still wires keeps its
// address when the cluster state does not hold it past the grace period
// (the reflector lags, or never mirrored it) and when its object is
// deleted before the CNI's DEL came; a pod in use by nobody loses it, as
// before. Without SetInUse's check both wired pods lose their address
// while VPP and the pod still use it, and the next ADD may hand it out
// again.
func TestPodInUseKeepsItsAddress(t *testing.T) {
	f := newFixture(t)
	pods := cluster{"deleted": true}
	returns(t, "startup resync", func(ctx context.Context) error { return f.ns.Resync(ctx, pods.snapshot()) })
	returns(t, "startup resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	eventually(t, "allocations loaded", func() bool { return f.h.Allocator() != nil })
	id := func(name string) addrplan.PodID { return addrplan.PodID{Namespace: "default", Name: name} }
	wired := map[addrplan.PodID]bool{id("unreflected"): true, id("deleted"): true}
	f.h.SetInUse(func(p addrplan.PodID) bool { return wired[p] })
	al := f.h.Allocator()
	for _, name := range []string{"unreflected", "deleted", "forgotten"} {
		returns(t, "allocate "+name, func(ctx context.Context) error {
			_, err := al.Allocate(ctx, id(name))
			return err
		})
	}
	// Past the grace (a nanosecond here), a resync without "unreflected"
	// nor "forgotten" in the cluster state.
	returns(t, "resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	// "deleted"'s object goes before its CNI DEL.
	delete(pods, "deleted")
	returns(t, "pod deleted", func(ctx context.Context) error { return f.h.Update(ctx, podChange("deleted", false)) })
	for name, want := range map[string]bool{"unreflected": true, "deleted": true, "forgotten": false} {
		if _, held := al.Lookup(id(name)); held != want {
			t.Errorf("pod %s: address held %v; want %v", name, held, want)
		}
	}
	// Once unwired (the CNI's DEL released it through the pod manager),
	// nothing holds it.
	delete(wired, id("unreflected"))
	returns(t, "resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	if _, held := al.Lookup(id("unreflected")); held {
		t.Error("an unwired pod absent from the cluster state kept its address")
	}
	f.flush(t)
}
