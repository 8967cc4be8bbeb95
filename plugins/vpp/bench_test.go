package vpp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// lbMapping is a load-balanced mapping with n locals on cluster IP i.
func lbMapping(i, n int) *nat44.Mapping {
	m := &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.IPv4{10, 96, byte(i >> 8), byte(i)}, Port: 80, Proto: 6},
		TwiceNAT:   nat44.TwiceNATSelf,
		Tag:        "contiv:bench/svc",
	}
	for j := range n {
		m.Locals = append(m.Locals, nat44.Local{IP: nat44.IPv4{10, 1, byte(j >> 8), byte(j)}, Port: 8080, VRF: 1, Probability: 1})
	}
	return m
}

// BenchmarkAddDelMapping measures one binary-API round trip (govpp core,
// codec and the simulated VPP): each op adds and deletes a load-balanced
// mapping with 3 locals, 2 calls.
func BenchmarkAddDelMapping(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, nat44.Global{}); err != nil {
		b.Fatal(err)
	}
	m := lbMapping(1, 3)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.nat.AddDelMapping(ctx, m, true); err != nil {
			b.Fatal(err)
		}
		if err := e.nat.AddDelMapping(ctx, m, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddDelLBLocal measures an in-place endpoint change: add and
// remove one local of a load-balanced mapping, 2 calls.
func BenchmarkAddDelLBLocal(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, nat44.Global{}); err != nil {
		b.Fatal(err)
	}
	m := lbMapping(1, 3)
	if err := e.nat.AddDelMapping(ctx, m, true); err != nil {
		b.Fatal(err)
	}
	l := nat44.Local{IP: nat44.MustParseIPv4("10.2.0.1"), Port: 8080, VRF: 1, Probability: 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.nat.AddDelLBLocal(ctx, m.MappingKey, l, true); err != nil {
			b.Fatal(err)
		}
		if err := e.nat.AddDelLBLocal(ctx, m.MappingKey, l, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDump10k measures a full NAT44 dump of 10,000 load-balanced
// mappings with 3 locals each (a resync's read of VPP).
func BenchmarkDump10k(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, nat44.Global{}); err != nil {
		b.Fatal(err)
	}
	const n = 10000
	for i := range n {
		if err := e.nat.AddDelMapping(ctx, lbMapping(i, 3), true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		st, err := e.nat.Dump(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(st.Mappings) != n {
			b.Fatalf("dumped %d mappings", len(st.Mappings))
		}
	}
}

// BenchmarkCNATPipeline measures the pipelined translation updates of a
// first programming over the socket into the simulated VPP (served in the
// same process, so its decoding is counted too): an op is one pipeline
// of 1000 updates of 8 paths each.
func BenchmarkCNATPipeline(b *testing.B) {
	_, _, n := socketEnv(b, sim.Options{}, Config{ExtraMessages: CNATMessages(), HealthInterval: time.Hour})
	c := NewCNAT(n.conn, n.ifaces, nil)
	ctx := context.Background()
	ops := make([]cnat.Op, 1000)
	for i := range ops {
		t := &cnat.Translation{Key: cnat.Key{IP: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80, Proto: servicerenderer.TCP}}
		for j := range 8 {
			t.Paths = append(t.Paths, cnat.Path{IP: netip.AddrFrom4([4]byte{10, 1, byte(j), byte(i)}), Port: 8080})
		}
		ops[i] = cnat.Op{Kind: cnat.OpUpdateTranslation, Translation: t}
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Pipeline(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := range ops {
			if err := p.Send(&ops[i]); err != nil {
				b.Fatal(err)
			}
			if i >= PipelineWindow {
				if _, err := p.Recv(); err != nil {
					b.Fatal(err)
				}
			}
		}
		for range min(len(ops), PipelineWindow) {
			if _, err := p.Recv(); err != nil {
				b.Fatal(err)
			}
		}
		p.Close()
	}
}
