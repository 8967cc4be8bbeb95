package nat44_test

import (
	"slices"
	"testing"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestUpgradeFromPerClusterIPLookups: an agent restarting on a VPP that
// an earlier version programmed (the pod VRF's service-CIDR route a DROP,
// and per cluster IP a /32 lookup of table 0 in the pod VRF beside its /32
// reject in table 0) takes those routes for its own and, at the full
// apply, makes only the route changes the new set needs: one add that
// replaces the pod VRF's drop by the lookup (VPP replaces the path in
// place, c2-nat44.jsonl) and one delete per cluster IP. No other write,
// and no established connection cut (a route is not a session; translated
// traffic is addressed to its backend, past the service CIDR). Afterwards
// a pod's packet to an undefined port of a cluster IP is refused, and to
// an unallocated service address dropped.
func TestUpgradeFromPerClusterIPLookups(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on})
	data := cluster()
	r := e.resynced(data)

	// Established connections: a pod to a cluster IP, a client to the
	// NodePort.
	sessions := e.openSessions(
		sim.Packet{Src: addr("10.1.1.3"), Dst: addr("10.96.0.10"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap1"},
		sim.Packet{Src: addr("8.8.8.8"), Dst: addr("192.168.16.10"), Proto: sim.TCP, DstPort: 30080, Ingress: "GbE"},
	)

	// The earlier version's route set.
	cidr := e.cfg.ServiceCIDR
	old := []nat44.Route{{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(cidr), VRF: e.cfg.PodVRF}}} // a DROP
	var rejects int
	for _, rt := range r.Desired().Routes {
		if rt.Kind == nat44.RouteReject {
			rejects++
			old = append(old, nat44.Route{RouteKey: nat44.RouteKey{Prefix: rt.Prefix, VRF: e.cfg.PodVRF}, Kind: nat44.RouteLookup})
		}
	}
	for _, rt := range old {
		if err := e.nat.AddDelRoute(t.Context(), rt, true); err != nil {
			t.Fatal(err)
		}
	}
	if rejects != 4 || len(e.vpp.Routes()) != 2+2*rejects {
		t.Fatalf("old route set %v: want 2 service-CIDR routes and 2 per cluster IP (4)", e.vpp.Routes())
	}

	log.take()
	writes, cut := e.vpp.Writes(), e.vpp.SessionsCut()
	again := e.renderer() // the restarted agent
	if err := again.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(again, true)
	if n := routeCalls(log.take()); n != 1+rejects {
		t.Errorf("%d route calls, want %d (the pod VRF's route replaced, each /32 lookup deleted)", n, 1+rejects)
	}
	if w := e.vpp.Writes() - writes; w != 1+rejects {
		t.Errorf("%d writes, want %d: the route changes only", w, 1+rejects)
	}
	e.inSync(again)
	var pod []sim.Route
	for _, rt := range e.vpp.Routes() {
		if rt.VRF == e.cfg.PodVRF {
			pod = append(pod, rt)
		}
	}
	if len(pod) != 1 || pod[0].Prefix != cidr || !pod[0].Lookup || pod[0].LookupVRF != 0 {
		t.Errorf("pod VRF routes %+v, want the service CIDR's lookup of table 0 alone", pod)
	}
	if c := e.vpp.SessionsCut() - cut; c != 0 {
		t.Errorf("%d connections cut by the upgrade", c)
	}
	for _, s := range sessions {
		if !e.vpp.SessionAlive(s.ID) {
			t.Errorf("session %+v gone", s)
		}
	}
	for dst, want := range map[string]sim.Verdict{
		"10.96.0.10": sim.Rejected, // dns: port 81 undefined
		"10.96.0.9":  sim.Rejected, // empty: no endpoints
		"10.96.0.99": sim.Dropped,  // unallocated
	} {
		res := e.vpp.Trace(sim.Packet{Src: addr("10.1.1.3"), Dst: addr(dst), Proto: sim.TCP, DstPort: 81, Ingress: "master-tap1"})
		if res.Verdict != want {
			t.Errorf("pod to %s:81: %v (%s), want %v", dst, res.Verdict, res.Reason, want)
		}
	}
	if !slices.ContainsFunc(e.vpp.Routes(), func(rt sim.Route) bool { return rt.VRF == 0 && rt.Prefix == cidr && rt.Drop }) {
		t.Error("table 0's service-CIDR drop route gone")
	}
}
