package nat44_test

import (
	"net/netip"
	"testing"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
)

// TestSinkSwitchCutsNothing: an external IP (Local policy) moves between
// its states, each an incremental apply: endpoints on another node only
// (mapped to the drop sink, 10.111.255.255: dropped), a local endpoint
// (translated), no endpoint at all (the drop sink too: NAT44-ED cannot
// reject it, records-verdicts/verdicts-nat44.jsonl, and routing it on by
// destination would send it back where it came from), and back. Established connections of the other frontends are never cut.
func TestSinkSwitchCutsNothing(t *testing.T) {
	e := newSimEnv(t)
	r := e.resynced(cluster())
	sessions := e.openSessions(
		sim.Packet{Src: addr("10.1.1.3"), Dst: addr("10.96.0.1"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap1"},
		sim.Packet{Src: addr("8.8.8.8"), Dst: addr("192.168.16.10"), Proto: sim.TCP, DstPort: 30080, Ingress: "GbE"},
		sim.Packet{Src: addr("8.8.8.8"), Dst: addr("20.20.20.20"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"},
		sim.Packet{Src: addr("8.8.8.8"), Dst: addr("20.20.20.21"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"},
	)
	cut := e.vpp.SessionsCut()

	edge := func(backends ...string) *servicerenderer.ContivService {
		s := svc("edge", "10.96.0.30", backends...)
		s.ExternalIPs = []netip.Addr{addr("20.20.20.30")}
		s.ExternalPolicy = servicerenderer.PolicyLocal
		return s
	}
	steps := []struct {
		what string
		svc  *servicerenderer.ContivService
		want sim.Verdict
	}{
		{"endpoints elsewhere only: dropped", edge("10.1.2.30"), sim.Dropped},
		{"a local endpoint: translated", edge("10.1.1.30", "10.1.2.30"), sim.Translated},
		{"endpoints elsewhere only again: dropped", edge("10.1.2.30"), sim.Dropped},
		{"no endpoint: dropped at the sink (kube-proxy rejects; NAT44-ED cannot)", edge(), sim.Dropped},
		{"endpoints elsewhere only again: dropped", edge("10.1.2.30"), sim.Dropped},
	}
	var prev *servicerenderer.ContivService
	for _, s := range steps {
		if err := r.UpdateService(prev, s.svc); err != nil {
			t.Fatal(err)
		}
		prev = s.svc
		e.apply(r, false)
		e.inSync(r)
		res := e.vpp.Trace(sim.Packet{Src: addr("8.8.4.4"), Dst: addr("20.20.20.30"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"})
		if res.Verdict != s.want {
			t.Errorf("%s: %v (%s), want %v", s.what, res.Verdict, res.Reason, s.want)
		}
		if c := e.vpp.SessionsCut() - cut; c != 0 {
			t.Errorf("%s: %d connections cut", s.what, c)
		}
		for _, ss := range sessions {
			if !e.vpp.SessionAlive(ss.ID) {
				t.Errorf("%s: session %+v gone", s.what, ss)
			}
		}
	}
}
