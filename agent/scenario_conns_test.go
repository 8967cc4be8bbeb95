package agent

// The scenario steps that act on the simulated VPP as the CNI, an operator
// or clients would: interfaces, connections and their sessions (see
// scenario_test.go).

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
)

// interfaceStep deletes, re-creates or creates a VPP interface as the CNI
// or an operator would.
func (r *runner) interfaceStep(s *step) {
	r.t.Helper()
	if len(s.args) == 0 || len(s.args) > 2 || len(s.args) == 2 && s.verb != "create-interface" {
		r.fatalf(s, "want NAME (create-interface: NAME [ADDRESS/LEN])")
	}
	v := r.h.vpp
	v.ResetCalls()
	r.cutBase = r.cut()
	var err error
	switch s.verb {
	case "delete-interface":
		err = v.DelInterface(s.args[0])
	case "recreate-interface":
		err = v.RecreateInterface(s.args[0])
	default:
		spec := sim.InterfaceSpec{Name: s.args[0]}
		if len(s.args) == 2 {
			if spec.Address, err = netip.ParsePrefix(s.args[1]); err != nil {
				r.fatalf(s, "%v", err)
			}
		}
		_, err = v.CreateInterface(spec)
	}
	if err != nil {
		r.fatalf(s, "%v", err)
	}
}

// connect opens a group of connections through the simulated VPP.
func (r *runner) connect(s *step) {
	r.t.Helper()
	if len(s.args) < 2 {
		r.fatalf(s, "want NAME DST:PORT/PROTO [from SRC] [via IFACE] [count N]")
	}
	name, args := s.args[0], s.args[1:]
	count := 1
	if n := len(args); n >= 2 && args[n-2] == "count" {
		c, err := strconv.Atoi(args[n-1])
		if err != nil || c < 1 {
			r.fatalf(s, "count: want a positive number: %q", args[n-1])
		}
		count, args = c, args[:n-2]
	}
	p, err := parseTrace(args)
	if err != nil {
		r.fatalf(s, "%v", err)
	}
	if r.conns == nil {
		r.conns = map[string][]conn{}
	}
	if _, dup := r.conns[name]; dup {
		r.fatalf(s, "connection group %q exists", name)
	}
	for i := range count {
		c, err := r.open(p, uint16(40000+i))
		if err != nil {
			r.fatalf(s, "connection %d: %v", i, err)
		}
		r.conns[name] = append(r.conns[name], c)
	}
}

// cnatRenderer tells whether the agent runs the cnat renderer.
func (r *runner) cnatRenderer() bool { return r.h.cfg.Renderer == contivconf.RendererCNAT }

// open opens one connection through the sessions of the renderer in use.
func (r *runner) open(p sim.Packet, port uint16) (conn, error) {
	if r.cnatRenderer() {
		s, err := r.h.vpp.OpenCnatSession(p, port)
		return conn{id: s.ID, backend: s.Backend}, err
	}
	s, err := r.h.vpp.OpenSession(p, port)
	return conn{id: s.ID, backend: s.Backend}, err
}

func (r *runner) alive(c conn) bool {
	if r.cnatRenderer() {
		return r.h.vpp.CnatSessionAlive(c.id)
	}
	return r.h.vpp.SessionAlive(c.id)
}

// cut counts the sessions configuration changes cut.
func (r *runner) cut() uint64 {
	if r.cnatRenderer() {
		return r.h.vpp.CnatSessionsCut()
	}
	return r.h.vpp.SessionsCut()
}

// cnatLines is the simulated VPP's cnat state, one line per object.
func (r *runner) cnatLines() []string {
	var out []string
	snat := r.h.vpp.CnatSnatState()
	ip6 := ""
	if snat.IP6.IsValid() && !snat.IP6.IsUnspecified() {
		ip6 = " ip6=" + snat.IP6.String()
	}
	out = append(out, fmt.Sprintf("snat ip4=%v%s policy=%d exclude=%v", snat.IP4, ip6, snat.Policy, snat.Exclude))
	out = append(out, r.cnatInterfaceLines(snat)...)
	ts := r.h.vpp.CnatTranslations()
	slices.SortFunc(ts, func(a, b sim.CnatTranslation) int {
		return cmp.Or(a.VIP.Compare(b.VIP), cmp.Compare(a.Proto, b.Proto))
	})
	for _, t := range ts {
		paths := make([]string, len(t.Paths))
		for i, p := range t.Paths {
			paths[i] = p.String()
		}
		slices.Sort(paths)
		out = append(out, fmt.Sprintf("translation %s/%v lb=%d real=%v -> %s", t.VIP, sr.Protocol(t.Proto), t.LBType, t.IsRealIP, strings.Join(paths, ", ")))
	}
	for _, rt := range r.h.vpp.Routes() {
		switch {
		case rt.Drop:
			out = append(out, fmt.Sprintf("route %v vrf=%d drop", rt.Prefix, rt.VRF))
		case rt.Reject:
			out = append(out, fmt.Sprintf("route %v vrf=%d reject", rt.Prefix, rt.VRF))
		case rt.Lookup:
			out = append(out, fmt.Sprintf("route %v vrf=%d lookup table=%d", rt.Prefix, rt.VRF, rt.LookupVRF))
		}
	}
	return out
}

// cnatInterfaceLines is one line per interface with cnat features or SNAT
// tables: "interface NAME in4=N out4=N in6=N out6=N tables=T,...", only
// the features that are on.
func (r *runner) cnatInterfaceLines(snat sim.CnatSnat) []string {
	feats := []struct{ short, node string }{
		{"in4", "cnat-input-ip4"}, {"out4", "cnat-output-ip4"}, {"in6", "cnat-input-ip6"}, {"out6", "cnat-output-ip6"},
	}
	tables := []struct {
		name    string
		members []string
	}{{"include-v4", snat.IncludeV4}, {"include-v6", snat.IncludeV6}, {"pod", snat.Pod}, {"host", snat.Host}}
	var out []string
	for _, ifc := range r.h.vpp.Interfaces() {
		var f []string
		for _, ft := range feats {
			if n := r.h.vpp.CnatFeatureCount(ifc.Name, ft.node); n > 0 {
				f = append(f, fmt.Sprintf("%s=%d", ft.short, n))
			}
		}
		var ts []string
		for _, t := range tables {
			if slices.Contains(t.members, ifc.Name) {
				ts = append(ts, t.name)
			}
		}
		if len(f) == 0 && len(ts) == 0 {
			continue
		}
		if len(ts) > 0 {
			f = append(f, "tables="+strings.Join(ts, ","))
		}
		out = append(out, "interface "+ifc.Name+" "+strings.Join(f, " "))
	}
	slices.Sort(out)
	return out
}

// sessionLines says, per connection group, how many connections are alive
// and to which backends.
func (r *runner) sessionLines() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.conns)) {
		group := r.conns[name]
		alive := map[netip.AddrPort]int{}
		var backends []netip.AddrPort
		total := 0
		for _, sess := range group {
			if _, seen := alive[sess.backend]; !seen {
				backends = append(backends, sess.backend)
				alive[sess.backend] = 0
			}
			if r.alive(sess) {
				alive[sess.backend]++
				total++
			}
		}
		out = append(out, fmt.Sprintf("%s alive=%d/%d", name, total, len(group)))
		slices.SortFunc(backends, netip.AddrPort.Compare)
		for _, b := range backends {
			out = append(out, fmt.Sprintf("%s -> %s alive=%d", name, b, alive[b]))
		}
	}
	return out
}
