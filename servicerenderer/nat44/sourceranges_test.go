package nat44_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/acl_types"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// lbService is a LoadBalancer service on 203.0.113.80:80/TCP (cluster IP
// 10.96.0.80, external IP 198.18.0.1) with one backend and the given
// source ranges.
func lbService(ranges ...string) *servicerenderer.ContivService {
	s := svc("gw", "10.96.0.80", "10.1.2.5")
	s.ExternalIPs = []netip.Addr{addr("198.18.0.1"), addr("203.0.113.80")}
	s.LoadBalancerIPs = []netip.Addr{addr("203.0.113.80")}
	for _, r := range ranges {
		s.SourceRanges = append(s.SourceRanges, netip.MustParsePrefix(r))
	}
	return s
}

// TestSourceRangeRules: per LoadBalancer IP and port, permit+reflect per
// range, then deny; nothing for external IPs or without ranges.
func TestSourceRangeRules(t *testing.T) {
	any := netip.MustParsePrefix("0.0.0.0/0")
	lb := netip.MustParsePrefix("203.0.113.80/32")
	for _, c := range []struct {
		name string
		svc  *servicerenderer.ContivService
		want []nat44.ACLRule
	}{
		{"no ranges", lbService(), nil},
		{"two ranges", lbService("198.51.100.0/24", "192.0.2.7/32"), []nat44.ACLRule{
			{Action: nat44.ACLPermitReflect, Src: netip.MustParsePrefix("198.51.100.0/24"), Dst: lb, Proto: servicerenderer.TCP, Port: 80},
			{Action: nat44.ACLPermitReflect, Src: netip.MustParsePrefix("192.0.2.7/32"), Dst: lb, Proto: servicerenderer.TCP, Port: 80},
			{Action: nat44.ACLDeny, Src: any, Dst: lb, Proto: servicerenderer.TCP, Port: 80},
		}},
		{"IPv6 range only: every IPv4 source denied", lbService("2001:db8::/32"), []nat44.ACLRule{
			{Action: nat44.ACLDeny, Src: any, Dst: lb, Proto: servicerenderer.TCP, Port: 80},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := nat44.SourceRangeRules(c.svc); !slices.Equal(got, c.want) {
				t.Errorf("rules %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestSourceRangesEnforced: through govpp and the simulated VPP's ACL
// plugin, a LoadBalancer IP answers only the allowed sources (its
// external IP, cluster IP and other traffic unaffected); a range change
// replaces the ACL in place (one write); a restarted renderer writes
// nothing; the last range gone, the ACL leaves the interface and VPP; a
// foreign ACL on the interface is never touched.
func TestSourceRangesEnforced(t *testing.T) {
	e := newSimEnv(t)
	e.cfg.SourceRangeInterface = "GbE"
	v := e.vpp
	r := e.renderer()
	foreign := addForeignACL(t, v, "GbE")
	s := lbService("198.51.100.0/24")
	if err := r.Resync(&servicerenderer.ResyncData{Services: []*servicerenderer.ContivService{s}, Node: simNode,
		Interfaces: map[string]servicerenderer.InterfaceRole{"GbE": servicerenderer.RoleFrontend}}); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	trace := func(src, dst string) sim.Verdict {
		return v.Trace(sim.Packet{Ingress: "GbE", Src: addr(src), Dst: addr(dst), Proto: sim.TCP, DstPort: 80}).Verdict
	}
	check := func(step string, want map[[2]string]sim.Verdict) {
		t.Helper()
		for k, w := range want {
			if got := trace(k[0], k[1]); got != w {
				t.Errorf("%s: %s -> %s: %v, want %v", step, k[0], k[1], got, w)
			}
		}
	}
	check("first apply", map[[2]string]sim.Verdict{
		{"198.51.100.7", "203.0.113.80"}: sim.Translated,
		{"192.0.2.9", "203.0.113.80"}:    sim.Dropped,
		{"192.0.2.9", "198.18.0.1"}:      sim.Translated, // an external IP: not filtered
	})
	acls := v.ACLs()
	if len(acls) != 2 || acls[1].Tag != nat44.SourceACLTag(nat44.DefaultTagPrefix) {
		t.Fatalf("ACLs %+v", acls)
	}
	if got := v.InputACLs("GbE"); !slices.Equal(got, append([]uint32{acls[1].Index}, foreign...)) {
		t.Errorf("input ACLs %v", got)
	}
	// The range changes: one acl_add_replace on the same index.
	s2 := lbService("192.0.2.0/24")
	if err := r.UpdateService(s, s2); err != nil {
		t.Fatal(err)
	}
	before := v.CallCounts()
	e.apply(r, false)
	if got := since(before, v.CallCounts()); got["acl_add_replace"] != 1 || writes(got) != 1 {
		t.Errorf("range change: %v", got)
	}
	check("range changed", map[[2]string]sim.Verdict{
		{"198.51.100.7", "203.0.113.80"}: sim.Dropped,
		{"192.0.2.9", "203.0.113.80"}:    sim.Translated,
	})
	// A restarted renderer reads it back and writes nothing.
	r2 := e.renderer()
	if err := r2.Resync(&servicerenderer.ResyncData{Services: []*servicerenderer.ContivService{s2}, Node: simNode,
		Interfaces: map[string]servicerenderer.InterfaceRole{"GbE": servicerenderer.RoleFrontend}}); err != nil {
		t.Fatal(err)
	}
	before = v.CallCounts()
	e.apply(r2, true)
	if got := since(before, v.CallCounts()); writes(got) != 0 {
		t.Errorf("restart wrote: %v", got)
	}
	// The ranges go: the ACL leaves the list and VPP.
	if err := r2.UpdateService(s2, lbService()); err != nil {
		t.Fatal(err)
	}
	e.apply(r2, false)
	if got := v.ACLs(); len(got) != 1 || got[0].Tag != "other-tool" {
		t.Errorf("ACLs left: %+v", got)
	}
	if got := v.InputACLs("GbE"); !slices.Equal(got, foreign) {
		t.Errorf("input ACLs %v, want %v", got, foreign)
	}
	check("ranges gone", map[[2]string]sim.Verdict{{"198.51.100.7", "203.0.113.80"}: sim.Translated})
}

var simNode = servicerenderer.LocalNode{Name: "node-1", ID: 1, IPs: []netip.Addr{netip.MustParseAddr("192.168.16.10")}}

// addForeignACL puts another tool's ACL (permit all) on an interface's
// input and returns the interface's list.
func addForeignACL(t *testing.T, v *sim.VPP, ifName string) []uint32 {
	t.Helper()
	if _, err := v.AddInputACL(ifName, "other-tool", []acl_types.ACLRule{{IsPermit: acl_types.ACL_ACTION_API_PERMIT}}); err != nil {
		t.Fatal(err)
	}
	return v.InputACLs(ifName)
}

// since is the calls made between two CallCounts.
func since(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// writes counts the state-changing ACL calls among counts.
func writes(counts map[string]int) int {
	n := 0
	for _, k := range []string{"acl_add_replace", "acl_del", "acl_interface_set_acl_list", "acl_interface_add_del"} {
		n += counts[k]
	}
	return n
}

// TestSourceRangesWithoutACLPlugin: on a VPP that does not load
// acl_plugin.so a full apply programs the service, makes no ACL call and
// fails nothing (the ranges are not enforced); VPP restarted with the
// plugin, the next full apply enforces them.
func TestSourceRangesWithoutACLPlugin(t *testing.T) {
	e := newSimEnvWith(t, sim.Options{Traffic: true, NoACLPlugin: true})
	e.cfg.SourceRangeInterface = "GbE"
	v := e.vpp
	r := e.renderer()
	data := &servicerenderer.ResyncData{Services: []*servicerenderer.ContivService{lbService("198.51.100.0/24")}, Node: simNode,
		Interfaces: map[string]servicerenderer.InterfaceRole{"GbE": servicerenderer.RoleFrontend}}
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	e.apply(r, false)
	trace := func(src string) sim.Verdict {
		return v.Trace(sim.Packet{Ingress: "GbE", Src: addr(src), Dst: addr("203.0.113.80"), Proto: sim.TCP, DstPort: 80}).Verdict
	}
	if got := trace("192.0.2.9"); got != sim.Translated {
		t.Errorf("without the plugin: %v, want translated (programmed, not filtered)", got)
	}
	for name, n := range v.CallCounts() {
		if strings.HasPrefix(name, "acl_") && n > 0 {
			t.Errorf("%d %s calls without the ACL plugin", n, name)
		}
	}
	v.SetACLPlugin(true)
	v.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for !e.nat.HasACLPlugin() || !e.conn.Status().Connected {
		if time.Now().After(deadline) {
			t.Fatal("no reconnect to the VPP with the ACL plugin")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.apply(r, true)
	if got := trace("192.0.2.9"); got != sim.Dropped {
		t.Errorf("with the plugin, a source outside the ranges: %v, want dropped", got)
	}
	if got := trace("198.51.100.7"); got != sim.Translated {
		t.Errorf("with the plugin, a source in the ranges: %v, want translated", got)
	}
}
