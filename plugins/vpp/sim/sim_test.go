package sim

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect connects a real govpp connection to a fresh simulated VPP.
func connect(t *testing.T, opts Options) (*VPP, *core.Connection) {
	t.Helper()
	v := New(opts)
	conn, err := core.Connect(v)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Disconnect)
	return v, conn
}

// call sends one request and returns the Retval of its reply.
func call(t *testing.T, conn *core.Connection, req, reply api.Message) api.VPPApiError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.Invoke(ctx, req, reply); err != nil {
		t.Fatalf("%s: %v", req.GetMessageName(), err)
	}
	return api.VPPApiError(reflect.ValueOf(reply).Elem().FieldByName("Retval").Int())
}

// dump runs a dump and returns the details.
func dump(t *testing.T, conn *core.Connection, req api.Message) []api.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := conn.NewStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.SendMsg(req); err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&memclnt.ControlPing{}); err != nil {
		t.Fatal(err)
	}
	var out []api.Message
	for {
		m, err := s.RecvMsg()
		if err != nil {
			t.Fatalf("%s: %v", req.GetMessageName(), err)
		}
		if _, end := m.(*memclnt.ControlPingReply); end {
			return out
		}
		out = append(out, m)
	}
}

func a4(s string) [4]uint8 { return netip.MustParseAddr(s).As4() }

func enable(t *testing.T, conn *core.Connection) {
	t.Helper()
	if rv := call(t, conn, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, &nat44_ed.Nat44EdPluginEnableDisableReply{}); rv != 0 {
		t.Fatalf("enable: %v", rv)
	}
}

func lb(ext string, port uint16, add bool, flags nat_types.NatConfigFlags, locals ...nat44_ed.Nat44LbAddrPort) *nat44_ed.Nat44AddDelLbStaticMapping {
	return &nat44_ed.Nat44AddDelLbStaticMapping{
		IsAdd: add, Flags: flags, ExternalAddr: a4(ext), ExternalPort: port, Protocol: 6,
		LocalNum: uint32(len(locals)), Locals: locals, Tag: "svc",
	}
}

func lbLocal(ip string, prob uint8) nat44_ed.Nat44LbAddrPort {
	return nat44_ed.Nat44LbAddrPort{Addr: a4(ip), Port: 8080, Probability: prob, VrfID: 1}
}

func static(ext string, port uint16, local string, add bool, flags nat_types.NatConfigFlags) *nat44_ed.Nat44AddDelStaticMappingV2 {
	return &nat44_ed.Nat44AddDelStaticMappingV2{
		IsAdd: add, Flags: flags, ExternalIPAddress: a4(ext), ExternalPort: port, Protocol: 6,
		LocalIPAddress: a4(local), LocalPort: 8080, VrfID: 1, Tag: "svc",
		ExternalSwIfIndex: interface_types.InterfaceIndex(noIndex),
	}
}

func localOp(ext string, local nat44_ed.Nat44LbAddrPort, add bool) *nat44_ed.Nat44LbStaticMappingAddDelLocal {
	return &nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: add, ExternalAddr: a4(ext), ExternalPort: 80, Protocol: 6, Local: local}
}

func identity(ip string, vrf uint32, add bool) *nat44_ed.Nat44AddDelIdentityMapping {
	return &nat44_ed.Nat44AddDelIdentityMapping{
		IsAdd: add, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: a4(ip), VrfID: vrf,
		SwIfIndex: interface_types.InterfaceIndex(noIndex), Tag: "snat",
	}
}

func feature(idx uint32, inside, add bool) *nat44_ed.Nat44InterfaceAddDelFeature {
	f := nat_types.NAT_IS_OUTSIDE
	if inside {
		f = nat_types.NAT_IS_INSIDE
	}
	return &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: add, Flags: f, SwIfIndex: interface_types.InterfaceIndex(idx)}
}

func pool(ip string, add, twice bool) *nat44_ed.Nat44AddDelAddressRange {
	r := &nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a4(ip), LastIPAddress: a4(ip), VrfID: noIndex, IsAdd: add}
	if twice {
		r.Flags = nat_types.NAT_IS_TWICE_NAT
	}
	return r
}

// replyFor returns an empty reply for a request.
func replyFor(req api.Message) api.Message {
	switch req.(type) {
	case *nat44_ed.Nat44AddDelLbStaticMapping:
		return &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	case *nat44_ed.Nat44AddDelStaticMappingV2:
		return &nat44_ed.Nat44AddDelStaticMappingV2Reply{}
	case *nat44_ed.Nat44LbStaticMappingAddDelLocal:
		return &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}
	case *nat44_ed.Nat44AddDelIdentityMapping:
		return &nat44_ed.Nat44AddDelIdentityMappingReply{}
	case *nat44_ed.Nat44InterfaceAddDelFeature:
		return &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
	case *nat44_ed.Nat44EdAddDelOutputInterface:
		return &nat44_ed.Nat44EdAddDelOutputInterfaceReply{}
	case *nat44_ed.Nat44AddDelAddressRange:
		return &nat44_ed.Nat44AddDelAddressRangeReply{}
	case *nat44_ed.Nat44EdPluginEnableDisable:
		return &nat44_ed.Nat44EdPluginEnableDisableReply{}
	}
	panic("no reply for " + req.GetMessageName())
}

// TestVPPRules walks through the NAT44-ED rules the simulator must
// enforce, one request at a time, with the Retval VPP answers.
func TestVPPRules(t *testing.T) {
	v, conn := connect(t, Options{})
	eth, _ := v.AddInterface("eth0", "")
	pod, _ := v.AddInterface("tap1", "default/web")
	o2i := nat_types.NAT_IS_OUT2IN_ONLY
	steps := []struct {
		name string
		req  api.Message
		want api.VPPApiError
	}{
		{"mapping before the plugin is enabled", static("10.96.0.1", 80, "10.1.1.2", true, o2i), api.UNSUPPORTED},
		{"enable", &nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: 1000}, 0},
		{"enable again", &nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, api.FEATURE_ALREADY_ENABLED},
		{"load-balanced mapping with one local", lb("10.96.0.10", 80, true, o2i, lbLocal("10.1.1.2", 1)), api.INVALID_VALUE},
		{"local with probability 0 (accepted)", lb("10.96.0.20", 80, true, o2i, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 0)), 0},
		{"duplicate locals (accepted)", lb("10.96.0.21", 80, true, o2i, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.2", 1)), 0},
		{"without out2in-only and address not in pool", lb("10.96.0.10", 80, true, 0, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1)), api.NO_SUCH_ENTRY},
		{"out2in-only load-balanced mapping", lb("10.96.0.10", 80, true, o2i, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1)), 0},
		{"same mapping again", lb("10.96.0.10", 80, true, o2i, lbLocal("10.1.1.4", 1), lbLocal("10.1.1.5", 1)), api.VALUE_EXIST},
		{"static mapping on the same key", static("10.96.0.10", 80, "10.1.1.9", true, o2i), api.VALUE_EXIST},
		{"remove one of two locals", localOp("10.96.0.10", lbLocal("10.1.1.2", 1), false), api.UNSPECIFIED},
		{"add a local that exists", localOp("10.96.0.10", lbLocal("10.1.1.2", 1), true), api.VALUE_EXIST},
		{"add a local with probability 0", localOp("10.96.0.10", lbLocal("10.1.1.6", 0), true), 0},
		{"add a third local", localOp("10.96.0.10", lbLocal("10.1.1.4", 2), true), 0},
		{"remove a local of three", localOp("10.96.0.10", lbLocal("10.1.1.2", 1), false), 0},
		{"remove an unknown local", localOp("10.96.0.10", lbLocal("10.1.1.7", 1), false), api.NO_SUCH_ENTRY},
		{"local of an unknown mapping", localOp("10.96.0.99", lbLocal("10.1.1.7", 1), true), api.NO_SUCH_ENTRY},
		{"static mapping", static("10.96.0.11", 80, "10.1.1.2", true, o2i), 0},
		{"local of a static mapping", localOp("10.96.0.11", lbLocal("10.1.1.7", 1), true), api.INVALID_VALUE},
		{"delete a static mapping as load-balanced", lb("10.96.0.11", 80, false, o2i), api.INVALID_VALUE},
		{"delete a load-balanced mapping as static (no-op)", static("10.96.0.10", 80, "10.1.1.3", false, o2i), 0},
		{"static mapping on local0's address (pending)", &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: o2i, ExternalPort: 80, Protocol: 6}, 0},
		{"delete an unknown static mapping", static("10.96.0.12", 80, "10.1.1.2", false, o2i), api.NO_SUCH_ENTRY},
		{"twice-NAT on an address-only mapping", static("10.96.0.13", 0, "10.1.1.2", true, nat_types.NAT_IS_ADDR_ONLY|nat_types.NAT_IS_TWICE_NAT), api.UNSUPPORTED},
		{"inside static mapping", static("10.96.0.14", 80, "10.1.1.2", true, 0), 0},
		{"second inside mapping for the same local", static("10.96.0.15", 80, "10.1.1.2", true, 0), api.VALUE_EXIST},
		{"pool address", pool("192.168.16.1", true, false), 0},
		{"pool address again", pool("192.168.16.1", true, false), api.VALUE_EXIST},
		{"same address in the twice-NAT pool", pool("192.168.16.1", true, true), 0},
		{"delete an unknown pool address", pool("192.168.16.2", false, false), api.NO_SUCH_ENTRY},
		{"load-balanced mapping on a pool address", lb("192.168.16.1", 80, true, 0, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1)), 0},
		{"identity mapping", identity("192.168.16.1", 0, true), 0},
		{"identity mapping again", identity("192.168.16.1", 0, true), api.VALUE_EXIST},
		{"identity mapping in another VRF", identity("192.168.16.1", 1, true), 0},
		{"static mapping on an identity key", static("192.168.16.1", 0, "10.1.1.2", true, nat_types.NAT_IS_ADDR_ONLY), api.VALUE_EXIST},
		{"delete identity in an unknown VRF", identity("192.168.16.1", 7, false), api.NO_SUCH_ENTRY},
		{"feature on an unknown interface", feature(99, false, true), api.INVALID_SW_IF_INDEX},
		{"outside feature", feature(eth, false, true), 0},
		{"outside feature again", feature(eth, false, true), 0},
		{"output feature on an in/out interface", &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)}, api.VALUE_EXIST},
		{"inside feature too", feature(eth, true, true), 0},
		{"remove the inside feature", feature(eth, true, false), 0},
		{"remove the outside feature", feature(eth, false, false), 0},
		{"remove a feature of a plain interface", feature(eth, false, false), api.NO_SUCH_ENTRY},
		{"output feature", &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)}, 0},
		{"inside feature on an output interface", feature(eth, true, true), api.VALUE_EXIST},
		{"pod interface inside", feature(pod, true, true), 0},
	}
	for _, s := range steps {
		if got := call(t, conn, s.req, replyFor(s.req)); got != s.want {
			t.Errorf("%s: retval %v, want %v", s.name, got, s.want)
		}
	}

	got := v.Snapshot()
	wantIfaces := map[string]NAT44Features{"eth0": FeatureOutput, "tap1": FeatureIn}
	if !reflect.DeepEqual(got.Interfaces, wantIfaces) {
		t.Errorf("interfaces %v, want %v", got.Interfaces, wantIfaces)
	}
	k := MappingKey{IP: netip.MustParseAddr("10.96.0.10"), Port: 80, Proto: TCP}
	m := got.Mappings[k]
	if m == nil {
		t.Fatalf("mapping %v missing: %v", k, got.Mappings)
	}
	wantLocals := []Local{
		{IP: netip.MustParseAddr("10.1.1.3"), Port: 8080, VRF: 1, Probability: 1},
		{IP: netip.MustParseAddr("10.1.1.4"), Port: 8080, VRF: 1, Probability: 2},
		{IP: netip.MustParseAddr("10.1.1.6"), Port: 8080, VRF: 1},
	}
	if !reflect.DeepEqual(m.Locals, wantLocals) || m.Tag != "svc" {
		t.Errorf("mapping %v: locals %v tag %q, want %v", k, m.Locals, m.Tag, wantLocals)
	}
	if len(got.Identities) != 2 || len(got.Pool) != 2 || got.Global.SessionLimit != 1000 {
		t.Errorf("identities %v pool %v global %+v", got.Identities, got.Pool, got.Global)
	}
}

// TestDumpsMatchSnapshot checks that the dumps carry what Snapshot shows.
func TestDumpsMatchSnapshot(t *testing.T) {
	v, conn := connect(t, Options{})
	idx, _ := v.AddInterface("eth0", "main")
	enable(t, conn)
	o2i := nat_types.NAT_IS_OUT2IN_ONLY
	for _, req := range []api.Message{
		lb("10.96.0.10", 80, true, o2i|nat_types.NAT_IS_SELF_TWICE_NAT, lbLocal("10.1.1.3", 1), lbLocal("10.1.1.2", 2)),
		static("10.96.0.11", 80, "10.1.1.2", true, o2i|nat_types.NAT_IS_TWICE_NAT),
		identity("192.168.16.1", 0, true),
		pool("10.1.1.254", true, true),
		feature(idx, false, true),
	} {
		if rv := call(t, conn, req, replyFor(req)); rv != 0 {
			t.Fatalf("%s: %v", req.GetMessageName(), rv)
		}
	}
	lbs := dump(t, conn, &nat44_ed.Nat44LbStaticMappingDump{})
	if len(lbs) != 1 {
		t.Fatalf("lb dump: %v", lbs)
	}
	d := lbs[0].(*nat44_ed.Nat44LbStaticMappingDetails)
	if d.Tag != "svc" || d.LocalNum != 2 || d.Flags != o2i|nat_types.NAT_IS_SELF_TWICE_NAT || d.Locals[0].Addr != a4("10.1.1.3") {
		t.Errorf("lb details %+v", d)
	}
	sms := dump(t, conn, &nat44_ed.Nat44StaticMappingDump{})
	if len(sms) != 1 || sms[0].(*nat44_ed.Nat44StaticMappingDetails).Flags&nat_types.NAT_IS_TWICE_NAT == 0 {
		t.Errorf("static dump: %+v", sms)
	}
	ids := dump(t, conn, &nat44_ed.Nat44IdentityMappingDump{})
	if len(ids) != 1 || ids[0].(*nat44_ed.Nat44IdentityMappingDetails).Flags != nat_types.NAT_IS_ADDR_ONLY {
		t.Errorf("identity dump: %+v", ids)
	}
	ifs := dump(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
	if len(ifs) != 2 || ifs[1].(*interfaces.SwInterfaceDetails).Tag != "main" {
		t.Errorf("interface dump: %+v", ifs)
	}
	one := dump(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(idx)})
	if len(one) != 1 || one[0].(*interfaces.SwInterfaceDetails).InterfaceName != "eth0" {
		t.Errorf("interface dump of index %d: %+v", idx, one)
	}
	snap := v.Snapshot()
	if snap.Mappings[MappingKey{IP: netip.MustParseAddr("10.96.0.10"), Port: 80, Proto: TCP}].Flags != nat_types.NAT_IS_SELF_TWICE_NAT {
		t.Errorf("snapshot lost self-twice-NAT: %+v", snap.Mappings)
	}
	if snap.Interfaces["eth0"] != FeatureOut || !snap.Pool[0].TwiceNAT {
		t.Errorf("snapshot interfaces %v pool %v", snap.Interfaces, snap.Pool)
	}
}

// TestLargeDump proves that dumps bigger than govpp's reply buffer arrive
// whole (replies are delivered by the session's goroutine).
func TestLargeDump(t *testing.T) {
	_, conn := connect(t, Options{})
	enable(t, conn)
	const n = 3000
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
		req := static(ip.String(), 80, "10.1.1.2", true, nat_types.NAT_IS_OUT2IN_ONLY)
		if rv := call(t, conn, req, replyFor(req)); rv != 0 {
			t.Fatalf("mapping %d: %v", i, rv)
		}
	}
	if got := len(dump(t, conn, &nat44_ed.Nat44StaticMappingDump{})); got != n {
		t.Fatalf("dumped %d mappings, want %d", got, n)
	}
}

func TestFaults(t *testing.T) {
	pattern := func(seed uint64) []bool {
		v, conn := connect(t, Options{})
		enable(t, conn)
		v.SetFaults(Faults{Rate: 0.5, Seed: seed})
		var failed []bool
		for i := range 40 {
			req := static(netip.AddrFrom4([4]byte{10, 96, 0, byte(i)}).String(), 80, "10.1.1.2", true, nat_types.NAT_IS_OUT2IN_ONLY)
			rv := call(t, conn, req, replyFor(req))
			if rv != 0 && rv != TransientRetval {
				t.Fatalf("unexpected retval %v", rv)
			}
			failed = append(failed, rv != 0)
		}
		// A failed request changed nothing.
		n := 0
		for _, f := range failed {
			if !f {
				n++
			}
		}
		if got := len(v.Snapshot().Mappings); got != n {
			t.Errorf("seed %d: %d mappings after %d successful adds", seed, got, n)
		}
		if v.Calls("nat44_add_del_static_mapping_v2") != 40 {
			t.Errorf("counted %d calls, want 40", v.Calls("nat44_add_del_static_mapping_v2"))
		}
		return failed
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different failures:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("different seeds, same failures: %v", a)
	}
	fails := 0
	for _, f := range a {
		if f {
			fails++
		}
	}
	if fails < 8 || fails > 32 {
		t.Errorf("%d of 40 calls failed at rate 0.5", fails)
	}

	t.Run("match and after apply", func(t *testing.T) {
		v, conn := connect(t, Options{})
		enable(t, conn)
		v.SetFaults(Faults{Rate: 1, Match: MessageNamed("nat44_add_del_identity_mapping"), AfterApply: true, Retval: api.SYSCALL_ERROR_1})
		req := static("10.96.0.1", 80, "10.1.1.2", true, nat_types.NAT_IS_OUT2IN_ONLY)
		if rv := call(t, conn, req, replyFor(req)); rv != 0 {
			t.Errorf("unmatched request failed: %v", rv)
		}
		id := identity("10.0.0.1", 0, true)
		if rv := call(t, conn, id, replyFor(id)); rv != api.SYSCALL_ERROR_1 {
			t.Errorf("matched request answered %v", rv)
		}
		if len(v.Snapshot().Identities) != 1 {
			t.Errorf("after-apply fault did not apply the request")
		}
		// Reads never fail by injection.
		dump(t, conn, &nat44_ed.Nat44IdentityMappingDump{})
		v.SetFaults(Faults{})
		if rv := call(t, conn, id, replyFor(id)); rv != api.VALUE_EXIST {
			t.Errorf("after clearing faults: %v", rv)
		}
	})
}

func TestRestart(t *testing.T) {
	v := New(Options{})
	conn, err := core.Connect(v)
	if err != nil {
		t.Fatal(err)
	}
	enable(t, conn)
	pid := v.PID()
	v.Restart()
	if v.PID() == pid {
		t.Errorf("restart kept process ID %d", pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = conn.Invoke(ctx, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	if !errors.Is(err, ErrConnectionReset) {
		t.Errorf("call after restart: %v, want %v", err, ErrConnectionReset)
	}
	conn.Disconnect()
	conn, err = core.Connect(v)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	defer conn.Disconnect()
	r := &memclnt.ControlPingReply{}
	call(t, conn, &memclnt.ControlPing{}, r)
	if r.VpePID != v.PID() {
		t.Errorf("control_ping pid %d, want %d", r.VpePID, v.PID())
	}
	if g := v.Snapshot().Global; g.SessionLimit != 0 {
		t.Errorf("NAT44 still enabled after restart: %+v", g)
	}
}

func TestWithoutMessage(t *testing.T) {
	v := New(Options{Without: []string{"nat44_lb_static_mapping_add_del_local"}})
	m := &nat44_ed.Nat44LbStaticMappingAddDelLocal{}
	_, err := v.GetMsgID(m.GetMessageName(), m.GetCrcString())
	var unknown *adapter.UnknownMsgError
	if !errors.As(err, &unknown) || unknown.MsgName != m.GetMessageName() {
		t.Errorf("GetMsgID of a removed message: %v", err)
	}
	ok := &nat44_ed.Nat44LbStaticMappingDump{}
	if _, err := v.GetMsgID(ok.GetMessageName(), ok.GetCrcString()); err != nil {
		t.Errorf("GetMsgID of a present message: %v", err)
	}
	if _, err := v.GetMsgID(ok.GetMessageName(), "deadbeef"); err == nil {
		t.Errorf("GetMsgID accepted a wrong CRC")
	}
}

func TestCountersAndAck(t *testing.T) {
	var acks []string
	v, conn := connect(t, Options{OnAck: func(msg string, at time.Time) {
		if at.IsZero() {
			t.Errorf("zero ack time")
		}
		acks = append(acks, msg)
	}})
	if !v.LastAck().IsZero() {
		t.Errorf("ack before any write")
	}
	enable(t, conn)
	call(t, conn, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	dump(t, conn, &nat44_ed.Nat44StaticMappingDump{})
	if v.Writes() != 1 || v.Calls("nat44_ed_plugin_enable_disable") != 1 || v.Calls("control_ping") != 2 {
		t.Errorf("counts %v, writes %d", v.CallCounts(), v.Writes())
	}
	if !reflect.DeepEqual(acks, []string{"nat44_ed_plugin_enable_disable"}) || v.LastAck().IsZero() {
		t.Errorf("acks %v, last %v", acks, v.LastAck())
	}
	v.ResetCalls()
	if len(v.CallCounts()) != 0 {
		t.Errorf("counts after reset: %v", v.CallCounts())
	}
}

func TestInterfaces(t *testing.T) {
	v := New(Options{})
	if _, err := v.AddInterface("tap1", "default/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.AddInterface("tap1", ""); err == nil {
		t.Errorf("duplicate interface accepted")
	}
	if _, err := v.AddInterface("", ""); err == nil {
		t.Errorf("empty name accepted")
	}
	if err := v.DelInterface("local0"); err == nil {
		t.Errorf("local0 deleted")
	}
	if err := v.DelInterface("tap1"); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := v.DelInterface("tap1"); err == nil {
		t.Errorf("deleted twice")
	}
	if got := v.Interfaces(); len(got) != 1 || got[0].Name != "local0" {
		t.Errorf("interfaces %v", got)
	}
}

// TestDelInterfaceDropsFeatures: deleting an interface drops its NAT44
// features, as VPP does.
func TestDelInterfaceDropsFeatures(t *testing.T) {
	v, conn := connect(t, Options{})
	idx, _ := v.AddInterface("tap1", "default/web")
	enable(t, conn)
	if rv := call(t, conn, feature(idx, true, true), replyFor(feature(idx, true, true))); rv != 0 {
		t.Fatal(rv)
	}
	if got := v.Snapshot().Interfaces; got["tap1"] != FeatureIn {
		t.Fatalf("features %v", got)
	}
	if err := v.DelInterface("tap1"); err != nil {
		t.Fatal(err)
	}
	if got := v.Snapshot().Interfaces; len(got) != 0 {
		t.Errorf("features after delete: %v", got)
	}
	if rv := call(t, conn, feature(idx, true, true), replyFor(feature(idx, true, true))); rv != api.INVALID_SW_IF_INDEX {
		t.Errorf("feature on a deleted interface: %v", rv)
	}
}

// TestWithoutACLPlugin: a VPP that does not load acl_plugin.so lacks the
// ACL messages in its message table (the other IDs as with it); restarted
// after SetACLPlugin(true) it has them.
func TestWithoutACLPlugin(t *testing.T) {
	with, v := New(Options{}), New(Options{NoACLPlugin: true})
	aclMsgs := []api.Message{&acl.ACLAddReplace{}, &acl.ACLDump{}, &acl.ACLDetails{}, &acl.ACLInterfaceSetACLList{}}
	known := func(v *VPP, m api.Message) bool {
		_, err := v.GetMsgID(m.GetMessageName(), m.GetCrcString())
		return err == nil
	}
	for _, m := range aclMsgs {
		if known(v, m) || !known(with, m) {
			t.Errorf("%s: known without the plugin %v, with it %v", m.GetMessageName(), known(v, m), known(with, m))
		}
	}
	other := &nat44_ed.Nat44LbStaticMappingDump{}
	a, errA := v.GetMsgID(other.GetMessageName(), other.GetCrcString())
	b, errB := with.GetMsgID(other.GetMessageName(), other.GetCrcString())
	if errA != nil || errB != nil || a != b {
		t.Errorf("%s: ID %d (%v) without the plugin, %d (%v) with it", other.GetMessageName(), a, errA, b, errB)
	}
	v.Restart()
	if known(v, aclMsgs[0]) {
		t.Error("a restart loaded the plugin the startup configuration does not name")
	}
	v.SetACLPlugin(true)
	v.Restart()
	for _, m := range aclMsgs {
		if !known(v, m) {
			t.Errorf("%s unknown after a restart with the plugin", m.GetMessageName())
		}
	}
}
