package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

const anyVRF = ^uint32(0)

// fixture is a complete NAT44 configuration and its expected dump.
type fixture struct {
	global     nat44.Global
	pool       []nat44.PoolAddress
	features   map[string]nat44.Features
	mappings   []*nat44.Mapping
	identities []*nat44.Identity
}

func webLB() *nat44.Mapping {
	return &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.10"), Port: 80, Proto: 6},
		Locals: []nat44.Local{
			{IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 2},
			{IP: nat44.MustParseIPv4("10.1.1.3"), Port: 8080, VRF: 1, Probability: 2},
			{IP: nat44.MustParseIPv4("10.1.2.2"), Port: 8080, VRF: 1, Probability: 1},
		},
		TwiceNAT: nat44.TwiceNATSelf,
		Affinity: 10800,
		Tag:      "contiv:default/web",
	}
}

func dnsStatic() *nat44.Mapping {
	return &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.11"), Port: 53, Proto: 17},
		Locals:     []nat44.Local{{IP: nat44.MustParseIPv4("10.1.1.4"), Port: 5353, VRF: 1, Probability: 1}},
		Tag:        "contiv:kube-system/dns",
	}
}

func nodePortLB() *nat44.Mapping {
	return &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("192.168.16.1"), Port: 30080, Proto: 6},
		Locals: []nat44.Local{
			{IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 1},
			{IP: nat44.MustParseIPv4("192.168.16.2"), Port: 8080, VRF: 0, Probability: 1},
		},
		TwiceNAT: nat44.TwiceNATOn,
		Tag:      "contiv:default/web",
	}
}

func fullFixture() fixture {
	return fixture{
		global: nat44.Global{SessionLimit: 2000, Forwarding: true,
			Timeouts: nat44.Timeouts{UDP: 100, TCPEstablished: 200, TCPTransitory: 30, ICMP: 10}},
		pool: []nat44.PoolAddress{
			{IP: ip("10.1.1.254"), VRF: anyVRF, TwiceNAT: true},
			{IP: ip("192.168.16.1"), VRF: 0},
		},
		features: map[string]nat44.Features{
			"GigabitEthernet0/8/0": nat44.FeatureOutput,
			"tap1":                 nat44.FeatureIn | nat44.FeatureOut,
			"tap2":                 nat44.FeatureIn,
			"vxlanBVI":             nat44.FeatureOut,
		},
		mappings: []*nat44.Mapping{webLB(), dnsStatic(), nodePortLB()},
		identities: []*nat44.Identity{
			{IdentityKey: nat44.IdentityKey{IP: ip("192.168.16.1"), VRF: 0}, Tag: "contiv:snat"},
			{IdentityKey: nat44.IdentityKey{IP: ip("192.168.16.1"), VRF: 1}, Tag: "contiv:snat"},
			{IdentityKey: nat44.IdentityKey{IP: ip("192.168.16.1"), Port: 4789, Proto: 17, VRF: 0}, Tag: "contiv:snat"},
		},
	}
}

// want is the state a dump must return for the fixture: a static
// mapping's local carries no probability.
func (f fixture) want() *nat44.State {
	st := &nat44.State{
		Global:     f.global,
		Pool:       f.pool,
		Interfaces: f.features,
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity),
	}
	for _, m := range f.mappings {
		c := *m
		c.Locals = append([]nat44.Local(nil), m.Locals...)
		if len(c.Locals) == 1 {
			c.Locals[0].Probability = 0
			c.Affinity = 0
		}
		st.Mappings[m.MappingKey] = &c
	}
	for _, id := range f.identities {
		st.Identities[id.IdentityKey] = id
	}
	return st
}

// apply programs the fixture through the client.
func (e *env) apply(t testing.TB, f fixture) {
	t.Helper()
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, f.global); err != nil {
		t.Fatalf("SetGlobal: %v", err)
	}
	for _, p := range f.pool {
		if err := e.nat.AddDelPoolAddress(ctx, p, true); err != nil {
			t.Fatalf("pool: %v", err)
		}
	}
	for name, feat := range f.features {
		if err := setFeatures(ctx, e.nat, name, 0, feat); err != nil {
			t.Fatalf("features: %v", err)
		}
	}
	for _, m := range f.mappings {
		if err := e.nat.AddDelMapping(ctx, m, true); err != nil {
			t.Fatalf("mapping: %v", err)
		}
	}
	for _, id := range f.identities {
		if err := e.nat.AddDelIdentity(ctx, id, true); err != nil {
			t.Fatalf("identity: %v", err)
		}
	}
}

// check compares the client's dump and the simulator's snapshot with want.
func (e *env) check(t *testing.T, want *nat44.State) {
	t.Helper()
	got, err := e.nat.Dump(context.Background())
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	// VPP 25.02 keeps a load-balanced mapping's affinity but never dumps it.
	dumped := *want
	dumped.Mappings = make(map[nat44.MappingKey]*nat44.Mapping, len(want.Mappings))
	for k, m := range want.Mappings {
		c := *m
		c.Affinity = 0
		dumped.Mappings[k] = &c
	}
	if !reflect.DeepEqual(got, &dumped) {
		t.Errorf("dump differs\n got %s\nwant %s", show(got), show(&dumped))
	}
	if snap := simState(e.vpp); !reflect.DeepEqual(snap, want) {
		t.Errorf("simulator state differs\n got %s\nwant %s", show(snap), show(want))
	}
}

func show(st *nat44.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global=%+v pool=%v interfaces=%v", st.Global, st.Pool, st.Interfaces)
	for k, m := range st.Mappings {
		fmt.Fprintf(&b, "\n  %v -> %+v", k, *m)
	}
	for k, id := range st.Identities {
		fmt.Fprintf(&b, "\n  identity %v tag %q", k, id.Tag)
	}
	return b.String()
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := setup(t, sim.Options{})
	for _, name := range []string{"GigabitEthernet0/8/0", "tap1", "tap2", "vxlanBVI"} {
		if _, err := e.vpp.AddInterface(name, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.connected(t)
	return e
}

// TestRoundTrip programs every kind of object through the binary API and
// reads it back with Dump, then changes each in place.
func TestRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := fullFixture()
	e.apply(t, f)
	e.check(t, f.want())

	// Change everything once.
	added := nat44.Local{IP: nat44.MustParseIPv4("10.1.3.2"), Port: 8080, VRF: 1, Probability: 1}
	removed := webLB().Locals[0]
	steps := []error{
		e.nat.AddDelLBLocal(ctx, webLB().MappingKey, added, true),
		e.nat.AddDelLBLocal(ctx, webLB().MappingKey, removed, false),
		setFeatures(ctx, e.nat, "tap1", nat44.FeatureIn|nat44.FeatureOut, nat44.FeatureOut),
		setFeatures(ctx, e.nat, "tap2", nat44.FeatureIn, 0),
		setFeatures(ctx, e.nat, "GigabitEthernet0/8/0", nat44.FeatureOutput, nat44.FeatureOut),
		e.nat.AddDelMapping(ctx, dnsStatic(), false),
		e.nat.AddDelMapping(ctx, nodePortLB(), false),
		e.nat.AddDelIdentity(ctx, f.identities[1], false),
		e.nat.AddDelPoolAddress(ctx, f.pool[1], false),
		e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 2000, Forwarding: false, Timeouts: nat44.Timeouts{UDP: 300}}),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	web := webLB()
	web.Locals = []nat44.Local{web.Locals[1], web.Locals[2], added}
	want := fixture{
		global:     nat44.Global{SessionLimit: 2000, Timeouts: nat44.Timeouts{UDP: 300, TCPEstablished: 200, TCPTransitory: 30, ICMP: 10}},
		pool:       f.pool[:1],
		features:   map[string]nat44.Features{"GigabitEthernet0/8/0": nat44.FeatureOut, "tap1": nat44.FeatureOut, "vxlanBVI": nat44.FeatureOut},
		mappings:   []*nat44.Mapping{web},
		identities: []*nat44.Identity{f.identities[0], f.identities[2]},
	}
	e.check(t, want.want())
}

// TestOneCallPerChange asserts that each change costs exactly one
// state-changing binary-API call.
func TestOneCallPerChange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.apply(t, fullFixture())
	tests := []struct {
		msg string
		do  func() error
	}{
		{"nat44_lb_static_mapping_add_del_local", func() error {
			return e.nat.AddDelLBLocal(ctx, webLB().MappingKey, nat44.Local{IP: nat44.MustParseIPv4("10.1.9.9"), Port: 8080, VRF: 1, Probability: 1}, true)
		}},
		{"nat44_add_del_lb_static_mapping", func() error { return e.nat.AddDelMapping(ctx, nodePortLB(), false) }},
		{"nat44_add_del_static_mapping_v2", func() error { return e.nat.AddDelMapping(ctx, dnsStatic(), false) }},
		{"nat44_add_del_identity_mapping", func() error { return e.nat.AddDelIdentity(ctx, fullFixture().identities[2], false) }},
		{"nat44_add_del_address_range", func() error {
			return e.nat.AddDelPoolAddress(ctx, nat44.PoolAddress{IP: ip("192.168.16.9")}, true)
		}},
		{"nat44_interface_add_del_feature", func() error {
			return setFeatures(ctx, e.nat, "tap2", nat44.FeatureIn, nat44.FeatureIn|nat44.FeatureOut)
		}},
		{"nat44_ed_add_del_output_interface", func() error {
			return setFeatures(ctx, e.nat, "GigabitEthernet0/8/0", nat44.FeatureOutput, 0)
		}},
		{"nat44_forwarding_enable_disable", func() error {
			return e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 2000, Forwarding: false})
		}},
	}
	for _, tc := range tests {
		e.vpp.ResetCalls()
		if err := tc.do(); err != nil {
			t.Fatalf("%s: %v", tc.msg, err)
		}
		if w, n := e.vpp.Writes(), e.vpp.Calls(tc.msg); w != 1 || n != 1 {
			t.Errorf("%s: %d writes, %d calls of it (%v)", tc.msg, w, n, e.vpp.CallCounts())
		}
	}
	// Nothing to change: no write at all.
	e.vpp.ResetCalls()
	if err := e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 2000, Timeouts: fullFixture().global.Timeouts}); err != nil {
		t.Fatal(err)
	}
	if err := setFeatures(ctx, e.nat, "tap1", nat44.FeatureIn, nat44.FeatureIn); err != nil {
		t.Fatal(err)
	}
	if _, err := e.nat.Dump(ctx); err != nil {
		t.Fatal(err)
	}
	if w := e.vpp.Writes(); w != 0 {
		t.Errorf("%d writes for no change: %v", w, e.vpp.CallCounts())
	}
}

// invalid asserts that err is VPP or the client refusing input as invalid,
// naming the object.
func wantInvalid(t *testing.T, what string, err error, names string, rv api.VPPApiError) {
	t.Helper()
	if !errors.Is(err, nat44.ErrInvalid) {
		t.Errorf("%s: %v, want ErrInvalid", what, err)
		return
	}
	if !strings.Contains(err.Error(), names) {
		t.Errorf("%s: %q does not name %q", what, err, names)
	}
	var got api.VPPApiError
	if rv != 0 && (!errors.As(err, &got) || got != rv) {
		t.Errorf("%s: VPP error %v, want %v", what, got, rv)
	}
}

// TestVPPRulesAreInvalid checks that VPP's refusals come back as
// nat44.ErrInvalid naming the object.
func TestVPPRulesAreInvalid(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.apply(t, fullFixture())
	key := webLB().MappingKey

	wantInvalid(t, "duplicate mapping", e.nat.AddDelMapping(ctx, webLB(), true), "10.96.0.10:80/TCP", api.VALUE_EXIST)
	dup := dnsStatic()
	dup.MappingKey = key
	wantInvalid(t, "static mapping on a load-balanced key", e.nat.AddDelMapping(ctx, dup, true), "10.96.0.10:80/TCP", api.VALUE_EXIST)
	// One local of probability 0 is accepted (never picked); all of them
	// would crash VPP on the first packet: the client refuses to send it.
	zero := webLB()
	zero.MappingKey.Port = 81
	zero.Locals[0].Probability = 0
	if err := e.nat.AddDelMapping(ctx, zero, true); err != nil {
		t.Errorf("a probability-0 local refused: %v", err)
	}
	for i := range zero.Locals {
		zero.Locals[i].Probability = 0
	}
	zero.MappingKey.Port = 82
	wantInvalid(t, "only probability 0", e.nat.AddDelMapping(ctx, zero, true), "10.96.0.10:82/TCP", 0)
	np := nodePortLB()
	if err := e.nat.AddDelLBLocal(ctx, np.MappingKey, np.Locals[0], false); err == nil {
		wantInvalid(t, "removing one of two locals", errors.New("succeeded"), "", 0)
	} else {
		wantInvalid(t, "removing one of two locals", err, "192.168.16.1:30080/TCP", api.UNSPECIFIED)
	}
	wantInvalid(t, "local of an unknown mapping",
		e.nat.AddDelLBLocal(ctx, nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.9.9"), Port: 80, Proto: 6}, np.Locals[0], true),
		"10.96.9.9:80/TCP", api.NO_SUCH_ENTRY)
	wantInvalid(t, "local of a static mapping",
		e.nat.AddDelLBLocal(ctx, dnsStatic().MappingKey, np.Locals[0], true), "10.96.0.11:53/UDP", api.INVALID_VALUE)
	wantInvalid(t, "delete unknown mapping",
		e.nat.AddDelMapping(ctx, &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.9.9"), Port: 80, Proto: 6}, Locals: np.Locals}, false),
		"10.96.9.9:80/TCP", api.NO_SUCH_ENTRY)
	wantInvalid(t, "identity again", e.nat.AddDelIdentity(ctx, fullFixture().identities[0], true), "192.168.16.1", api.VALUE_EXIST)
	wantInvalid(t, "pool address again", e.nat.AddDelPoolAddress(ctx, fullFixture().pool[0], true), "10.1.1.254", api.VALUE_EXIST)
	wantInvalid(t, "outside on an output interface",
		setFeatures(ctx, e.nat, "GigabitEthernet0/8/0", nat44.FeatureOutput, nat44.FeatureOutput|nat44.FeatureOut),
		"GigabitEthernet0/8/0", api.VALUE_EXIST)

	// Bad input never reaches VPP.
	e.vpp.ResetCalls()
	long := webLB()
	long.Tag = strings.Repeat("x", 64)
	port0 := webLB()
	port0.Port = 0
	sctp := webLB()
	sctp.Proto = 132
	none := webLB()
	none.Locals = nil
	for what, err := range map[string]error{
		"long tag":          e.nat.AddDelMapping(ctx, long, true),
		"port 0":            e.nat.AddDelMapping(ctx, port0, true),
		"SCTP":              e.nat.AddDelMapping(ctx, sctp, true),
		"no locals":         e.nat.AddDelMapping(ctx, none, true),
		"IPv6 pool":         e.nat.AddDelPoolAddress(ctx, nat44.PoolAddress{IP: ip("fd00::1")}, true),
		"IPv6 identity":     e.nat.AddDelIdentity(ctx, &nat44.Identity{IdentityKey: nat44.IdentityKey{IP: ip("fd00::1")}}, true),
		"unknown interface": setFeatures(ctx, e.nat, "nope", 0, nat44.FeatureIn),
	} {
		wantInvalid(t, what, err, "", 0)
	}
	if w := e.vpp.Writes(); w != 0 {
		t.Errorf("bad input made %d writes: %v", w, e.vpp.CallCounts())
	}
	// A missing interface is named as such: removing a deleted pod's
	// features is then already done.
	if err := setFeatures(ctx, e.nat, "nope", nat44.FeatureIn, 0); !errors.Is(err, nat44.ErrNoInterface) {
		t.Errorf("features of a missing interface: %v, want ErrNoInterface", err)
	}
	// An IPv4-mapped IPv6 address is IPv4.
	mapped := nat44.PoolAddress{IP: netip.AddrFrom16(ip("192.168.16.7").As16())}
	if err := e.nat.AddDelPoolAddress(ctx, mapped, true); err != nil {
		t.Errorf("IPv4-mapped pool address: %v", err)
	}
}

// TestTransientErrors checks that what is not VPP refusing input stays
// transient, and that retrying failed calls converges.
func TestTransientErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	// Before the plugin is enabled VPP answers "unsupported": transient.
	err := e.nat.AddDelMapping(ctx, webLB(), true)
	var rv api.VPPApiError
	if err == nil || errors.Is(err, nat44.ErrInvalid) || !errors.As(err, &rv) || rv != api.UNSUPPORTED {
		t.Errorf("mapping with the plugin disabled: %v", err)
	}

	// Fail 30% of the writes; retry until everything is in.
	e.vpp.SetFaults(sim.Faults{Rate: 0.3, Seed: 42})
	f := fullFixture()
	var ops []func() error
	ops = append(ops, func() error { return e.nat.SetGlobal(ctx, f.global) })
	for _, p := range f.pool {
		ops = append(ops, func() error { return e.nat.AddDelPoolAddress(ctx, p, true) })
	}
	for name, feat := range f.features {
		ops = append(ops, func() error { return setFeatures(ctx, e.nat, name, 0, feat) })
	}
	for _, m := range f.mappings {
		ops = append(ops, func() error { return e.nat.AddDelMapping(ctx, m, true) })
	}
	for _, id := range f.identities {
		ops = append(ops, func() error { return e.nat.AddDelIdentity(ctx, id, true) })
	}
	failures := 0
	for round := 0; len(ops) > 0; round++ {
		if round == 100 {
			t.Fatalf("%d operations still failing after 100 rounds", len(ops))
		}
		var again []func() error
		for _, op := range ops {
			err := op()
			if err == nil {
				continue
			}
			failures++
			if errors.Is(err, nat44.ErrInvalid) || !errors.As(err, &rv) || rv != sim.TransientRetval {
				t.Fatalf("injected fault came back as %v", err)
			}
			again = append(again, op)
		}
		ops = again
	}
	if failures == 0 {
		t.Errorf("no fault was injected")
	}
	e.vpp.SetFaults(sim.Faults{})
	e.check(t, f.want())
}

func TestSetGlobal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 5000, Forwarding: true, Timeouts: nat44.Timeouts{UDP: 120}}); err != nil {
		t.Fatal(err)
	}
	if n := e.vpp.Writes(); n != 3 {
		t.Errorf("%d writes to enable, forward and set timeouts: %v", n, e.vpp.CallCounts())
	}
	want := nat44.Global{SessionLimit: 5000, Forwarding: true, Timeouts: nat44.Timeouts{UDP: 120, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60}}
	if got := simState(e.vpp).Global; got != want {
		t.Errorf("global %+v, want %+v", got, want)
	}
	err := e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 6000, Forwarding: true})
	if !errors.Is(err, nat44.ErrInvalid) || !strings.Contains(err.Error(), "6000") {
		t.Errorf("changing the session limit: %v", err)
	}
	if got := simState(e.vpp).Global; got != want {
		t.Errorf("global changed to %+v", got)
	}
}

func TestInterfaces(t *testing.T) {
	e := setup(t, sim.Options{})
	if _, err := e.vpp.AddInterface("tap1", "default/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.vpp.AddInterface("tap9", "default/web"); err != nil {
		t.Fatal(err)
	}
	e.connected(t)
	ctx := context.Background()
	if err := e.ifaces.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if name, ok := e.ifaces.InterfaceByTag("default/web"); !ok || name != "tap1" {
		t.Errorf("by tag: %q %v", name, ok)
	}
	if _, ok := e.ifaces.InterfaceByTag("default/db"); ok {
		t.Errorf("found an unknown tag")
	}
	if i, ok := e.ifaces.ByName("tap9"); !ok || i.Index != 2 || i.Tag != "default/web" {
		t.Errorf("by name: %+v %v", i, ok)
	}
	if i, ok := e.ifaces.ByIndex(0); !ok || i.Name != "local0" {
		t.Errorf("by index: %+v %v", i, ok)
	}
	if l := e.ifaces.List(); len(l) != 3 || l[0].Name != "local0" || l[2].Name != "tap9" {
		t.Errorf("list %+v", l)
	}

	// An interface created after the last refresh is found on demand.
	if _, err := e.vpp.AddInterface("tap2", "default/db"); err != nil {
		t.Fatal(err)
	}
	if err := e.nat.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	if err := setFeatures(ctx, e.nat, "tap2", 0, nat44.FeatureIn); err != nil {
		t.Errorf("feature on a new interface: %v", err)
	}
	if name, ok := e.ifaces.InterfaceByTag("default/db"); !ok || name != "tap2" {
		t.Errorf("new interface by tag: %q %v", name, ok)
	}

	// After a reconnect the table is read again before use.
	e.vpp.Restart()
	for ev := e.events.next(t); !(ev.Kind == Connected && ev.Restarted); ev = e.events.next(t) {
	}
	e.connected(t)
	e.vpp.ResetCalls()
	if err := e.nat.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	if err := setFeatures(ctx, e.nat, "tap1", 0, nat44.FeatureOut); err != nil {
		t.Fatal(err)
	}
	if n := e.vpp.Calls("sw_interface_dump"); n != 1 {
		t.Errorf("%d interface dumps after a reconnect, want 1", n)
	}
}

// setFeatures sets an interface's features and checks the index the
// client reports against the interface table.
func setFeatures(ctx context.Context, n *NAT44, name string, old, new nat44.Features) error {
	idx, err := n.SetInterfaceFeatures(ctx, name, old, new)
	if want, ok := n.ifaces.ByName(name); err == nil && old != new && ok && idx != want.Index {
		return fmt.Errorf("SetInterfaceFeatures(%s) reported index %d, want %d", name, idx, want.Index)
	}
	return err
}
