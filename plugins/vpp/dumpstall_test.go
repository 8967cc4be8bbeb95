package vpp

import (
	"context"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// A dump whose reader stalls (a GC pause, a starved CPU) longer than govpp
// waits to hand a reply over still returns every object VPP holds: none
// is dropped, so none is taken for missing.
func TestDumpSurvivesAStalledReader(t *testing.T) {
	ctx := context.Background()
	_, _, n := socketEnv(t, sim.Options{}, Config{})
	if err := n.SetGlobal(ctx, nat44.Global{SessionLimit: 1000}); err != nil {
		t.Fatal(err)
	}
	const mappings = 600
	for i := range mappings {
		m := &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.IPv4{10, 96, byte(i >> 8), byte(i)}, Port: 80, Proto: servicerenderer.TCP},
			Locals: []nat44.Local{nat44.Placeholder, {IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 1}}, Tag: "contiv-test"}
		if err := n.AddDelMapping(ctx, m, true); err != nil {
			t.Fatal(err)
		}
	}
	got, stalled := 0, false
	err := n.conn.dump(ctx, &nat44_ed.Nat44LbStaticMappingDump{}, func(api.Message) error {
		if !stalled {
			stalled = true
			time.Sleep(400 * time.Millisecond) // past govpp's 100 ms per reply
		}
		got++
		return nil
	})
	if err != nil || got != mappings {
		t.Errorf("dump with a stalled reader: %d of %d mappings, err %v", got, mappings, err)
	}
}
