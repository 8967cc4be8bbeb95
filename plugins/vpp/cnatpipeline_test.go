package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// cnatPipelineOps are interface features and tables (one of a missing
// interface, one of an unknown table), more translation updates than PipelineWindow, an
// update of an existing key, deletes by id (one of a translation this
// batch made, at the id VPP reuses, one of none) and calls refused
// before sending (no path, a path of the other family).
func cnatPipelineOps() []cnat.Op {
	tr := func(port uint16, n int) *cnat.Translation {
		t := &cnat.Translation{Key: cnat.Key{IP: netip.MustParseAddr("10.96.0.1"), Port: port, Proto: servicerenderer.TCP}}
		for i := range n {
			t.Paths = append(t.Paths, cnat.Path{IP: netip.AddrFrom4([4]byte{10, 1, byte(port >> 8), byte(i + 2)}), Port: 8080})
		}
		return t
	}
	ops := []cnat.Op{
		{Kind: cnat.OpFeature, Interface: "tap1", Feature: cnat.FeatureInput4, Add: true},
		{Kind: cnat.OpFeature, Interface: "tap1", Feature: cnat.FeatureOutput4, Add: true},
		{Kind: cnat.OpSNATInterface, Interface: "tap1", Table: cnat.TablePod, Add: true},
		{Kind: cnat.OpFeature, Interface: "tap9", Feature: cnat.FeatureInput4, Add: true},    // no such interface
		{Kind: cnat.OpSNATInterface, Interface: "tap1", Table: cnat.SNATTable(9), Add: true}, // -7
	}
	for p := range 300 {
		ops = append(ops, cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: tr(uint16(1000+p), 1+p%3)})
	}
	v6 := tr(5000, 1)
	v6.Paths[0].IP = netip.MustParseAddr("fd00::1")
	return append(ops,
		cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: tr(1001, 3)},                      // same key: same id
		cnat.Op{Kind: cnat.OpDeleteTranslation, Translation: tr(1002, 3), ID: 2, HaveID: true}, // 10.96.0.1:1002
		cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: tr(2000, 2)},                      // takes id 2 again
		cnat.Op{Kind: cnat.OpDeleteTranslation, Translation: tr(2000, 2), ID: 2, HaveID: true}, // the new one
		cnat.Op{Kind: cnat.OpDeleteTranslation, Translation: tr(9, 1), ID: 7777, HaveID: true}, // -6
		cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: tr(3000, 0)},                      // no path: not sent
		cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: v6},                               // other family: not sent
		cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: tr(1299, 1)},                      // last
	)
}

// syncCNAT calls op through the synchronous methods, as the renderer's
// apply step does for an op with an id.
func syncCNAT(ctx context.Context, c *CNAT, op *cnat.Op) (idx uint32, err error) {
	switch op.Kind {
	case cnat.OpDeleteTranslation:
		err = c.DeleteTranslation(ctx, op.ID)
	case cnat.OpFeature:
		idx, err = c.EnableDisableFeature(ctx, op.Interface, op.Feature, op.Add)
	case cnat.OpSNATInterface:
		idx, err = c.AddDelSNATInterface(ctx, op.Interface, op.Table, op.Add)
	default:
		_, err = c.UpdateTranslation(ctx, op.Translation)
	}
	return idx, err
}

// TestCNATPipelineAnswersAsSynchronous sends one batch through a cnat
// Pipeline on the socket-served VPP, and call by call synchronously on
// another: every call gets the same result (error text and
// classification), and both VPPs end with the same translations at the
// same ids (ids are pool indexes reused last in, first out: the calls
// ran in order).
func TestCNATPipelineAnswersAsSynchronous(t *testing.T) {
	for _, c := range []struct {
		version string
		keep    int
	}{{"", len(cnatPipelineOps())}, {"", 2}, {"", 5}, {"26.06-simulated", len(cnatPipelineOps())}, {"26.06-simulated", 2}} {
		keep := c.keep
		t.Run(fmt.Sprintf("%s-in-flight-%d", c.version, keep), func(t *testing.T) {
			ctx := context.Background()
			pv, _, pn := socketEnv(t, sim.Options{ServiceTime: 50 * time.Microsecond, Version: c.version}, Config{ExtraMessages: CNATMessages()})
			pc := NewCNAT(pn.conn, pn.ifaces, nil)
			se := setup(t, sim.Options{Version: c.version})
			for _, v := range []*sim.VPP{pv, se.vpp} {
				if _, err := v.AddInterface("tap1", ""); err != nil {
					t.Fatal(err)
				}
			}
			se.connected(t)
			if err := pn.ifaces.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			sc := NewCNAT(se.conn, se.ifaces, nil)
			ops := cnatPipelineOps()
			p, err := pc.Pipeline(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got := make([]error, len(ops))
			idx := make([]uint32, len(ops))
			var inFlight []int
			for i := range ops {
				if err := p.Send(&ops[i]); err != nil {
					got[i] = err
				} else {
					inFlight = append(inFlight, i)
				}
				for len(inFlight) > i%keep {
					idx[inFlight[0]], got[inFlight[0]] = p.Recv()
					inFlight = inFlight[1:]
				}
			}
			for _, i := range inFlight {
				idx[i], got[i] = p.Recv()
			}
			if _, err := p.Recv(); err == nil {
				t.Errorf("Recv with nothing in flight answered")
			}
			invalid := 0
			for i := range ops {
				wantIdx, want := syncCNAT(ctx, sc, &ops[i])
				if fmt.Sprint(got[i]) != fmt.Sprint(want) || idx[i] != wantIdx || errors.Is(got[i], cnat.ErrNoInterface) != errors.Is(want, cnat.ErrNoInterface) || errors.Is(got[i], cnat.ErrInvalid) != errors.Is(want, cnat.ErrInvalid) ||
					errors.Is(got[i], cnat.ErrNotFound) != errors.Is(want, cnat.ErrNotFound) {
					t.Errorf("%d %v: pipelined %v (index %d), synchronous %v (index %d)", i, ops[i].Kind, got[i], idx[i], want, wantIdx)
				}
				if errors.Is(got[i], cnat.ErrInvalid) {
					invalid++
				}
			}
			if invalid != 5 {
				t.Errorf("%d operations refused, want 5", invalid)
			}
			if a, b := pv.CnatSnatState(), se.vpp.CnatSnatState(); !reflect.DeepEqual(a, b) || pv.CnatFeatureCount("tap1", "cnat-output-ip4") != 1 {
				t.Errorf("SNAT state pipelined %+v, synchronous %+v", a, b)
			}
			if a, b := pv.CnatTranslations(), se.vpp.CnatTranslations(); !reflect.DeepEqual(a, b) || len(a) != 299 {
				t.Errorf("%d translations pipelined, %d synchronous (want 299), or they differ", len(a), len(b))
			}
			if n := pv.Calls("cnat_translation_update"); n != 303 {
				t.Errorf("%d updates reached the VPP, want 303", n)
			}
		})
	}
}

// TestCNATPipelineBroken closes the VPP's socket under a pipeline: every
// call fails, transiently (not as invalid).
func TestCNATPipelineBroken(t *testing.T) {
	ctx := context.Background()
	_, srv, n := socketEnv(t, sim.Options{}, Config{ExtraMessages: CNATMessages(), CallTimeout: 300 * time.Millisecond, HealthInterval: time.Hour})
	p, err := NewCNAT(n.conn, n.ifaces, nil).Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_ = srv.Close()
	ops := cnatPipelineOps()[:40]
	sent := 0
	for i := range ops {
		err := p.Send(&ops[i])
		if err == nil {
			sent++
			continue
		}
		if errors.Is(err, cnat.ErrInvalid) {
			t.Errorf("send on a closed socket: %v, classified invalid", err)
		}
	}
	for range sent {
		if _, err := p.Recv(); err == nil || errors.Is(err, cnat.ErrInvalid) {
			t.Errorf("answer on a closed socket: %v", err)
		}
	}
}
