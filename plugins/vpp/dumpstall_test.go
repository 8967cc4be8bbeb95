package vpp

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// stalledDump fills VPP with mappings and dumps them with a reader that
// stalls for stall before its first object, through a dump buffer of
// buffer replies.
func stalledDump(t *testing.T, mappings, buffer int, stall time.Duration) (got int, err error) {
	t.Helper()
	defer func(b int) { dumpReplies = b }(dumpReplies)
	dumpReplies = buffer
	ctx := context.Background()
	_, _, n := socketEnv(t, sim.Options{}, Config{})
	if err := n.SetGlobal(ctx, nat44.Global{SessionLimit: 1000}); err != nil {
		t.Fatal(err)
	}
	for i := range mappings {
		m := &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.IPv4{10, 96, byte(i >> 8), byte(i)}, Port: 80, Proto: servicerenderer.TCP},
			Locals: []nat44.Local{nat44.Placeholder, {IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 1}}, Tag: "contiv-test"}
		if err := n.AddDelMapping(ctx, m, true); err != nil {
			t.Fatal(err)
		}
	}
	stalled := false
	err = n.conn.dump(ctx, &nat44_ed.Nat44LbStaticMappingDump{}, func(api.Message) error {
		if !stalled {
			stalled = true
			time.Sleep(stall)
		}
		got++
		return nil
	})
	return got, err
}

// A dump whose reader stalls (a GC pause, a starved CPU) longer than govpp
// waits by default (100 ms) to hand a reply over still returns every
// object VPP holds: none is dropped, so none is taken for missing; with
// its buffer the size of the dump as with a buffer of 100 (govpp waits
// replyHandOver for the reader).
func TestDumpSurvivesAStalledReader(t *testing.T) {
	const mappings = 600
	for _, buffer := range []int{DumpReplyBuffer, 100} {
		got, err := stalledDump(t, mappings, buffer, 400*time.Millisecond)
		if err != nil || got != mappings {
			t.Errorf("buffer %d, dump with a stalled reader: %d of %d mappings, err %v", buffer, got, mappings, err)
		}
	}
}

// A dump whose reader stalls past replyHandOver with its buffer full loses
// replies in govpp: the dump fails, never returns less than VPP holds.
func TestStalledDumpFailsOrIsWhole(t *testing.T) {
	const mappings = 300
	got, err := stalledDump(t, mappings, 100, replyHandOver+500*time.Millisecond)
	if !errors.Is(err, ErrRepliesDropped) {
		t.Errorf("dump stalled past the hand-over: %d of %d mappings, err %v; want ErrRepliesDropped", got, mappings, err)
	}
	if got == mappings {
		t.Errorf("every reply arrived: the test stalled too little to make govpp drop one")
	}
}
