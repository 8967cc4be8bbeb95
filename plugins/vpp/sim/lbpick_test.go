package sim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/core"
)

// manyLocals are n backends of probability prob, port 8080, VRF 1: the
// first nLocal in 10.1.0.0/16, the others ("remote") in 10.2.0.0/16.
func manyLocals(n, nLocal int, prob uint8) []nat44_ed.Nat44LbAddrPort {
	out := make([]nat44_ed.Nat44LbAddrPort, n)
	for i := range out {
		net := 1
		if i >= nLocal {
			net = 2
		}
		out[i] = lbLocal(fmt.Sprintf("10.%d.%d.%d", net, i/250, i%250+1), prob)
	}
	return out
}

// buildLB creates ext:80 as VPP 25.02 accepts it: at most 255 locals in
// the create, the others added one nat44_lb_static_mapping_add_del_local
// each (every call accepted, as recorded).
func buildLB(t *testing.T, v *VPP, conn *core.Connection, ext string, locals []nat44_ed.Nat44LbAddrPort) {
	t.Helper()
	first := locals[:min(len(locals), maxLBLocals)]
	send(t, v, conn, weighted(ext, 0, first...))
	for _, l := range locals[len(first):] {
		send(t, v, conn, localOp(ext, l, true))
	}
}

// draw opens n sessions to ext:80 and counts them per backend.
func draw(t *testing.T, v *VPP, ext string, n int) map[netip.AddrPort]int {
	t.Helper()
	got := map[netip.AddrPort]int{}
	for i := range n {
		s, err := v.OpenSession(fromPod(ext), uint16(20000+i))
		if err != nil {
			t.Fatalf("session %d to %s: %v", i, ext, err)
		}
		got[s.Backend]++
	}
	return got
}

// TestLBSumRecorded reproduces FACTS.md §1's figures: the probabilities of
// a load-balanced mapping sum in a u8, so 256 of probability 1 (built as
// 255 + 1 add_del_local) and 2 of probability 128 crash VPP on the first
// packet, 257 send (nearly) everything to one backend, 300 reach only the
// first 44, and 255 spread evenly.
func TestLBSumRecorded(t *testing.T) {
	t.Run("255 of probability 1: uniform", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{SessionSeed: 7})
		buildLB(t, v, conn, "10.96.1.4", manyLocals(255, 255, 1))
		r := v.Translate(fromPod("10.96.1.4"))
		if len(r.Backends) != 255 {
			t.Fatalf("oracle: %d backends reachable, want 255", len(r.Backends))
		}
		for _, b := range r.Backends {
			if b.Probability != 1.0/255 {
				t.Fatalf("oracle: %v gets %v, want 1/255", b.IP, b.Probability)
			}
		}
		got := draw(t, v, "10.96.1.4", 255*20)
		most := 0
		for _, n := range got {
			most = max(most, n)
		}
		if len(got) != 255 || most > 60 {
			t.Errorf("5100 sessions reached %d backends, the busiest %d times; want 255, ~20 each", len(got), most)
		}
	})
	t.Run("256 of probability 1: crash on the first packet", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{})
		buildLB(t, v, conn, "10.96.1.4", manyLocals(256, 256, 1))
		if v.Crashes() != 0 {
			t.Fatalf("crashed while configuring: %s", v.LastCrash())
		}
		if r := v.Translate(fromPod("10.96.1.4")); r.Verdict != Dropped || r.Reason != lbSumCrashReason {
			t.Errorf("oracle: %+v", r)
		}
		if _, err := v.OpenSession(fromPod("10.96.1.4"), 1); !errors.Is(err, ErrZeroProbabilities) || v.Crashes() != 1 {
			t.Errorf("first packet: %v, crashes %d", err, v.Crashes())
		}
	})
	t.Run("2 of probability 128: crash on the first packet", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{})
		send(t, v, conn, weighted("10.96.1.5", 0, lbLocal("10.1.1.2", 128), lbLocal("10.1.1.3", 128)))
		if _, err := v.OpenSession(fromPod("10.96.1.5"), 1); !errors.Is(err, ErrZeroProbabilities) || v.Crashes() != 1 {
			t.Errorf("first packet: %v, crashes %d", err, v.Crashes())
		}
	})
	t.Run("257 of probability 1: one backend", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{SessionSeed: 7})
		buildLB(t, v, conn, "10.96.1.4", manyLocals(257, 257, 1))
		got := draw(t, v, "10.96.1.4", 300)
		most := 0
		for _, n := range got {
			most = max(most, n)
		}
		if most < 294 {
			t.Errorf("the busiest backend got %d of 300 (%v); recorded: 294 of 300 to one backend", most, got)
		}
	})
	t.Run("300, 146 remote: 44 reached, no remote", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{SessionSeed: 7})
		buildLB(t, v, conn, "10.96.1.4", manyLocals(300, 154, 1))
		r := v.Translate(fromPod("10.96.1.4"))
		if len(r.Backends) != 44 {
			t.Errorf("oracle: %d backends reachable, want 44", len(r.Backends))
		}
		got := draw(t, v, "10.96.1.4", 3000)
		for b := range got {
			if b.Addr().As4()[1] == 2 {
				t.Errorf("remote backend %v reached", b)
			}
		}
		if len(got) != 44 {
			t.Errorf("3000 sessions reached %d backends, want 44 (recorded: 44 of 300 with 300 requests)", len(got))
		}
	})
	t.Run("sum 200 of 3: exact shares", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{})
		send(t, v, conn, weighted("10.96.1.6", 0, lbLocal("10.1.1.2", 100), lbLocal("10.1.1.3", 50), lbLocal("10.1.1.4", 50)))
		want := map[netip.Addr]float64{ip("10.1.1.2"): 0.5, ip("10.1.1.3"): 0.25, ip("10.1.1.4"): 0.25}
		for _, b := range v.Translate(fromPod("10.96.1.6")).Backends {
			if b.Probability != want[b.IP] {
				t.Errorf("%v: %v, want %v", b.IP, b.Probability, want[b.IP])
			}
		}
	})
}

// TestLBSumTraffic: with Options.Traffic a call that leaves a mapping
// summing to a multiple of 256 crashes the simulated VPP at once (a packet
// is always there), and one past 255 counts a skew.
func TestLBSumTraffic(t *testing.T) {
	v, conn := sessionVPP(t, Options{Traffic: true})
	send(t, v, conn, weighted("10.96.1.7", 0, lbLocal("10.1.1.2", 200), lbLocal("10.1.1.3", 55)))
	if v.Skews() != 0 || v.Crashes() != 0 {
		t.Fatalf("sum 255: skews %d, crashes %d", v.Skews(), v.Crashes())
	}
	send(t, v, conn, localOp("10.96.1.7", lbLocal("10.1.1.4", 2), true))
	if v.Skews() != 1 {
		t.Errorf("sum 257: skews %d, want 1", v.Skews())
	}
	send(t, v, conn, localOp("10.96.1.7", lbLocal("10.1.1.3", 0), false)) // 257 - 55 = 202
	if v.Skews() != 1 || v.Crashes() != 0 {
		t.Fatalf("sum 202: skews %d, crashes %d", v.Skews(), v.Crashes())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := conn.Invoke(ctx, localOp("10.96.1.7", lbLocal("10.1.1.5", 54), true), &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{})
	if err == nil || v.Crashes() != 1 || v.LastCrash() != lbSumCrashReason {
		t.Errorf("sum 256: err %v, crashes %d (%s)", err, v.Crashes(), v.LastCrash())
	}
}
