package sim

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	featureapi "go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
)

const anyIf = ^interface_types.InterfaceIndex(0)

// cep is a cnat endpoint "ip:port" (or "ip") with no interface.
func cep(s string) cnat.CnatEndpoint {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		a = netip.AddrPortFrom(netip.MustParseAddr(s), 0)
	}
	return cnat.CnatEndpoint{Addr: toAnyAddr(a.Addr()), SwIfIndex: anyIf, Port: a.Port()}
}

// pfxOf is a binapi prefix as written (not masked).
func pfxOf(s string) ip_types.Prefix {
	p := netip.MustParsePrefix(s)
	return ip_types.Prefix{Address: toAnyAddr(p.Addr()), Len: uint8(p.Bits())}
}

// ctr builds a TCP cnat_translation_update vip -> backends (paths with
// no source), as the renderer sends it.
func ctr(vip string, backends ...string) *cnat.CnatTranslationUpdate {
	t := cnat.CnatTranslation{Vip: cep(vip), IPProto: ip_types.IP_API_PROTO_TCP}
	src := "0.0.0.0"
	if netip.MustParseAddrPort(vip).Addr().Is6() {
		src = "::"
	}
	for _, b := range backends {
		t.Paths = append(t.Paths, cnat.CnatEndpointTuple{DstEp: cep(b), SrcEp: cep(src)})
	}
	return &cnat.CnatTranslationUpdate{Translation: t}
}

// with modifies a translation update.
func with(u *cnat.CnatTranslationUpdate, f func(t *cnat.CnatTranslation)) *cnat.CnatTranslationUpdate {
	f(&u.Translation)
	return u
}

// update sends a translation update that must succeed and returns its id.
func update(t *testing.T, conn *core.Connection, u *cnat.CnatTranslationUpdate) uint32 {
	t.Helper()
	r := &cnat.CnatTranslationUpdateReply{}
	if rv := call(t, conn, u, r); rv != 0 {
		t.Fatalf("cnat_translation_update %v: %v", u.Translation.Vip, rv)
	}
	return r.ID
}

func del(t *testing.T, conn *core.Connection, id uint32) api.VPPApiError {
	t.Helper()
	return call(t, conn, &cnat.CnatTranslationDel{ID: id}, &cnat.CnatTranslationDelReply{})
}

// cnatVPP is a simulated VPP with the corpus's interfaces.
func cnatVPP(t *testing.T, opts Options) (*VPP, *core.Connection) {
	t.Helper()
	v, conn := connect(t, opts)
	v.CreateTable(1) // the recording's startup configuration (its VRF 1)
	for _, s := range corpusInterfaces {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	return v, conn
}

func TestCnatTranslationRules(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	a := update(t, conn, ctr("10.96.0.1:80", "10.1.1.11:8080", "10.1.1.12:8080"))
	b := update(t, conn, ctr("10.96.0.2:80", "10.1.1.11:8080"))
	c := update(t, conn, ctr("10.96.0.3:80", "10.1.1.11:8080"))
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("ids %d %d %d, want pool indexes 0 1 2", a, b, c)
	}
	// The key is (VIP, port, protocol): UDP and another port are others.
	udp := update(t, conn, with(ctr("10.96.0.1:80", "10.1.1.13:8080"), func(t *cnat.CnatTranslation) { t.IPProto = ip_types.IP_API_PROTO_UDP }))
	port := update(t, conn, ctr("10.96.0.1:81", "10.1.1.13:8080"))
	if udp != 3 || port != 4 {
		t.Fatalf("UDP twin id %d, other port id %d: want new translations 3 and 4", udp, port)
	}
	// An update on a key keeps the id, replaces the paths, overwrites
	// the flags and is_real_ip, ignores lb_type and flow_hash_config.
	again := update(t, conn, with(ctr("10.96.0.1:80", "10.1.1.13:8080"), func(t *cnat.CnatTranslation) {
		t.LbType, t.FlowHashConfig, t.Flags, t.IsRealIP = cnat.CNAT_LB_TYPE_MAGLEV, 1, 5, 1
	}))
	if again != a {
		t.Fatalf("update on an existing key got id %d, want %d", again, a)
	}
	got := v.CnatTranslations()[0]
	want := CnatTranslation{ID: a, VIP: ap("10.96.0.1:80"), Proto: TCP, Flags: 5, IsRealIP: true,
		Paths: []netip.AddrPort{ap("10.1.1.13:8080")}, PathSrcs: []netip.AddrPort{ap("0.0.0.0:0")}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after update:\n got %+v\nwant %+v", got, want)
	}
	// Ids are reused last-freed-first; a missing id -> -6.
	if rv := del(t, conn, b); rv != 0 {
		t.Fatalf("delete %d: %v", b, rv)
	}
	if rv := del(t, conn, c); rv != 0 {
		t.Fatalf("delete %d: %v", c, rv)
	}
	if rv := del(t, conn, c); rv != api.NO_SUCH_ENTRY {
		t.Errorf("delete of a deleted id: %v, want -6", rv)
	}
	if rv := del(t, conn, 999); rv != api.NO_SUCH_ENTRY {
		t.Errorf("delete of id 999: %v, want -6", rv)
	}
	if id := update(t, conn, ctr("10.96.0.9:80", "10.1.1.11:8080")); id != c {
		t.Errorf("new translation after deleting %d then %d got id %d, want %d (last freed first)", b, c, id, c)
	}
	if id := update(t, conn, ctr("10.96.0.8:80", "10.1.1.11:8080")); id != b {
		t.Errorf("next new translation got id %d, want %d", id, b)
	}
	// The dump reads back VIP, port, proto, id, lb_type and the paths
	// (resolved: flags 1), never flags, is_real_ip, flow_hash_config.
	for _, m := range dump(t, conn, &cnat.CnatTranslationDump{}) {
		d := m.(*cnat.CnatTranslationDetails).Translation
		if d.Flags != 0 || d.IsRealIP != 0 || d.FlowHashConfig != 0 {
			t.Errorf("dump of %d reads back flags %d is_real_ip %d fhc %d", d.ID, d.Flags, d.IsRealIP, d.FlowHashConfig)
		}
		for _, p := range d.Paths {
			if p.Flags != 1 {
				t.Errorf("dump of %d: path flags %d, want 1 (resolved)", d.ID, p.Flags)
			}
		}
	}
}

func TestCnatCreateSetsLBAndFlowHash(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	id := update(t, conn, with(ctr("10.96.0.1:80", "10.1.1.11:8080"), func(t *cnat.CnatTranslation) {
		t.LbType, t.FlowHashConfig = cnat.CNAT_LB_TYPE_MAGLEV, 1
	}))
	update(t, conn, ctr("10.96.0.1:80", "10.1.1.12:8080")) // lb 0, fhc 0: ignored
	got := v.CnatTranslations()[0]
	if got.ID != id || got.LBType != 1 || got.FlowHashConfig != 1 {
		t.Errorf("after an update with lb 0 fhc 0: %+v, want lb 1 fhc 1 (set at creation)", got)
	}
	d := dump(t, conn, &cnat.CnatTranslationDump{})[0].(*cnat.CnatTranslationDetails).Translation
	if d.LbType != cnat.CNAT_LB_TYPE_MAGLEV {
		t.Errorf("dump lb_type %d, want 1", d.LbType)
	}
	// Delete + re-add changes them.
	if rv := del(t, conn, id); rv != 0 {
		t.Fatal(rv)
	}
	update(t, conn, ctr("10.96.0.1:80", "10.1.1.12:8080"))
	if got := v.CnatTranslations()[0]; got.LBType != 0 || got.FlowHashConfig != 0 {
		t.Errorf("after delete + re-add: %+v, want lb 0 fhc 0", got)
	}
}

func TestCnatPathsAndFamilies(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.1.%d.%d:8080", 3+i/250, 1+i%250)
		}
		return out
	}
	for i, n := range []int{1, 256, 1000, 2000} {
		for lb := range 2 {
			vip := fmt.Sprintf("10.96.9.%d:80", 10*i+lb)
			update(t, conn, with(ctr(vip, many(n)...), func(t *cnat.CnatTranslation) { t.LbType = cnat.CnatLbType(lb) }))
			res := v.CnatTrace(Packet{Src: netip.MustParseAddr("10.1.1.20"), Dst: ap(vip).Addr(), DstPort: 80, Proto: TCP})
			if res.Verdict != Translated || len(res.Backends) != n {
				t.Errorf("%d paths, lb %d: %v with %d backends", n, lb, res.Verdict, len(res.Backends))
			}
		}
	}
	if v.Crashes() != 0 {
		t.Fatalf("crashed: %s", v.LastCrash())
	}
	// IPv6 VIP and path: the dump says if_af 1.
	update(t, conn, ctr("[fd00:96::10]:80", "[fd00:1::11]:8080"))
	var v6 *cnat.CnatTranslation
	for _, m := range dump(t, conn, &cnat.CnatTranslationDump{}) {
		if d := m.(*cnat.CnatTranslationDetails).Translation; d.Vip.IfAf == ip_types.ADDRESS_IP6 {
			v6 = &d
		}
	}
	if v6 == nil || v6.Vip.Addr.String() != "fd00:96::10" || v6.Paths[0].DstEp.IfAf != ip_types.ADDRESS_IP6 ||
		v6.Paths[0].DstEp.Addr.String() != "fd00:1::11" || v6.Paths[0].Flags != 1 {
		t.Errorf("IPv6 translation dumped as %+v", v6)
	}
	// Interface paths: resolved from loop0 (sw_if_index 1); local0 has
	// no address: unresolved, flags 0, no backend (dropped).
	ifPath := func(vip string, idx interface_types.InterfaceIndex) *cnat.CnatTranslationUpdate {
		u := ctr(vip, "0.0.0.0:8080")
		u.Translation.Paths[0].DstEp.SwIfIndex = idx
		return u
	}
	update(t, conn, ifPath("10.96.8.1:80", 1))
	update(t, conn, ifPath("10.96.8.2:80", 0))
	for _, m := range dump(t, conn, &cnat.CnatTranslationDump{}) {
		d := m.(*cnat.CnatTranslationDetails).Translation
		switch d.Vip.Addr.String() {
		case "10.96.8.1":
			if p := d.Paths[0]; p.DstEp.Addr.String() != "10.1.1.1" || p.DstEp.SwIfIndex != 1 || p.Flags != 1 {
				t.Errorf("loop0 path dumped as %+v", p)
			}
		case "10.96.8.2":
			if p := d.Paths[0]; p.DstEp.Addr.String() != "0.0.0.0" || p.DstEp.SwIfIndex != 0 || p.Flags != 0 {
				t.Errorf("local0 path dumped as %+v", p)
			}
		}
	}
	pkt := Packet{Src: netip.MustParseAddr("10.1.1.20"), Dst: netip.MustParseAddr("10.96.8.2"), DstPort: 80, Proto: TCP}
	if res := v.CnatTrace(pkt); res.Verdict != Dropped {
		t.Errorf("unresolved-only translation: %v (%s), want dropped", res.Verdict, res.Reason)
	}
	if _, err := v.OpenCnatSession(pkt, 1000); err == nil {
		t.Error("a session opened through a translation with no resolved path")
	}
	// Path flags: 2 reads back 3.
	update(t, conn, with(ctr("10.96.8.3:80", "10.1.1.12:8080"), func(t *cnat.CnatTranslation) { t.Paths[0].Flags = 2 }))
	for _, m := range dump(t, conn, &cnat.CnatTranslationDump{}) {
		if d := m.(*cnat.CnatTranslationDetails).Translation; d.Vip.Addr.String() == "10.96.8.3" && d.Paths[0].Flags != 3 {
			t.Errorf("path flags 2 read back as %d, want 3", d.Paths[0].Flags)
		}
	}
}

func TestCnatZeroPathsCrash(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	update(t, conn, ctr("10.96.0.1:80", "10.1.1.11:8080"))
	s, err := v.OpenCnatSession(Packet{Src: netip.MustParseAddr("10.1.1.20"), Dst: netip.MustParseAddr("10.96.0.1"),
		DstPort: 80, Proto: TCP, Ingress: "host-vccl"}, 40000)
	if err != nil {
		t.Fatal(err)
	}
	pid := v.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = conn.Invoke(ctx, ctr("10.96.0.2:80"), &cnat.CnatTranslationUpdateReply{})
	if err == nil {
		t.Fatal("cnat_translation_update with 0 paths was answered")
	}
	if v.Crashes() != 1 || v.PID() == pid {
		t.Fatalf("crashes %d, pid %d -> %d: want a crash", v.Crashes(), pid, v.PID())
	}
	if n := len(v.CnatTranslations()); n != 0 {
		t.Errorf("%d translations survive the crash", n)
	}
	if v.CnatSessionAlive(s.ID) || v.CnatSessionsLost() != 1 || v.CnatSessionsCut() != 0 {
		t.Errorf("after the crash: alive %v, lost %d, cut %d; want lost 1, cut 0",
			v.CnatSessionAlive(s.ID), v.CnatSessionsLost(), v.CnatSessionsCut())
	}
}

func TestCnatSnat(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	get := func() *cnat.CnatGetSnatAddressesReply {
		r := &cnat.CnatGetSnatAddressesReply{}
		if rv := call(t, conn, &cnat.CnatGetSnatAddresses{}, r); rv != 0 {
			t.Fatal(rv)
		}
		return r
	}
	if r := get(); r.SnatIP4.String() != "0.0.0.0" || r.SnatIP6.String() != "::" || r.SwIfIndex != 0 {
		t.Errorf("initial SNAT addresses %+v", r)
	}
	set := func(ip4, ip6 string, idx interface_types.InterfaceIndex) {
		send(t, v, conn, &cnat.CnatSetSnatAddresses{
			SnatIP4: netip.MustParseAddr(ip4).As4(), SnatIP6: netip.MustParseAddr(ip6).As16(), SwIfIndex: idx})
	}
	set("192.168.16.1", "fd00::1", anyIf)
	if r := get(); r.SnatIP4.String() != "192.168.16.1" || r.SnatIP6.String() != "fd00::1" || r.SwIfIndex != anyIf {
		t.Errorf("SNAT addresses %+v", r)
	}
	set("0.0.0.0", "::", 2) // host-vcup: its address
	if r := get(); r.SnatIP4.String() != "192.168.16.1" || r.SnatIP6.String() != "::" || r.SwIfIndex != 2 {
		t.Errorf("interface-based SNAT addresses %+v", r)
	}
	set("0.0.0.0", "::", 999)
	if r := get(); r.SnatIP4.String() != "0.0.0.0" || r.SwIfIndex != 999 {
		t.Errorf("unknown interface SNAT addresses %+v", r)
	}
	set("192.168.16.1", "::", anyIf)

	for _, c := range []struct {
		policy cnat.CnatSnatPolicies
		rv     api.VPPApiError
		want   CnatSnatPolicy
	}{{1, 0, CnatPolicyIfPfx}, {2, 0, CnatPolicyK8s}, {3, 1, CnatPolicyK8s}, {7, 1, CnatPolicyK8s}, {0, 0, CnatPolicyNone}} {
		if rv := call(t, conn, &cnat.CnatSetSnatPolicy{Policy: c.policy}, &cnat.CnatSetSnatPolicyReply{}); rv != c.rv {
			t.Errorf("policy %d: %v, want %v", c.policy, rv, c.rv)
		}
		if got := v.CnatSnatState().Policy; got != c.want {
			t.Errorf("after policy %d: policy %d, want %d", c.policy, got, c.want)
		}
	}

	ifc := func(idx interface_types.InterfaceIndex, add uint8, table cnat.CnatSnatPolicyTable) api.VPPApiError {
		return call(t, conn, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: idx, IsAdd: add, Table: table}, &cnat.CnatSnatPolicyAddDelIfReply{})
	}
	for _, c := range []struct {
		idx   interface_types.InterfaceIndex
		add   uint8
		table cnat.CnatSnatPolicyTable
		rv    api.VPPApiError
	}{
		{3, 1, 0, 0}, {3, 1, 1, 0}, {3, 1, 2, 0}, {3, 1, 3, 0}, {3, 1, 4, api.INVALID_VALUE}, {3, 1, 9, api.INVALID_VALUE},
		{3, 1, 0, 0}, {999, 1, 0, api.INVALID_SW_IF_INDEX}, {4, 0, 0, 0}, {3, 0, 0, 0},
	} {
		if rv := ifc(c.idx, c.add, c.table); rv != c.rv {
			t.Errorf("add_del_if %+v: %v, want %v", c, rv, c.rv)
		}
	}
	pfx := func(p string, add uint8) api.VPPApiError {
		return call(t, conn, &cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: add, Prefix: pfxOf(p)},
			&cnat.CnatSnatPolicyAddDelExcludePfxReply{})
	}
	for _, c := range []struct {
		p   string
		add uint8
		rv  api.VPPApiError
	}{{"10.1.0.0/16", 1, 0}, {"10.1.0.0/16", 1, 0}, {"10.1.2.3/16", 1, 0}, {"fd00::/8", 1, 0}, {"10.2.0.0/16", 0, 1}, {"10.1.0.0/16", 0, 0}} {
		if rv := pfx(c.p, c.add); rv != c.rv {
			t.Errorf("exclude %s add %d: %v, want %v", c.p, c.add, rv, c.rv)
		}
	}
	s := v.CnatSnatState()
	want := CnatSnat{
		IP4: netip.MustParseAddr("192.168.16.1"), IP6: netip.IPv6Unspecified(), SwIfIndex: noIndex, Policy: CnatPolicyNone,
		IncludeV6: []string{"host-vcw1"}, Pod: []string{"host-vcw1"}, Host: []string{"host-vcw1"},
		Exclude: []netip.Prefix{netip.MustParsePrefix("fd00::/8")},
	}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("SNAT state\n got %+v\nwant %+v", s, want)
	}
}

func TestCnatFeatures(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	fe := func(idx interface_types.InterfaceIndex, enable bool, arc, node string) api.VPPApiError {
		return call(t, conn, &featureapi.FeatureEnableDisable{SwIfIndex: idx, Enable: enable, ArcName: arc, FeatureName: node},
			&featureapi.FeatureEnableDisableReply{})
	}
	steps := []struct {
		idx    interface_types.InterfaceIndex
		enable bool
		arc    string
		node   string
		rv     api.VPPApiError
		count  int // of node on host-vcw1 afterwards
	}{
		{3, true, "ip4-unicast", "cnat-input-ip4", 0, 1},
		{3, true, "ip4-unicast", "cnat-input-ip4", 0, 2}, // not idempotent
		{3, true, "ip4-output", "cnat-output-ip4", 0, 1},
		{3, true, "ip6-unicast", "cnat-input-ip6", 0, 1},
		{3, true, "ip6-output", "cnat-output-ip6", 0, 1},
		{3, true, "ip4-unicast", "cnat-nonexistent", api.INVALID_VALUE, 0},
		{3, true, "ip4-output", "cnat-input-ip4", api.INVALID_VALUE, 2},
		{999, true, "ip4-unicast", "cnat-input-ip4", api.INVALID_SW_IF_INDEX, 2},
		{3, false, "ip4-unicast", "cnat-input-ip4", 0, 1},
		{3, false, "ip4-unicast", "cnat-input-ip4", 0, 0},
		{3, false, "ip4-unicast", "cnat-input-ip4", 0, 0}, // a third disable: 0
		{4, false, "ip4-unicast", "cnat-input-ip4", 0, 0}, // never enabled
	}
	for i, s := range steps {
		if rv := fe(s.idx, s.enable, s.arc, s.node); rv != s.rv {
			t.Errorf("step %d %+v: %v, want %v", i, s, rv, s.rv)
		}
		if got := v.CnatFeatureCount("host-vcw1", s.node); got != s.count {
			t.Errorf("step %d: %s on host-vcw1 %d times, want %d", i, s.node, got, s.count)
		}
	}
	if n := v.CnatFeatureCount("host-vcw2", "cnat-input-ip4"); n != 0 {
		t.Errorf("host-vcw2: %d", n)
	}
	// Deleting an interface drops its cnat nodes and policy tables; the
	// interface that gets its index starts without them.
	send(t, v, conn, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 8, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	if rv := fe(8, true, "ip4-unicast", "cnat-input-ip4"); rv != 0 {
		t.Fatal(rv)
	}
	if err := v.DelInterface("host-vcl1"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.AddInterface("host-new", "default/new"); err != nil {
		t.Fatal(err)
	}
	if n, pod := v.CnatFeatureCount("host-new", "cnat-input-ip4"), v.CnatSnatState().Pod; n != 0 || len(pod) != 0 {
		t.Errorf("the interface re-using index 8 has cnat-input-ip4 %d times, POD table %v", n, pod)
	}
	// VPP 25.02 has no feature_is_enabled: nothing reads features back.
	if _, err := v.GetMsgID("feature_is_enabled", (&featureapi.FeatureIsEnabled{}).GetCrcString()); err == nil {
		t.Error("feature_is_enabled is in the message table")
	}
	v.Restart()
	if n := v.CnatFeatureCount("host-vcw1", "cnat-output-ip4"); n != 0 {
		t.Errorf("after a restart cnat-output-ip4 is still on host-vcw1 (%d)", n)
	}
}
