package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
)

// Session is one NAT44-ED session (one connection) the simulated VPP
// keeps, opened with OpenSession.
type Session struct {
	ID     uint64
	Client netip.AddrPort
	// Frontend is the key of the mapping that translated the session
	// (address-only mappings: port and protocol 0).
	Frontend   MappingKey
	Backend    netip.AddrPort
	BackendVRF uint32
	// LoadBalanced tells a load-balanced mapping's session from a static
	// mapping's: configuration changes cut them by different rules.
	LoadBalanced bool
}

// ErrZeroProbabilities is what OpenSession answers for a packet to a
// load-balanced mapping whose probabilities sum to zero in VPP's u8 (all
// 0, or a multiple of 256: lbpick.go): VPP 25.02 crashes on it (SIGFPE),
// and the simulated VPP crashes too.
var ErrZeroProbabilities = errors.New("simulated VPP: " + lbSumCrashReason)

// flowKey is how a session is found again: the client, the destination
// and the protocol.
type flowKey struct {
	client, dst netip.AddrPort
	proto       uint8
}

// stickyKey is an affinity record's key: a mapping and a client address.
type stickyKey struct {
	frontend o2iKey
	client   netip.Addr
}

// backendKey is a backend as a session records it.
type backendKey struct {
	addr netip.AddrPort
	vrf  uint32
}

// liveSession is a session with the flow that finds it again.
type liveSession struct {
	Session
	flow flowKey
}

// sessionTable is the simulated VPP's NAT44-ED sessions, with the
// affinity records and the disruption counters.
type sessionTable struct {
	rng    *rand.Rand
	onCut  func(int)
	nextID uint64
	live   map[uint64]liveSession
	byFlow map[flowKey]uint64
	sticky map[stickyKey]backendKey
	cut    uint64
	lost   uint64
}

// newSessionTable builds the session table from the options (hook in New).
func newSessionTable(opts Options) *sessionTable {
	s := opts.SessionSeed
	return &sessionTable{
		rng:    rand.New(rand.NewPCG(s, s^0x6a09e667f3bcc908)),
		onCut:  opts.OnCut,
		nextID: 1,
		live:   make(map[uint64]liveSession),
		byFlow: make(map[flowKey]uint64),
		sticky: make(map[stickyKey]backendKey),
	}
}

// OpenSession opens a connection from p.Src:srcPort to p.Dst:p.DstPort
// (protocol p.Proto) arriving on p.Ingress, as a first packet does: the
// packet goes where Trace says. A translated packet whose reply comes
// back gets a session with a backend chosen by the mapping's
// probabilities as VPP 25.02 picks (lbpick.go: skewed when they sum past
// 255; Options.SessionSeed seeds the draws; a local with probability 0 is
// never chosen); with affinity, a client address keeps
// the backend it got first from that mapping while the mapping and that
// local live. Opening the same client address:port, destination and
// protocol again while its session lives returns that session. A packet
// that is not translated, or whose reply is dropped, gets an error and no
// session. A load-balanced mapping whose probabilities sum to a multiple
// of 256 (all 0 included) crashes the simulated VPP
// (ErrZeroProbabilities), as VPP 25.02 crashes.
//
// ASSUMPTION: sessions never expire by time; affinity records neither.
func (v *VPP) OpenSession(p Packet, srcPort uint16) (Session, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.sessions
	fk := flowKey{client: netip.AddrPortFrom(p.Src, srcPort), dst: netip.AddrPortFrom(p.Dst, p.DstPort), proto: uint8(p.Proto)}
	if id, ok := t.byFlow[fk]; ok {
		return t.live[id].Session, nil
	}
	res, m := v.traceLocked(p)
	if crashesOnPacket(m) {
		v.crashLocked(lbSumCrashReason)
		return Session{}, ErrZeroProbabilities
	}
	if res.Verdict != Translated {
		return Session{}, fmt.Errorf("simulated VPP: %v to %v: %s: %s", fk.client, fk.dst, res.Verdict, res.Reason)
	}
	if res.Reply == Dropped {
		return Session{}, fmt.Errorf("simulated VPP: %v to %v: translated, but %s", fk.client, fk.dst, res.ReplyReason)
	}
	b := t.pick(m, p.Src, res.Backends)
	s := Session{
		ID:           t.nextID,
		Client:       fk.client,
		Frontend:     MappingKey{IP: m.key.addr, Port: m.key.port, Proto: ipProto(m.key.proto)},
		Backend:      b.addr,
		BackendVRF:   b.vrf,
		LoadBalanced: m.lb,
	}
	t.nextID++
	t.live[s.ID] = liveSession{s, fk}
	t.byFlow[fk] = s.ID
	return s, nil
}

// pick chooses a session's backend among a translation's backends,
// honouring affinity: a load-balanced mapping's local as VPP 25.02 draws
// it (lbpick.go; its probabilities do not sum to a multiple of 256), a
// static mapping's one backend.
func (t *sessionTable) pick(m *staticMapping, client netip.Addr, backends []Reach) backendKey {
	sk := stickyKey{frontend: m.key, client: client}
	sticky := m.lb && m.affinity != 0
	if b, ok := t.sticky[sk]; ok && sticky {
		return b
	}
	r := backends[0]
	if m.lb {
		// random_u32 % draws, as a uniform draw from the seeded RNG.
		p := lbPrefixes(m.locals)
		l := m.locals[lbSearch(p, 1+uint32(t.rng.Float64()*float64(lbDraws(p))))]
		i := slices.IndexFunc(backends, func(r Reach) bool { return r.IP == l.addr && r.Port == l.port && r.VRF == l.vrf })
		r = backends[i]
	}
	b := backendKey{netip.AddrPortFrom(r.IP, r.Port), r.VRF}
	if sticky {
		t.sticky[sk] = b
	}
	return b
}

// SessionAlive tells whether a session opened by OpenSession still lives.
func (v *VPP) SessionAlive(id uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.sessions.live[id]
	return ok
}

// Sessions lists the live sessions, sorted by ID.
func (v *VPP) Sessions() []Session {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Session, 0, len(v.sessions.live))
	for _, s := range v.sessions.live {
		out = append(out, s.Session)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// SessionsCut returns how many sessions configuration changes have cut
// since New (FACTS.md §3): deleting a load-balanced mapping's local cuts
// every load-balanced session to that local's address:port, in every
// load-balanced mapping; deleting a load-balanced mapping cuts every
// load-balanced session to each of its locals' address:port, in every
// load-balanced mapping; deleting a static mapping cuts its oldest
// session only (the others keep translating). Adding never cuts. Sessions
// lost to a restart, a crash or disabling the plugin are not cuts: see
// SessionsLost.
func (v *VPP) SessionsCut() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sessions.cut
}

// SessionsLost returns how many sessions a restart, a crash or disabling
// the NAT44-ED plugin has lost since New (all the live ones, each time).
func (v *VPP) SessionsLost() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sessions.lost
}

// loseSessionsLocked drops every session and affinity record: VPP
// restarted, crashed or the plugin was disabled (hook in Restart and
// pluginEnableDisable). Called with mu held.
func (v *VPP) loseSessionsLocked() {
	t := v.sessions
	t.lost += uint64(len(t.live))
	clear(t.live)
	clear(t.byFlow)
	clear(t.sticky)
}

// cutKind is the cut rule a configuration change falls under.
type cutKind uint8

const (
	cutNone      cutKind = iota
	cutLocal             // one local of a load-balanced mapping deleted
	cutLBMapping         // a load-balanced mapping deleted
	cutStatic            // a static mapping deleted
)

// cutPlan is what a configuration request may cut, read before the
// request is applied; cutSessions carries it out if the request did what
// it asked.
type cutPlan struct {
	kind  cutKind
	m     *staticMapping // the mapping as it was before
	local local          // cutLocal: the local deleted
	// statics are, for cutStatic, the static mappings the request may
	// delete (with its port and address-only).
	statics []*staticMapping
}

// planLocalCut reads what nat44_lb_static_mapping_add_del_local may cut.
// Called with mu held, before the request is applied.
func (v *VPP) planLocalCut(req *nat44_ed.Nat44LbStaticMappingAddDelLocal) cutPlan {
	if req.IsAdd {
		return cutPlan{}
	}
	m := v.nat.statics[o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}]
	l := local{addr: ip4(req.Local.Addr), port: req.Local.Port, vrf: req.Local.VrfID}
	if m == nil || !m.lb || !slices.ContainsFunc(m.locals, l.same) {
		return cutPlan{}
	}
	return cutPlan{kind: cutLocal, m: m, local: l}
}

// planLBCut reads what nat44_add_del_lb_static_mapping may cut. Called
// with mu held, before the request is applied.
func (v *VPP) planLBCut(req *nat44_ed.Nat44AddDelLbStaticMapping) cutPlan {
	if req.IsAdd {
		return cutPlan{}
	}
	m := v.nat.statics[o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}]
	if m == nil || !m.lb {
		return cutPlan{}
	}
	return cutPlan{kind: cutLBMapping, m: m}
}

// planStaticCut reads what nat44_add_del_static_mapping_v2 may cut.
// Called with mu held, before the request is applied.
func (v *VPP) planStaticCut(req *nat44_ed.Nat44AddDelStaticMappingV2) cutPlan {
	if req.IsAdd {
		return cutPlan{}
	}
	ext := ip4(req.ExternalIPAddress)
	var p cutPlan
	for _, k := range []o2iKey{{addr: ext, port: req.ExternalPort, proto: req.Protocol}, {addr: ext}} {
		if m := v.nat.statics[k]; m != nil && !m.lb && !slices.Contains(p.statics, m) {
			p.kind = cutStatic
			p.statics = append(p.statics, m)
		}
	}
	return p
}

// cutSessions carries out a cut plan once its request has been answered
// with rv, if the request did what the plan expected (the mapping or
// local is gone), and passes rv on (hook in the request's handler).
// Called with mu held.
func (v *VPP) cutSessions(p cutPlan, rv api.VPPApiError) api.VPPApiError {
	if rv != 0 || p.kind == cutNone {
		return rv
	}
	t := v.sessions
	n := 0
	switch p.kind {
	case cutLocal:
		if slices.ContainsFunc(p.m.locals, p.local.same) {
			break
		}
		gone := backendKey{netip.AddrPortFrom(p.local.addr, p.local.port), p.local.vrf}
		for sk, b := range t.sticky {
			if sk.frontend == p.m.key && b == gone {
				delete(t.sticky, sk)
			}
		}
		n = t.cutLB([]netip.AddrPort{gone.addr})
	case cutLBMapping:
		if v.nat.statics[p.m.key] == p.m {
			break
		}
		for sk := range t.sticky {
			if sk.frontend == p.m.key {
				delete(t.sticky, sk)
			}
		}
		targets := make([]netip.AddrPort, 0, len(p.m.locals))
		for _, l := range p.m.locals {
			targets = append(targets, netip.AddrPortFrom(l.addr, l.port))
		}
		n = t.cutLB(targets)
	case cutStatic:
		for _, m := range p.statics {
			if v.nat.statics[m.key] != m {
				n += t.cutFirst(m.key)
			}
		}
	}
	if n > 0 {
		t.cut += uint64(n)
		if t.onCut != nil {
			t.onCut(n)
		}
	}
	return rv
}

// cutLB ends every load-balanced session to one of the backends
// (address:port, any VRF) and returns how many.
// ASSUMPTION: the backend's VRF does not matter (FACTS.md names
// address:port).
func (t *sessionTable) cutLB(backends []netip.AddrPort) int {
	n := 0
	for id, s := range t.live {
		if s.LoadBalanced && slices.Contains(backends, s.Backend) {
			t.end(id)
			n++
		}
	}
	return n
}

// cutFirst ends the oldest session of a static mapping and returns 1, or
// 0 if it has none. ASSUMPTION: "the first matching session" is the
// oldest.
func (t *sessionTable) cutFirst(key o2iKey) int {
	fe := MappingKey{IP: key.addr, Port: key.port, Proto: ipProto(key.proto)}
	first := uint64(0)
	for id, s := range t.live {
		if !s.LoadBalanced && s.Frontend == fe && (first == 0 || id < first) {
			first = id
		}
	}
	if first == 0 {
		return 0
	}
	t.end(first)
	return 1
}

// end removes one live session.
func (t *sessionTable) end(id uint64) {
	delete(t.byFlow, t.live[id].flow)
	delete(t.live, id)
}
