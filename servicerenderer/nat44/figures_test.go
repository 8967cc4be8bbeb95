package nat44_test

import (
	"fmt"
	"net/netip"
	"testing"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
)

// TestRecordedFailuresFixed renders the services FACTS.md §1 recorded
// crashing or skewing VPP 25.02 and asks the simulated VPP's oracle, which
// picks as VPP does, where a packet goes: no frontend crashes it, and every
// backend the mapping holds gets the share its probability gives it (255
// of the endpoints when there are more). It logs the figures.
func TestRecordedFailuresFixed(t *testing.T) {
	for _, c := range []struct {
		endpoints, local int
		weight           uint8
	}{
		{255, 0, 1}, {256, 0, 1}, {257, 0, 1}, {300, 154, 1}, {1000, 10, 1},
		{2, 2, 128}, {2, 2, 255}, {3, 3, 255}, {4, 1, 255}, {300, 20, 10},
	} {
		t.Run(fmt.Sprintf("%d endpoints, %d local, weight %d", c.endpoints, c.local, c.weight), func(t *testing.T) {
			e := newSimEnv(t)
			e.cfg.LocalEndpointWeight = c.weight
			r := e.renderer()
			data := cluster()
			data.Services = []*servicerenderer.ContivService{bigSvc("big", addr("10.96.0.100"), c.endpoints, func(i int) bool { return i < c.local })}
			if err := r.Resync(data); err != nil {
				t.Fatal(err)
			}
			e.apply(r, true)
			res := e.vpp.Translate(sim.Packet{Src: addr("8.8.8.8"), Dst: addr("10.96.0.100"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"})
			if res.Verdict != sim.Translated || e.vpp.Crashes() != 0 || e.vpp.Skews() != 0 {
				t.Fatalf("%s: %s (crashes %d, skews %d)", res.Verdict, res.Reason, e.vpp.Crashes(), e.vpp.Skews())
			}
			held := map[netip.Addr]uint8{}
			sum := 0
			for _, m := range e.vpp.Snapshot().Mappings {
				if m.IP == addr("10.96.0.100") {
					for _, l := range m.Locals {
						held[l.IP] = l.Probability
						sum += int(l.Probability)
					}
				}
			}
			remote, local, most, least := 0, 0, 0.0, 1.0
			for _, b := range res.Backends {
				if want := float64(held[b.IP]) / float64(sum); b.Probability != want {
					t.Errorf("%v gets %v, its probability %d of %d gives %v", b.IP, b.Probability, held[b.IP], sum, want)
				}
				if a := b.IP.As4(); int(a[2])*250+int(a[3])-1 < c.local { // bigIP's index
					local++
				} else {
					remote++
				}
				most, least = max(most, b.Probability), min(least, b.Probability)
			}
			want := min(c.endpoints, 255)
			if c.local*int(c.weight) >= 255 {
				want = min(c.local, 255)
			} else if c.endpoints-c.local+c.local*int(c.weight) > 255 {
				want = c.local + 255 - c.local*int(c.weight)
			}
			if len(res.Backends) != want {
				t.Errorf("%d backends reached, want %d", len(res.Backends), want)
			}
			t.Logf("reached %d of %d (%d local, %d remote), shares %.4f..%.4f, sum %d", len(res.Backends), c.endpoints, local, remote, least, most, sum)
		})
	}
}
