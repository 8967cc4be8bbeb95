package sim

import (
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat_types"
)

// TestUnnumberedNeedsTheSameTables: VPP makes an interface unnumbered to
// another only when both are bound to the same IPv4 unicast and multicast
// tables (measured on VPP 25.02, pods.go). A VRF that NAT44 made for a
// mapping's local has no multicast table until ip_table_add_del (or the
// startup configuration's "ip table add") makes it: a loopback put in the
// VRF before then lends its address to no interface put in it after.
func TestUnnumberedNeedsTheSameTables(t *testing.T) {
	v, conn := connect(t, Options{})
	v.SetHostInterfaces(func(string) bool { return true })
	enable(t, conn)
	// The VRF exists through NAT44 alone: a mapping's locals are in it.
	m := lb("10.96.0.10", 80, true, nat_types.NAT_IS_OUT2IN_ONLY, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1))
	if rv := call(t, conn, m, replyFor(m)); rv != 0 {
		t.Fatalf("mapping: %v", rv)
	}
	loopback := func() uint32 {
		r := &interfaces.CreateLoopbackReply{}
		if rv := call(t, conn, &interfaces.CreateLoopback{}, r); rv != 0 {
			t.Fatalf("create_loopback: %v", rv)
		}
		return uint32(r.SwIfIndex)
	}
	afPacket := func(host string) uint32 {
		r := &af_packet.AfPacketCreateV3Reply{}
		if rv := call(t, conn, &af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: host}, r); rv != 0 {
			t.Fatalf("af_packet_create_v3 %s: %v", host, rv)
		}
		return uint32(r.SwIfIndex)
	}
	setTable := func(idx, vrf uint32) {
		t.Helper()
		if rv := call(t, conn, &interfaces.SwInterfaceSetTable{SwIfIndex: interface_types.InterfaceIndex(idx), VrfID: vrf}, &interfaces.SwInterfaceSetTableReply{}); rv != 0 {
			t.Fatalf("set_table %d %d: %v", idx, vrf, rv)
		}
	}
	unnumbered := func(idx, lender uint32) api.VPPApiError {
		return call(t, conn, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: interface_types.InterfaceIndex(lender),
			UnnumberedSwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: true}, &interfaces.SwInterfaceSetUnnumberedReply{})
	}

	early := loopback()
	setTable(early, 1) // unicast table only
	before := afPacket("vpp1")
	setTable(before, 1)
	if rv := unnumbered(before, early); rv != 0 {
		t.Errorf("both bound before the multicast table existed: %v, want 0", rv)
	}
	if rv := call(t, conn, &ipapi.IPTableAddDel{IsAdd: true, Table: ipapi.IPTable{TableID: 1}}, &ipapi.IPTableAddDelReply{}); rv != 0 {
		t.Fatalf("ip_table_add_del: %v", rv)
	}
	after := afPacket("vpp2")
	setTable(after, 1) // unicast and multicast
	if rv := unnumbered(after, early); rv != api.UNEXPECTED_INTF_STATE {
		t.Errorf("unnumbered to a loopback bound before the multicast table existed: %v, want %v", rv, api.UNEXPECTED_INTF_STATE)
	}
	late := loopback()
	setTable(late, 1)
	if rv := unnumbered(after, late); rv != 0 {
		t.Errorf("both bound once the table was added: %v, want 0", rv)
	}
	other := afPacket("vpp3") // left in table 0
	if rv := unnumbered(other, late); rv != api.UNEXPECTED_INTF_STATE {
		t.Errorf("unnumbered across VRFs: %v, want %v", rv, api.UNEXPECTED_INTF_STATE)
	}
}
