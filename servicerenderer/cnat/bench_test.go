package cnat

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	sr "contiv.dev/vpp/servicerenderer"
)

// countVPP executes nothing and counts the calls.
type countVPP struct{ calls int }

func (c *countVPP) UpdateTranslation(context.Context, *Translation) (uint32, error) {
	c.calls++
	return 0, nil
}
func (c *countVPP) DeleteTranslation(context.Context, uint32) error { c.calls++; return nil }
func (c *countVPP) DumpTranslations(context.Context) ([]Dumped, error) {
	c.calls++
	return nil, nil
}
func (c *countVPP) SNATAddresses(context.Context) (netip.Addr, netip.Addr, error) {
	c.calls++
	return netip.IPv4Unspecified(), netip.IPv6Unspecified(), nil
}
func (c *countVPP) SetSNATAddresses(context.Context, netip.Addr, netip.Addr) error {
	c.calls++
	return nil
}
func (c *countVPP) SetSNATPolicy(context.Context, SNATPolicy) error { c.calls++; return nil }
func (c *countVPP) AddDelExcludePrefix(context.Context, netip.Prefix, bool) error {
	c.calls++
	return nil
}
func (c *countVPP) AddDelSNATInterface(context.Context, string, SNATTable, bool) (uint32, error) {
	c.calls++
	return 1, nil
}
func (c *countVPP) AddDelFIBRoute(context.Context, Route, bool) error { c.calls++; return nil }
func (c *countVPP) DumpFIBRoutes(context.Context, []uint32, bool) ([]Route, error) {
	c.calls++
	return nil, nil
}
func (c *countVPP) EnableDisableFeature(context.Context, string, Feature, bool) (uint32, error) {
	c.calls++
	return 1, nil
}

// benchServices is W(N) as the NAT44 benchmark has it: N ClusterIP
// services with 10 backends over 100 nodes, every tenth a NodePort.
func benchServices(n int) []*sr.ContivService {
	out := make([]*sr.ContivService, n)
	for i := range n {
		var bs []sr.Backend
		for j := range 10 {
			e := 10*i + j
			node := e%100 + 1
			bs = append(bs, sr.Backend{IP: sr.IPOf(netip.AddrFrom4([4]byte{10, 1, byte(node), byte((e/100)%240 + 2)})),
				Port: 8080, Local: node == 1, Ready: true, Serving: true})
		}
		p := sr.Port{Name: "http", Protocol: sr.TCP, Port: 80, Backends: bs}
		if i%10 == 5 {
			p.NodePort = uint16(30000 + i/10)
		}
		out[i] = &sr.ContivService{
			ID:         sr.ServiceID{Namespace: "bench", Name: fmt.Sprintf("svc-%05d", i)},
			ClusterIPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 96 + byte(i>>16), byte(i >> 8), byte(i)})},
			Ports:      []sr.Port{p}, Created: t0,
		}
	}
	return out
}

func BenchmarkResync10000(b *testing.B) {
	svcs := benchServices(10000)
	for b.Loop() {
		vpp := &countVPP{}
		r := newRenderer(b, vpp, nil)
		_ = r.Resync(resyncData(svcs...))
		if err := r.Apply(context.Background(), true); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(vpp.calls), "calls")
	}
}

// BenchmarkChange10000 is one endpoint added or removed, applied.
func BenchmarkChange10000(b *testing.B) {
	svcs := benchServices(10000)
	vpp := &countVPP{}
	r := newRenderer(b, vpp, nil)
	_ = r.Resync(resyncData(svcs...))
	if err := r.Apply(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	vpp.calls = 0
	i := 0
	for b.Loop() {
		old := svcs[i%len(svcs)]
		c := *old
		c.Ports = []sr.Port{old.Ports[0]}
		c.Ports[0].Backends = old.Ports[0].Backends[:9]
		_ = r.UpdateService(old, &c)
		_ = r.Apply(context.Background(), false)
		_ = r.UpdateService(&c, old)
		_ = r.Apply(context.Background(), false)
		i++
	}
	b.ReportMetric(float64(vpp.calls)/float64(2*i), "calls/change")
}
