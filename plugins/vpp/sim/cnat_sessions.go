package sim

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
)

// CnatSession is one cnat session (one connection) the simulated VPP
// keeps, opened with OpenCnatSession.
type CnatSession struct {
	ID     uint64
	Client netip.AddrPort
	VIP    netip.AddrPort
	Proto  ip_types.IPProto
	// TranslationID is the id of the translation that made the session
	// (it may since have been deleted or its id reused).
	TranslationID uint32
	Backend       netip.AddrPort
	// Src is the client's address as the backend sees it (CnatTrace).
	Src netip.Addr
}

// ErrNoCnatTranslation is what OpenCnatSession answers for a packet no
// cnat translation matches.
var ErrNoCnatTranslation = errors.New("simulated VPP: no cnat translation")

// cnatSessions are the simulated VPP's cnat sessions and the disruption
// counters.
type cnatSessions struct {
	seed   uint64
	onCut  func(int)
	maxAge time.Duration
	nextID uint64
	live   map[uint64]cnatLive
	byFlow map[flowKey]uint64
	cut    uint64
	lost   uint64
	// expired counts the UDP sessions that expired idle (CnatPacket).
	expired uint64
}

type cnatLive struct {
	CnatSession
	flow flowKey
	// seen is when a packet (CnatPacket) last refreshed the session;
	// zero for sessions OpenCnatSession opened, which never expire.
	seen time.Time
	// stale: on VPP 26.06 its path was removed or its translation deleted;
	// it goes on until the session scanner frees it (ScanCnatSessions).
	stale bool
}

// defaultCnatSessionMaxAge is VPP 25.02's cnat session-max-age (FACTS §6).
const defaultCnatSessionMaxAge = 30 * time.Second

func newCnatSessions(opts Options) *cnatSessions {
	return &cnatSessions{
		seed: opts.SessionSeed, onCut: opts.OnCut, maxAge: cmp.Or(opts.CnatSessionMaxAge, defaultCnatSessionMaxAge), nextID: 1,
		live: make(map[uint64]cnatLive), byFlow: make(map[flowKey]uint64),
	}
}

// OpenCnatSession opens a connection from p.Src:srcPort to
// p.Dst:p.DstPort (protocol p.Proto) arriving on p.Ingress, as a first
// packet does: the translation of the destination picks one of its
// resolved paths by hashing the flow (flow_hash_config; 0 is VPP's
// 5-tuple default, SRC_IP (1) alone sends a client address to the same
// backend while the path set is unchanged), over the paths in order
// (default load balancing: removing a backend re-maps other clients too)
// or through a Maglev table (removing a backend moves only its clients,
// nearly). A repeated path weighs more. Options.SessionSeed seeds the
// hash. Opening the same client address:port, destination and protocol
// again while its session lives returns that session, even after its
// translation changed or was deleted (an established connection goes
// on). A packet no translation matches gets ErrNoCnatTranslation; one
// whose translation has no resolved path, or that CnatTrace says fails,
// gets an error; neither gets a session.
//
// On VPP 25.02 no translation update cuts a session (FACTS.md §6; on
// 26.06 see CnatSessionsCut): a removed backend
// keeps its sessions and gets no new ones; a deleted translation's
// sessions live on and new connections fail. cnat_session_purge ends
// every session (CnatSessionsCut) and deletes every translation. A
// restart or crash loses them all (CnatSessionsLost).
//
// Sessions it opens never expire; CnatPacket models the expiry of idle
// UDP sessions. ASSUMPTION: the Maglev table has VPP's default length
// 1009.
func (v *VPP) OpenCnatSession(p Packet, srcPort uint16) (CnatSession, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.openCnatSessionLocked(p, srcPort, time.Time{})
}

// CnatPacket is one packet of the flow p.Src:srcPort to p.Dst:p.DstPort
// at time at (the caller's clock): as OpenCnatSession, but a UDP
// session lives only while packets refresh it: one that no packet
// refreshed for Options.CnatSessionMaxAge (VPP's session-max-age, 30 s by
// default) has expired, and this packet is balanced again over the
// translation's current paths (FACTS §6: a UDP sender that never pauses
// 30 s stays on a backend removed from the translation for ever; after
// 35 s of silence it moves). CnatSessionsExpired counts the expired
// sessions (an expiry is not a cut: no packet was in flight).
// ASSUMPTION: session-max-age applies to every non-TCP session as to UDP
// (recorded for UDP); TCP sessions (tcp-max-age 3600 s once established)
// do not expire here.
func (v *VPP) CnatPacket(p Packet, srcPort uint16, at time.Time) (CnatSession, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.openCnatSessionLocked(p, srcPort, at)
}

// CnatSessionsExpired returns how many idle UDP sessions expired since
// New (CnatPacket).
func (v *VPP) CnatSessionsExpired() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cnatSess.expired
}

// openCnatSessionLocked finds the flow's live session, refreshed at at
// (zero: no clock, no expiry), or opens one.
func (v *VPP) openCnatSessionLocked(p Packet, srcPort uint16, at time.Time) (CnatSession, error) {
	t := v.cnatSess
	fk := flowKey{client: netip.AddrPortFrom(p.Src, srcPort), dst: netip.AddrPortFrom(p.Dst, p.DstPort), proto: uint8(p.Proto)}
	if id, ok := t.byFlow[fk]; ok {
		l := t.live[id]
		if at.IsZero() || l.seen.IsZero() || ip_types.IPProto(p.Proto) == ip_types.IP_API_PROTO_TCP || at.Sub(l.seen) <= t.maxAge {
			if !at.IsZero() {
				l.seen = at
				t.live[id] = l
			}
			return l.CnatSession, nil
		}
		delete(t.live, id)
		delete(t.byFlow, fk)
		t.expired++
	}
	res := v.cnatTraceLocked(p)
	switch res.Verdict {
	case NotTranslated:
		return CnatSession{}, fmt.Errorf("%w: %v to %v protocol %d", ErrNoCnatTranslation, fk.client, fk.dst, p.Proto)
	case Dropped:
		return CnatSession{}, fmt.Errorf("simulated VPP: %v to %v: %s", fk.client, fk.dst, res.Reason)
	}
	tr := v.cnat.pool[res.TranslationID]
	paths := v.resolvedPaths(tr)
	rp := paths[v.pickPath(tr, paths, fk)]
	i := slices.IndexFunc(res.Backends, func(r CnatReach) bool { return r.Backend == rp.dst })
	reach := res.Backends[i]
	if reach.Verdict != Translated {
		return CnatSession{}, fmt.Errorf("simulated VPP: %v to %v via %v: %s", fk.client, fk.dst, rp.dst, reach.Reason)
	}
	s := CnatSession{
		ID: t.nextID, Client: fk.client, VIP: fk.dst, Proto: p.Proto,
		TranslationID: tr.id, Backend: rp.dst, Src: reach.Src,
	}
	t.nextID++
	t.live[s.ID] = cnatLive{CnatSession: s, flow: fk, seen: at}
	t.byFlow[fk] = s.ID
	return s, nil
}

// maglevLen is the Maglev table length (VPP's default cnat maglev-len).
const maglevLen = 1009

// pickPath chooses the path (index into paths) of a new flow.
func (v *VPP) pickPath(tr *cnatTranslation, paths []resolvedPath, fk flowKey) int {
	h := v.cnatSess.flowHash(tr.fhc, fk)
	if tr.lbType != cnat.CNAT_LB_TYPE_MAGLEV {
		return int(h % uint64(len(paths)))
	}
	return maglev(paths, v.cnatSess.seed)[h%maglevLen]
}

// flowHash hashes the fields of a flow flow_hash_config selects (0: the
// default, source and destination addresses and ports and the protocol).
func (t *cnatSessions) flowHash(fhc ipapi.IPFlowHashConfigV2, fk flowKey) uint64 {
	if fhc == 0 {
		fhc = ipapi.IP_API_V2_FLOW_HASH_SRC_IP | ipapi.IP_API_V2_FLOW_HASH_DST_IP | ipapi.IP_API_V2_FLOW_HASH_SRC_PORT |
			ipapi.IP_API_V2_FLOW_HASH_DST_PORT | ipapi.IP_API_V2_FLOW_HASH_PROTO
	}
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], t.seed)
	h.Write(b[:])
	put := func(on ipapi.IPFlowHashConfigV2, data []byte) {
		if fhc&on != 0 {
			h.Write(data)
		}
	}
	put(ipapi.IP_API_V2_FLOW_HASH_SRC_IP, fk.client.Addr().AsSlice())
	put(ipapi.IP_API_V2_FLOW_HASH_DST_IP, fk.dst.Addr().AsSlice())
	put(ipapi.IP_API_V2_FLOW_HASH_SRC_PORT, binary.BigEndian.AppendUint16(nil, fk.client.Port()))
	put(ipapi.IP_API_V2_FLOW_HASH_DST_PORT, binary.BigEndian.AppendUint16(nil, fk.dst.Port()))
	put(ipapi.IP_API_V2_FLOW_HASH_PROTO, []byte{fk.proto})
	return mix(h.Sum64())
}

// mix spreads a hash's bits (FNV's low bits are weak for modulo).
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// maglev builds a Maglev lookup table: each slot holds a path index.
// Every path (a repeated one too) takes slots in turn along its
// backend's permutation, so that removing a backend frees only its slots
// and the others mostly keep theirs.
func maglev(paths []resolvedPath, seed uint64) []int {
	n := len(paths)
	offset, skip, next := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i, p := range paths {
		h := fnv.New64a()
		b, _ := p.dst.MarshalBinary()
		h.Write(b)
		x := mix(h.Sum64() ^ seed)
		offset[i] = x % maglevLen
		skip[i] = mix(x)%(maglevLen-1) + 1
	}
	table := make([]int, maglevLen)
	for i := range table {
		table[i] = -1
	}
	filled := 0
	for filled < maglevLen {
		for i := 0; i < n && filled < maglevLen; i++ {
			for {
				slot := (offset[i] + next[i]*skip[i]) % maglevLen
				next[i]++
				if table[slot] < 0 {
					table[slot] = i
					filled++
					break
				}
			}
		}
	}
	return table
}

// CnatSessionAlive tells whether a cnat session still lives.
func (v *VPP) CnatSessionAlive(id uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.cnatSess.live[id]
	return ok
}

// CnatSessions lists the live cnat sessions, sorted by ID.
func (v *VPP) CnatSessions() []CnatSession {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cnatSessionsLocked()
}

func (v *VPP) cnatSessionsLocked() []CnatSession {
	out := make([]CnatSession, 0, len(v.cnatSess.live))
	for _, s := range v.cnatSess.live {
		out = append(out, s.CnatSession)
	}
	slices.SortFunc(out, func(a, b CnatSession) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// CnatSessionsCut returns how many cnat sessions a configuration request
// has cut since New: cnat_session_purge cuts every session. On VPP 25.02
// no translation update or delete cuts one (FACTS.md §6); on VPP 26.06
// they leave the sessions of removed paths stale, and ScanCnatSessions
// cuts those. Options.OnCut reports each cut too.
func (v *VPP) CnatSessionsCut() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cnatSess.cut
}

// markCnatSessionsStaleLocked is VPP 26.06's marking of the paths an
// update of translation tr removed, or of all its paths when it is being
// deleted: its sessions to a backend it no longer holds become stale. On
// 25.02, where sessions outlive both, and with no session, it does
// nothing. ASSUMPTION: a path is known by its resolved destination (VPP
// compares the destination and source endpoints as given).
func (v *VPP) markCnatSessionsStaleLocked(tr *cnatTranslation, deleted bool) {
	t := v.cnatSess
	if !v.rel2606 || len(t.live) == 0 {
		return
	}
	keep := map[netip.AddrPort]bool{}
	if !deleted {
		for _, rp := range v.resolvedPaths(tr) {
			keep[rp.dst] = true
		}
	}
	for sid, l := range t.live {
		if l.TranslationID == tr.id && !keep[l.Backend] {
			l.stale = true
			t.live[sid] = l
		}
	}
}

// ScanCnatSessions is one full pass of VPP 26.06's cnat session scanner:
// it frees the stale sessions (of paths removed from their translation or
// of deleted translations), each a cut (CnatSessionsCut, Options.OnCut),
// and returns how many; the flow's next packet is balanced again. The
// real scanner visits ~9 700 buckets a second of a table of ~10 M at the
// default cnat session-max (measured with `cnat log enable`): a pass takes
// ~17 min, so a stale session lives a random while up to that; the caller
// picks the moment. On 25.02 no session is stale: 0.
func (v *VPP) ScanCnatSessions() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.cnatSess
	n := 0
	for id, l := range t.live {
		if l.stale {
			delete(t.live, id)
			delete(t.byFlow, l.flow)
			n++
		}
	}
	if n > 0 {
		t.cut += uint64(n)
		if t.onCut != nil {
			t.onCut(n)
		}
	}
	return n
}

// CnatSessionsLost returns how many cnat sessions restarts and crashes
// have lost since New (all the live ones, each time).
func (v *VPP) CnatSessionsLost() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cnatSess.lost
}

// loseCnatSessionsLocked drops every cnat session: VPP restarted or
// crashed (hook in restartLocked). Called with mu held.
func (v *VPP) loseCnatSessionsLocked() {
	t := v.cnatSess
	t.lost += uint64(len(t.live))
	clear(t.live)
	clear(t.byFlow)
}

// cnatSessionPurge deletes every session and every translation
// (recorded: running connections are cut and the translation dump is
// empty afterwards).
func (v *VPP) cnatSessionPurge(*cnat.CnatSessionPurge) []api.Message {
	t := v.cnatSess
	if n := len(t.live); n > 0 {
		t.cut += uint64(n)
		clear(t.live)
		clear(t.byFlow)
		if t.onCut != nil {
			t.onCut(n)
		}
	}
	v.cnat.purge()
	return reply(&cnat.CnatSessionPurgeReply{}, 0)
}

// cnatSessionDump lists each live session as VPP does, twice: the
// forward session (client -> VIP, rewritten to the backend, location 0)
// and the return one (backend -> the source it saw, rewritten to the
// client, location 1); timestamps are 0 as recorded.
// ASSUMPTION: sessions in ID order, forward first (VPP lists its hash
// table's order); a source-NATed session's return entry keeps the
// client's port.
func (v *VPP) cnatSessionDump(*cnat.CnatSessionDump) []api.Message {
	var out []api.Message
	for _, s := range v.cnatSessionsLocked() {
		e := func(a netip.AddrPort) cnat.CnatEndpoint {
			ep := cnat.CnatEndpoint{Addr: toAnyAddr(a.Addr()), SwIfIndex: ^interface_types.InterfaceIndex(0), Port: a.Port()}
			if a.Addr().Is6() {
				ep.IfAf = ip_types.ADDRESS_IP6
			}
			return ep
		}
		proto := ip_types.IPProto(s.Proto)
		out = append(out,
			&cnat.CnatSessionDetails{Session: cnat.CnatSession{
				Src: e(s.Client), Dst: e(s.VIP), New: e(s.Backend), IPProto: proto}},
			&cnat.CnatSessionDetails{Session: cnat.CnatSession{
				Src: e(s.Backend), Dst: e(netip.AddrPortFrom(s.Src, s.Client.Port())), New: e(s.Client),
				IPProto: proto, Location: 1}})
	}
	return out
}
