package ipam

import (
	"maps"
	"net/netip"
	"testing"

	"contiv.dev/vpp/addrplan"
)

func TestReconcileLeavesNewerPendingRecords(t *testing.T) {
	kicks := 0
	p := newPersister(nil, 0, func() { kicks++ })
	pod := func(n string) addrplan.PodID { return addrplan.PodID{Namespace: "ns", Name: n} }
	ip := netip.MustParseAddr
	// Changed after the allocations were read: the pending record is newer.
	_ = p.Put(t.Context(), pod("moved"), ip("10.1.1.9"))
	_ = p.Delete(t.Context(), pod("gone"))
	stored := map[addrplan.PodID]string{
		pod("same"): "10.1.1.2", pod("stale"): "10.1.1.3", pod("foreign"): "10.1.1.4",
		pod("moved"): "10.1.1.5", pod("gone"): "10.1.1.6",
	}
	want := map[addrplan.PodID]netip.Addr{
		pod("same"): ip("10.1.1.2"), pod("stale"): ip("10.1.1.7"), pod("missing"): ip("10.1.1.8"),
		pod("moved"): ip("10.1.1.5"), pod("gone"): ip("10.1.1.6"),
	}
	if !p.reconcile(stored, want) {
		t.Fatal("nothing to repair")
	}
	got := map[addrplan.PodID]string{}
	for pd, op := range p.ops {
		got[pd] = "delete"
		if op.ip.IsValid() {
			got[pd] = op.ip.String()
		}
	}
	wantOps := map[addrplan.PodID]string{
		pod("stale"): "10.1.1.7", pod("missing"): "10.1.1.8", pod("foreign"): "delete",
		pod("moved"): "10.1.1.9", pod("gone"): "delete",
	}
	if !maps.Equal(got, wantOps) {
		t.Fatalf("pending %v, want %v", got, wantOps)
	}
	if kicks != 2 || p.pending() != 5 {
		t.Fatalf("kicks %d pending %d", kicks, p.pending())
	}
	if p.reconcile(map[addrplan.PodID]string{pod("same"): "10.1.1.2"}, map[addrplan.PodID]netip.Addr{pod("same"): ip("10.1.1.2")}) {
		t.Fatal("repaired what agrees")
	}
}
