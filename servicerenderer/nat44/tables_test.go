package nat44_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// routeCalls counts the ip_route_add_del requests VPP answered.
func routeCalls(names []string) int {
	n := 0
	for _, msg := range names {
		if msg == "ip_route_add_del" {
			n++
		}
	}
	return n
}

// hasRoute tells whether the simulated VPP holds the service CIDR's route
// in vrf: a drop in the main VRF (0), a lookup of table 0 in the pod VRF.
func hasRoute(v *sim.VPP, cidr netip.Prefix, vrf uint32) bool {
	return slices.ContainsFunc(v.Routes(), func(r sim.Route) bool {
		return r.VRF == vrf && r.Prefix == cidr && (vrf == 0 && r.Drop || vrf != 0 && r.Lookup && r.LookupVRF == 0)
	})
}

// TestRouteWaitsForItsTable: after a VPP restart, until the startup
// configuration has made the pod VRF's table, the lookup route into it is
// answered -3 (FACTS §6). The route waits for its table: Apply returns no
// error (nothing to heal), nothing fails, an apply without interface news
// does not try it again, and the apply with the interfaces the startup
// configuration brings adds it, once.
func TestRouteWaitsForItsTable(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on})
	e.vpp.CreateTable(1) // the startup configuration's pod VRF
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = time.Hour // no mapping makes table 1 meanwhile
	e.cfg.SNAT = nat44.SNAT{}      // nor an identity in the pod VRF
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	cidr := e.cfg.ServiceCIDR

	e.restartLate()
	log.take()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true) // no error, no failure
	// The service CIDR's VRF 0 route added, its VRF 1 route refused; per
	// cluster IP (4) its reject in VRF 0 added.
	if n := routeCalls(log.take()); n != 2+4 {
		t.Errorf("%d route calls in the full apply, want 6 (VRF 0 added, VRF 1 refused, one per cluster IP)", n)
	}
	if !hasRoute(e.vpp, cidr, 0) || hasRoute(e.vpp, cidr, 1) {
		t.Errorf("routes %v: want the VRF 0 route only", e.vpp.Routes())
	}
	p := r.PendingTables()
	if len(p) != 1 || p[0].VRF != 1 || len(p[0].Routes) != 1 || p[0].Routes[0].Prefix.AsPrefix() != cidr || p[0].Since.IsZero() {
		t.Errorf("PendingTables() = %+v, want table 1 with %v", p, cidr)
	}
	if s := r.Stats(); s.Transient != 0 || s.Invalid != 0 {
		t.Errorf("stats %+v: the missing table counted as a failure", s)
	}

	// Another apply without interface news leaves the route waiting.
	e.apply(r, false)
	if n := routeCalls(log.take()); n != 0 {
		t.Errorf("%d route calls by an apply without interface news, want 0", n)
	}

	e.vpp.FinishStartup() // the tables, then the interfaces
	for name, role := range data.Interfaces {
		if err := r.UpdateInterface(name, role); err != nil {
			t.Fatal(err)
		}
	}
	e.apply(r, false)
	if n := routeCalls(log.take()); n != 1 {
		t.Errorf("%d route calls once the table is there, want 1 (the service CIDR's)", n)
	}
	if !hasRoute(e.vpp, cidr, 1) || len(r.PendingTables()) != 0 {
		t.Errorf("routes %v, pending tables %+v: want the VRF 1 route added", e.vpp.Routes(), r.PendingTables())
	}
	e.inSync(r)
	if s := r.Stats(); s.Transient != 0 || s.Invalid != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestMappingsMakeTheTable: NAT44 mappings with locals in a VRF make its
// table (FACTS §6). Without a startup configuration making it, the route
// refused for want of the table is tried again within the apply once the
// mappings are in, and added.
func TestMappingsMakeTheTable(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on})
	e.cfg.SNAT = nat44.SNAT{} // no identity in the pod VRF makes table 1
	r := e.renderer()
	if err := r.Resync(cluster()); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	// The service CIDR: VRF 0, VRF 1 refused, VRF 1 after the mappings;
	// each of the 4 cluster IPs (verdict.go): its reject in VRF 0.
	if n := routeCalls(log.take()); n != 3+4 {
		t.Errorf("%d route calls, want 7 (3 for the service CIDR, 1 per cluster IP)", n)
	}
	if !hasRoute(e.vpp, e.cfg.ServiceCIDR, 1) || len(r.PendingTables()) != 0 {
		t.Errorf("routes %v, pending tables %+v: want the VRF 1 route added", e.vpp.Routes(), r.PendingTables())
	}
	e.inSync(r)
	if s := r.Stats(); s.Transient != 0 || s.Invalid != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestFullApplyFindsTheRoute: a full apply that finds the waiting route
// in VPP (made meanwhile by another hand) ends the wait without a call.
func TestFullApplyFindsTheRoute(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on})
	e.cfg.NodeInterfaces = []string{"GbE"}
	e.cfg.HoldMappings = time.Hour
	e.cfg.SNAT = nat44.SNAT{}
	if err := e.vpp.DelInterface("GbE"); err != nil {
		t.Fatal(err)
	}
	r := e.renderer()
	if err := r.Resync(cluster()); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if len(r.PendingTables()) != 1 {
		t.Fatalf("PendingTables() = %+v, want table 1", r.PendingTables())
	}
	route := nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(e.cfg.ServiceCIDR), VRF: 1}, Kind: nat44.RouteLookup}
	e.vpp.CreateTable(1)
	if err := e.nat.AddDelRoute(t.Context(), route, true); err != nil {
		t.Fatal(err)
	}
	log.take()
	e.apply(r, true)
	// The service CIDR's route is not sent again.
	if n := routeCalls(log.take()); n != 0 || len(r.PendingTables()) != 0 {
		t.Errorf("%d route calls, pending tables %+v: want none", n, r.PendingTables())
	}
}

// TestTableMadeBehindTheRenderersBack: the startup configuration makes the
// pod VRF's table before the renderer hears of any interface; a new
// service's reject route (table 0) is then added. The route refused before
// (the service CIDR's lookup) still waits: the table stays pending
// (readiness says so) until it is added, rather than being forgotten with
// it missing from VPP.
func TestTableMadeBehindTheRenderersBack(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on})
	e.vpp.CreateTable(1)
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = time.Hour
	e.cfg.SNAT = nat44.SNAT{}
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	e.restartLate()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true) // the VRF 1 routes refused: table 1 pending
	if p := r.PendingTables(); len(p) != 1 || len(p[0].Routes) != 1 {
		t.Fatalf("PendingTables() = %+v, want table 1 with its route", p)
	}

	e.vpp.FinishStartup() // table 1 and the interfaces; no event taken in yet
	if err := r.UpdateService(nil, svc("new", "10.96.0.77", "10.1.2.7")); err != nil {
		t.Fatal(err)
	}
	e.apply(r, false)
	if !slices.ContainsFunc(e.vpp.Routes(), func(rt sim.Route) bool {
		return rt.VRF == 0 && rt.Prefix == netip.MustParsePrefix("10.96.0.77/32") && rt.Reject
	}) {
		t.Fatalf("routes %v: want the new cluster IP's reject in VRF 0", e.vpp.Routes())
	}
	// Every desired route is in VPP or reported waiting.
	if p := r.PendingTables(); !hasRoute(e.vpp, e.cfg.ServiceCIDR, 1) && (len(p) != 1 || len(p[0].Routes) != 1) {
		t.Errorf("the route into table 1 missing from VPP, pending tables %+v: not reported", p)
	}
}
