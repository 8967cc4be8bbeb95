package cnat

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

// TestUpgradeFromPerClusterIPLookups: an agent restarting on a VPP that
// an earlier version programmed (the pod VRF's service-CIDR route a DROP,
// and per cluster IP a /32 lookup of table 0 in the pod VRF beside its /32
// reject in table 0) takes those routes for its own, with or without the
// node record, and the full apply makes only the route changes the new set
// needs: one add that replaces the pod VRF's drop by the lookup (VPP
// replaces the path; no delete, which would remove the new route) and one
// delete per cluster IP. No translation is written, so no session is cut.
func TestUpgradeFromPerClusterIPLookups(t *testing.T) {
	for _, store := range []Store{&MemStore{}, nil} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			f := newFake(t, allIfaces...)
			second := web()
			second.ID.Name, second.ClusterIPs, second.ExternalIPs = "web2", []netip.Addr{addr("10.96.0.11")}, nil
			second.Ports[0].NodePort = 30081
			first := newRenderer(t, f, store)
			_ = first.Resync(resyncData(web(), second))
			apply(t, first, true)
			cidr := netip.MustParsePrefix("10.96.0.0/12")
			lookup := Route{Prefix: cidr, VRF: 1, Kind: RouteLookup}
			if !slices.Contains(f.state().Routes, lookup) {
				t.Fatalf("routes %v: no lookup of the service CIDR in the pod VRF", f.state().Routes)
			}
			// The earlier version's route set.
			f.setRoute(lookup, false)
			f.setRoute(Route{Prefix: cidr, VRF: 1}, true)
			old := []Route{
				{Prefix: netip.MustParsePrefix("10.96.0.10/32"), VRF: 1, Kind: RouteLookup},
				{Prefix: netip.MustParsePrefix("10.96.0.11/32"), VRF: 1, Kind: RouteLookup},
			}
			for _, rt := range old {
				f.setRoute(rt, true)
			}
			if store != nil {
				n := first.AppliedNode()
				n.Verdicts = nil
				n.Routes = []Route{{Prefix: cidr, VRF: 0}, {Prefix: cidr, VRF: 1}} // as the old agent recorded them
				if err := store.Save(n); err != nil {
					t.Fatal(err)
				}
			}
			trans := f.state().Trans

			w := f.Writes()
			again := newRenderer(t, f, store)
			_ = again.Resync(resyncData(web(), second))
			apply(t, again, true)
			if got := f.Writes() - w; got != 1+len(old) {
				t.Errorf("%d writes, want %d (the pod VRF's route replaced, each /32 lookup deleted)", got, 1+len(old))
			}
			// Both cluster IPs are translated: no reject route (BuildRoutes).
			want := []Route{{Prefix: cidr, VRF: 0}, lookup}
			slices.SortFunc(want, Route.Compare)
			if got := f.state().Routes; !slices.Equal(got, want) {
				t.Errorf("routes %v, want %v", got, want)
			}
			if got := f.state().Trans; fmt.Sprint(got) != fmt.Sprint(trans) {
				t.Errorf("translations changed: %v, was %v", got, trans)
			}
			checkState(t, f, wantState(again))
		})
	}
}
