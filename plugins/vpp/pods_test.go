package vpp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// A VPP restarted with pods: the agent reconnects before the startup
// configuration's "ip table add" of the pod VRF has run, and its NAT44
// mappings, whose locals are in the pod VRF, have made that VRF's unicast
// table alone. The gateway loopback bound then must still lend its address
// to a pod interface made once the startup configuration completed the
// table (measured on VPP 25.02 in e2evpp's TestRealVPPCNI: the first ADD
// after a VPP restart failed with -74 until the agent made the table
// itself).
func TestGatewayLendsItsAddressAfterThePodVRFIsCompleted(t *testing.T) {
	v := sim.New(sim.Options{})
	t.Cleanup(v.Close)
	v.SetHostInterfaces(func(string) bool { return true })
	c := New(Config{Adapter: v, ExtraMessages: PodMessages(), RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	c.Start(ctx)
	t.Cleanup(func() { cancel(); c.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := c.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	local := func(ip string) nat44_ed.Nat44LbAddrPort {
		return nat44_ed.Nat44LbAddrPort{Addr: netip.MustParseAddr(ip).As4(), Port: 8080, Probability: 1, VrfID: 1}
	}
	for _, req := range []struct{ req, reply api.Message }{
		{&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: 1000}, &nat44_ed.Nat44EdPluginEnableDisableReply{}},
		{&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY, ExternalAddr: netip.MustParseAddr("10.96.0.10").As4(),
			ExternalPort: 80, Protocol: 6, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{local("10.1.1.2"), local("10.1.1.3")}},
			&nat44_ed.Nat44AddDelLbStaticMappingReply{}},
	} {
		if err := c.invoke(ctx, req.req, req.reply); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPods(c, nil)
	gw, err := p.EnsureGateway(ctx, "contiv-pod-gateway", 1, netip.MustParsePrefix("10.1.1.1/32"))
	if err != nil {
		t.Fatal(err)
	}
	v.CreateTable(1) // the startup configuration's "ip table add 1" runs
	_, err = p.AddPodInterface(ctx, PodLink{Kind: PodLinkAFPacket, HostIfName: "vpp1", Tag: "default/web", VRF: 1, Unnumbered: gw,
		PodIP: netip.MustParseAddr("10.1.1.4"), MAC: [6]byte{2, 0xfe, 10, 1, 1, 4}, PodMAC: [6]byte{2, 0, 0, 0, 0, 4}})
	if err != nil {
		t.Errorf("a pod added once the pod VRF is complete: %v", err)
	}
}
