package nat44

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

var testOwned = func(tag string) bool { return strings.HasPrefix(tag, tagPrefix) }

// lbMapping is a load-balanced (or static, with one local) mapping of
// 10.96.0.1:80/TCP with n locals 10.1.1.(10+i):8080 in VRF 2.
func lbMapping(n int) *Mapping {
	m := &Mapping{
		MappingKey: MappingKey{IP: MustParseIPv4("10.96.0.1"), Port: 80, Proto: servicerenderer.TCP},
		TwiceNAT:   TwiceNATSelf,
		Tag:        tagPrefix + "default/web",
	}
	for i := range n {
		m.Locals = append(m.Locals, Local{IP: IPv4{10, 1, 1, byte(10 + i)}, Port: 8080, VRF: 2, Probability: 1})
	}
	return m
}

// withPH is m with the placeholder local added.
func withPH(m *Mapping) *Mapping {
	m.Locals = append([]Local{Placeholder}, m.Locals...)
	return m
}

func stateWith(ms ...*Mapping) *State {
	st := NewState()
	for _, m := range ms {
		st.Mappings[m.MappingKey] = m
	}
	return st
}

func opLines(ops []Op) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.String()
	}
	return out
}

// runOps issues ops against fake, failing the test on any error.
func runOps(t testing.TB, fake *fakeVPP, ops []Op) {
	t.Helper()
	r := &Renderer{vpp: fake}
	for i := range ops {
		if err := r.call(context.Background(), &ops[i]); err != nil {
			t.Fatalf("%s: %v", ops[i], err)
		}
	}
}

// fakeWith is a fake VPP holding st.
func fakeWith(st *State) *fakeVPP {
	f := newFakeVPP()
	f.state = st.Clone()
	return f
}

func TestDiffMappingChanges(t *testing.T) {
	const key = "10.96.0.1:80/TCP"
	tag := "tag=" + tagPrefix + "default/web"
	mod := func(m *Mapping, f func(*Mapping)) *Mapping {
		c := *m
		c.Locals = slices.Clone(m.Locals)
		f(&c)
		return &c
	}
	tests := []struct {
		name             string
		desired, applied *Mapping
		expect           []string
		// equivalent: VPP ends holding what translates as desired, not
		// desired itself.
		equivalent bool
	}{{
		name: "10 backends, one added: one call", desired: lbMapping(11), applied: lbMapping(10),
		expect: []string{"add-local " + key + " 10.1.1.20:8080 vrf=2 p=1"},
	}, {
		name: "10 backends, one removed: one call", desired: lbMapping(9), applied: lbMapping(10),
		expect: []string{"del-local " + key + " 10.1.1.19:8080 vrf=2 p=1"},
	}, {
		name: "3 backends to 2: one call", desired: lbMapping(2), applied: lbMapping(3),
		expect: []string{"del-local " + key + " 10.1.1.12:8080 vrf=2 p=1"},
	}, {
		name: "2 backends to 1: load-balanced mapping replaced by a static one", desired: lbMapping(1), applied: lbMapping(2),
		expect: []string{
			"del-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.10:8080 vrf=2 p=1, 10.1.1.11:8080 vrf=2 p=1",
			"add-mapping " + key + " static twice-nat=self " + tag + " -> 10.1.1.10:8080 vrf=2",
		},
	}, {
		name: "1 backend to 2: static mapping replaced by a load-balanced one", desired: lbMapping(2), applied: lbMapping(1),
		expect: []string{
			"del-mapping " + key + " static twice-nat=self " + tag + " -> 10.1.1.10:8080 vrf=2",
			"add-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.10:8080 vrf=2 p=1, 10.1.1.11:8080 vrf=2 p=1",
		},
	}, {
		name: "both locals of 2 swapped: added before removed", applied: lbMapping(2),
		desired: mod(lbMapping(4), func(m *Mapping) { m.Locals = m.Locals[2:] }),
		expect: []string{
			"add-local " + key + " 10.1.1.12:8080 vrf=2 p=1",
			"add-local " + key + " 10.1.1.13:8080 vrf=2 p=1",
			"del-local " + key + " 10.1.1.10:8080 vrf=2 p=1",
			"del-local " + key + " 10.1.1.11:8080 vrf=2 p=1",
		},
	}, {
		name: "static mapping: other backend", applied: lbMapping(1),
		desired: mod(lbMapping(1), func(m *Mapping) { m.Locals[0].Port = 9090 }),
		expect: []string{
			"del-mapping " + key + " static twice-nat=self " + tag + " -> 10.1.1.10:8080 vrf=2",
			"add-mapping " + key + " static twice-nat=self " + tag + " -> 10.1.1.10:9090 vrf=2",
		},
	}, {
		name: "static mapping: probability and affinity do not exist in VPP", applied: lbMapping(1),
		desired: mod(lbMapping(1), func(m *Mapping) { m.Locals[0].Probability = 2; m.Affinity = 60 }),
		expect:  []string{},
	}, {
		name: "unchanged", desired: lbMapping(10), applied: lbMapping(10), expect: []string{},
	}, {
		name: "added", desired: lbMapping(2),
		expect: []string{"add-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.10:8080 vrf=2 p=1, 10.1.1.11:8080 vrf=2 p=1"},
	}, {
		name: "removed", applied: lbMapping(2),
		expect: []string{"del-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.10:8080 vrf=2 p=1, 10.1.1.11:8080 vrf=2 p=1"},
	}, {
		name: "probability of one of 6 changes: that local removed and re-added", applied: lbMapping(6),
		desired: mod(lbMapping(6), func(m *Mapping) { m.Locals[1].Probability = 2 }),
		expect: []string{
			"del-local " + key + " 10.1.1.11:8080 vrf=2 p=1",
			"add-local " + key + " 10.1.1.11:8080 vrf=2 p=2",
		},
	}, {
		name: "probability of one of 2 changes: the placeholder stands in meanwhile", applied: lbMapping(2),
		desired: mod(lbMapping(2), func(m *Mapping) { m.Locals[1].Probability = 2 }),
		expect: []string{
			"add-local " + key + " 0.0.0.0:0 vrf=0 p=0",
			"del-local " + key + " 10.1.1.11:8080 vrf=2 p=1",
			"add-local " + key + " 10.1.1.11:8080 vrf=2 p=2",
			"del-local " + key + " 0.0.0.0:0 vrf=0 p=0",
		},
	}, {
		name: "probability of a lone backend changes: replaced (never only probability 0)", applied: withPH(lbMapping(1)),
		desired: mod(withPH(lbMapping(1)), func(m *Mapping) { m.Locals[1].Probability = 2 }),
		expect: []string{
			"del-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.10:8080 vrf=2 p=1",
			"add-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.10:8080 vrf=2 p=2",
		},
	}, {
		name: "VRF of a local changes: the new one added before the old one goes", applied: lbMapping(2),
		desired: mod(lbMapping(2), func(m *Mapping) { m.Locals[1].VRF = 1 }),
		expect: []string{
			"add-local " + key + " 10.1.1.11:8080 vrf=1 p=1",
			"del-local " + key + " 10.1.1.11:8080 vrf=2 p=1",
		},
	}, {
		name: "3 backends to 1: placeholder first", applied: lbMapping(3), desired: withPH(lbMapping(1)),
		expect: []string{
			"add-local " + key + " 0.0.0.0:0 vrf=0 p=0",
			"del-local " + key + " 10.1.1.11:8080 vrf=2 p=1",
			"del-local " + key + " 10.1.1.12:8080 vrf=2 p=1",
		},
	}, {
		name: "1 backend to another: the new one in, then the old one out", applied: withPH(lbMapping(1)),
		desired: mod(withPH(lbMapping(1)), func(m *Mapping) { m.Locals[1].Port = 9090 }),
		expect: []string{
			"add-local " + key + " 10.1.1.10:9090 vrf=2 p=1",
			"del-local " + key + " 10.1.1.10:8080 vrf=2 p=1",
		},
	}, {
		name: "static mapping of an older agent, same backend: left alone", applied: lbMapping(1), equivalent: true,
		desired: mod(withPH(lbMapping(1)), func(m *Mapping) {
			m.Affinity = 60
			m.Tag = AffinityTag(tagPrefix, servicerenderer.ServiceID{Namespace: "default", Name: "web"}, 60)
		}),
		expect: []string{},
	}, {
		name: "static mapping of an older agent, 2 backends now: converted", applied: lbMapping(1), desired: lbMapping(2),
		expect: []string{
			"del-mapping " + key + " static twice-nat=self " + tag + " -> 10.1.1.10:8080 vrf=2",
			"add-mapping " + key + " lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.10:8080 vrf=2 p=1, 10.1.1.11:8080 vrf=2 p=1",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired, applied := stateWith(), stateWith()
			if tc.desired != nil {
				desired = stateWith(tc.desired)
			}
			if tc.applied != nil {
				applied = stateWith(tc.applied)
			}
			ops := Diff(desired, applied, testOwned)
			if got := opLines(ops); !slices.Equal(got, tc.expect) {
				t.Fatalf("got:\n%s\nwant:\n%s", join(got), join(tc.expect))
			}
			fake := fakeWith(applied)
			runOps(t, fake, ops)
			if got, want := fake.dump(), desired.Lines(); !tc.equivalent && !slices.Equal(got, want) {
				t.Errorf("VPP holds:\n%s\nwant:\n%s", join(got), join(want))
			}
		})
	}
}

func TestDiffReplacesOnAttributeChange(t *testing.T) {
	changes := map[string]func(*Mapping){
		"twice-NAT": func(m *Mapping) { m.TwiceNAT = TwiceNATOn },
		"affinity":  func(m *Mapping) { m.Affinity = 10800 },
		"tag":       func(m *Mapping) { m.Tag = tagPrefix + "default/other" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			applied := lbMapping(5)
			desired := lbMapping(6)
			change(desired)
			ops := Diff(stateWith(desired), stateWith(applied), testOwned)
			if len(ops) != 2 || ops[0].Kind != OpDelMapping || ops[1].Kind != OpAddMapping ||
				ops[0].Mapping != applied || ops[1].Mapping != desired {
				t.Fatalf("want delete + add, got:\n%s", join(opLines(ops)))
			}
		})
	}
}

func TestDiffOrderAndForeignObjects(t *testing.T) {
	cfg := testConfig()
	desired := BuildGlobal(cfg, map[string]servicerenderer.InterfaceRole{"tap1": servicerenderer.RoleBackend})
	svc := service("default", "web", 0, "10.96.0.1", port("http", 80, 0, be("10.1.1.3", 8080, "local"), be("10.2.1.1", 8080)))
	for _, m := range BuildService(svc, testNode(), cfg) {
		desired.Mappings[m.MappingKey] = m
	}
	blockedKey := MappingKey{IP: MustParseIPv4("10.96.0.2"), Port: 53, Proto: servicerenderer.UDP}
	desired.Mappings[blockedKey] = &Mapping{MappingKey: blockedKey, Tag: tagPrefix + "kube-system/dns",
		Locals: []Local{{IP: MustParseIPv4("10.1.1.5"), Port: 53, VRF: 2, Probability: 1}}}

	applied := NewState()
	applied.Pool = []PoolAddress{{IP: netip.MustParseAddr("10.9.9.9"), VRF: AnyVRF}}
	applied.Interfaces["tap9"] = FeatureIn
	foreignID := &Identity{IdentityKey: IdentityKey{IP: netip.MustParseAddr("192.168.16.99"), VRF: 1}, Tag: "calico:x"}
	staleID := &Identity{IdentityKey: IdentityKey{IP: netip.MustParseAddr("192.168.16.98"), VRF: 1}, Tag: tagPrefix + "snat"}
	applied.Identities[foreignID.IdentityKey] = foreignID
	applied.Identities[staleID.IdentityKey] = staleID
	foreign := &Mapping{MappingKey: MappingKey{IP: MustParseIPv4("10.200.0.1"), Port: 80, Proto: servicerenderer.TCP},
		Tag: "", Locals: []Local{{IP: MustParseIPv4("10.1.1.9"), Port: 80, VRF: 2}}}
	foreignBlocking := &Mapping{MappingKey: blockedKey, Tag: "calico:dns",
		Locals: []Local{{IP: MustParseIPv4("10.1.1.8"), Port: 53, VRF: 2}}}
	stale := &Mapping{MappingKey: MappingKey{IP: MustParseIPv4("10.96.0.3"), Port: 80, Proto: servicerenderer.TCP},
		Tag: tagPrefix + "default/gone", Locals: []Local{{IP: MustParseIPv4("10.1.1.7"), Port: 80, VRF: 2}}}
	for _, m := range []*Mapping{foreign, foreignBlocking, stale} {
		applied.Mappings[m.MappingKey] = m
	}

	var blocked []string
	ops := diff(desired, applied, testOwned, func(id ObjectID, tag string) { blocked = append(blocked, id.String()+" "+tag) })
	want := []string{
		"set-global forwarding=on sessions=10000 timeouts=udp:300,tcp-established:7440,tcp-transitory:240,icmp:60",
		"del-pool 10.9.9.9 vrf=any",
		"add-pool 10.1.1.254 vrf=any twice-nat",
		"add-pool 192.168.16.10 vrf=any",
		"set-interface GbE none -> output",
		"set-interface tap1 none -> in",
		"set-interface tap9 in -> none",
		"del-identity 192.168.16.98 vrf=1 tag=contiv:snat",
		"add-identity 192.168.16.10 vrf=1 tag=contiv:snat",
		"add-identity 192.168.16.10:4789/UDP vrf=1 tag=contiv:snat",
		"add-identity 192.168.16.10 vrf=2 tag=contiv:snat",
		"add-route 10.96.0.0/12 vrf=1 drop",
		"add-route 10.96.0.0/12 vrf=2 drop",
		// Mappings in key order, each one's operations as planned.
		"add-mapping 10.96.0.1:80/TCP lb twice-nat=self affinity=0 tag=contiv:default/web -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		"del-mapping 10.96.0.3:80/TCP static twice-nat=off tag=contiv:default/gone -> 10.1.1.7:80 vrf=2",
	}
	if got := opLines(ops); !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", join(got), join(want))
	}
	if want := []string{"mapping 10.96.0.2:53/UDP calico:dns"}; !slices.Equal(blocked, want) {
		t.Errorf("blocked = %q, want %q", blocked, want)
	}
	if again := Diff(desired, applied, testOwned); !slices.Equal(opLines(again), opLines(ops)) {
		t.Error("Diff is not deterministic")
	}
}

// Generators for the properties: a small universe of addresses so that
// desired and applied states overlap.

var (
	genVIP   = rapid.SampledFrom(ips("10.96.0.1", "10.96.0.2", "10.96.0.3", "192.168.16.10"))
	genLocal = rapid.Custom(func(t *rapid.T) Local {
		host := rapid.IntRange(1, 6).Draw(t, "host")
		return Local{
			IP:          IPv4{10, 1, byte(1 + host%2), byte(host)},
			Port:        rapid.SampledFrom([]uint16{80, 8080}).Draw(t, "port"),
			VRF:         2,
			Probability: uint8(rapid.IntRange(1, 2).Draw(t, "prob")),
		}
	})
	genKey = rapid.Custom(func(t *rapid.T) MappingKey {
		return MappingKey{
			IP:    MustIPv4(genVIP.Draw(t, "vip")),
			Port:  rapid.SampledFrom([]uint16{80, 443}).Draw(t, "port"),
			Proto: rapid.SampledFrom([]Protocol{servicerenderer.TCP, servicerenderer.UDP}).Draw(t, "proto"),
		}
	})
)

func genMapping(tags []string) *rapid.Generator[*Mapping] {
	return rapid.Custom(func(t *rapid.T) *Mapping {
		locals := rapid.SliceOfNDistinct(genLocal, 1, 5, func(l Local) Local { return Local{IP: l.IP, Port: l.Port} }).Draw(t, "locals")
		slices.SortFunc(locals, compareLocals)
		return &Mapping{
			MappingKey: genKey.Draw(t, "key"),
			Locals:     locals,
			TwiceNAT:   rapid.SampledFrom([]TwiceNAT{TwiceNATSelf, TwiceNATOn}).Draw(t, "twice"),
			Affinity:   rapid.SampledFrom([]uint32{0, 10800}).Draw(t, "affinity"),
			Tag:        rapid.SampledFrom(tags).Draw(t, "tag"),
		}
	})
}

// genState draws a state VPP can hold; foreign adds mappings and
// identities not owned by the agent.
func genState(t *rapid.T, name string, foreign bool) *State {
	tags := []string{tagPrefix + "default/a", tagPrefix + "default/b"}
	if foreign {
		tags = append(tags, "calico:x", "")
	}
	st := NewState()
	st.Global = Global{
		SessionLimit: uint32(rapid.SampledFrom([]int{1000, 2000}).Draw(t, name+"-sessions")),
		Forwarding:   rapid.Bool().Draw(t, name+"-forwarding"),
	}
	for _, m := range rapid.SliceOfN(genMapping(tags), 0, 8).Draw(t, name+"-mappings") {
		st.Mappings[m.MappingKey] = m
	}
	pool := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) PoolAddress {
		return PoolAddress{
			IP:       rapid.SampledFrom(ips("10.1.1.254", "192.168.16.10", "10.9.9.9")).Draw(t, "ip"),
			VRF:      AnyVRF,
			TwiceNAT: rapid.Bool().Draw(t, "twice"),
		}
	}), 0, 3, func(p PoolAddress) netip.Addr { return p.IP }).Draw(t, name+"-pool")
	slices.SortFunc(pool, comparePool)
	st.Pool = pool
	for _, ifName := range []string{"GbE", "tap1", "tap2"} {
		f := rapid.SampledFrom([]Features{0, FeatureIn, FeatureOut, FeatureIn | FeatureOut, FeatureOutput}).Draw(t, name+"-"+ifName)
		if f != 0 {
			st.Interfaces[ifName] = f
		}
	}
	for _, id := range rapid.SliceOfN(rapid.Custom(func(t *rapid.T) *Identity {
		return &Identity{
			IdentityKey: IdentityKey{
				IP:  rapid.SampledFrom(ips("192.168.16.10", "192.168.17.10")).Draw(t, "ip"),
				VRF: uint32(rapid.IntRange(1, 2).Draw(t, "vrf")),
			},
			Tag: rapid.SampledFrom(append([]string{tagPrefix + "snat"}, tags...)).Draw(t, "tag"),
		}
	}), 0, 3).Draw(t, name+"-identities") {
		st.Identities[id.IdentityKey] = id
	}
	return st
}

// TestDiffProperties: for any desired and applied states, the operations
// of Diff are accepted by VPP in order, leave it holding the desired state
// on the agent's objects and the applied one on foreign objects, and
// applying them to the applied state (State.Apply) gives the same result;
// the diff of a state with itself is empty.
func TestDiffProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := genState(t, "desired", false)
		applied := genState(t, "applied", true)
		if ops := Diff(desired, desired, testOwned); len(ops) != 0 {
			t.Fatalf("Diff(desired, desired) = %q", opLines(ops))
		}
		ops := Diff(desired, applied, testOwned)
		fake := fakeWith(applied)
		for i := range ops {
			if err := (&Renderer{vpp: fake}).call(context.Background(), &ops[i]); err != nil {
				t.Fatalf("op %d %s: %v\nops:\n%s", i, ops[i], err, join(opLines(ops)))
			}
		}
		result := applied.Clone()
		for _, op := range ops {
			result.Apply(op)
		}
		if got, want := result.Lines(), fake.dump(); !slices.Equal(got, want) {
			t.Fatalf("State.Apply and VPP disagree:\n%s\nVPP:\n%s", join(got), join(want))
		}
		expect := desired.Clone()
		for k, m := range applied.Mappings {
			if !testOwned(m.Tag) {
				expect.Mappings[k] = m
			}
		}
		for k, id := range applied.Identities {
			if !testOwned(id.Tag) {
				expect.Identities[k] = id
			}
		}
		if got, want := result.Lines(), expect.Lines(); !slices.Equal(got, want) {
			t.Fatalf("after the ops:\n%s\nwant:\n%s\nops:\n%s", join(got), join(want), join(opLines(ops)))
		}
		if again := Diff(desired, result, testOwned); len(again) != 0 {
			t.Fatalf("not converged: %q", opLines(again))
		}
	})
}

func TestStateApplyNeverMutatesMappings(t *testing.T) {
	applied := stateWith(lbMapping(3))
	before := applied.Mappings[lbMapping(3).MappingKey].String()
	st := applied.Clone()
	for _, op := range Diff(stateWith(lbMapping(5)), applied, testOwned) {
		st.Apply(op)
	}
	if after := applied.Mappings[lbMapping(3).MappingKey].String(); after != before {
		t.Errorf("applied mapping mutated: %s", after)
	}
	if got := fmt.Sprint(len(st.Mappings[lbMapping(3).MappingKey].Locals)); got != "5" {
		t.Errorf("result has %s locals", got)
	}
}
