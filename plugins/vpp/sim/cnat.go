package sim

import (
	"cmp"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
)

// cnat: VPP 25.02's cnat plugin as recorded (FACTS.md §6,
// corpus/cnat_*.jsonl): translations in a pool keyed by (VIP, port,
// protocol), the source-NAT policy state, and the cnat graph nodes put on
// feature arcs by feature_enable_disable (cnat_feature.go).

// cnatKey is a translation's key: VIP address, port and IP protocol.
type cnatKey struct {
	vip   netip.Addr
	port  uint16
	proto uint8
}

// cnatEP is an endpoint as a request gave it: an address, or an
// interface whose address it takes (sw_if_index not ~0).
type cnatEP struct {
	addr netip.Addr
	swIf uint32
	port uint16
}

// cnatPath is one path (backend) of a translation.
type cnatPath struct {
	dst, src cnatEP
	flags    uint8
}

// cnatTranslation is one translation of the pool.
type cnatTranslation struct {
	id       uint32
	key      cnatKey
	vipIf    uint32
	isRealIP bool
	flags    uint8
	lbType   cnat.CnatLbType
	fhc      ipapi.IPFlowHashConfigV2
	paths    []cnatPath
}

// cnatState is the cnat plugin's state: it survives clients and is lost
// with VPP (restart, crash).
type cnatState struct {
	pool  []*cnatTranslation // index = id; nil = free slot
	free  []uint32           // freed ids, reused last-freed-first
	byKey map[cnatKey]uint32

	snat4, snat6 netip.Addr
	snatIf       uint32 // 0 until set (as recorded), ~0 = no interface
	snatSet      bool
	snatFlags    uint8 // VPP 26.06: the entry's flags (cnat_set_snat_addresses_v2)
	policy       cnat.CnatSnatPolicies
	tables       [cnatTables]map[uint32]bool // INCLUDE_V4, INCLUDE_V6, POD, HOST
	exclude      map[netip.Prefix]bool

	// features counts how many times each cnat node was put on an
	// interface's arc (enable is not idempotent, FACTS.md §6).
	features map[cnatFeatKey]int

	// VPP 26.06: cnat was first used (its lazy init) and the IPv4 tables
	// that have a session budget since (sessionTables).
	initDone      bool
	sessionTables map[uint32]bool
}

// cnatTables is the number of SNAT policy interface tables (0..3).
const cnatTables = 4

func newCnatState() *cnatState {
	c := &cnatState{
		byKey:    make(map[cnatKey]uint32),
		snat4:    netip.IPv4Unspecified(),
		snat6:    netip.IPv6Unspecified(),
		exclude:  make(map[netip.Prefix]bool),
		features: make(map[cnatFeatKey]int),
	}
	for i := range c.tables {
		c.tables[i] = make(map[uint32]bool)
	}
	return c
}

// anyAddr converts a binapi address (IPv4 or IPv6).
func anyAddr(a ip_types.Address) netip.Addr {
	if a.Af == ip_types.ADDRESS_IP6 {
		return netip.AddrFrom16(a.Un.GetIP6())
	}
	return netip.AddrFrom4(a.Un.GetIP4())
}

// toAnyAddr converts to a binapi address; the invalid address is 0.0.0.0.
func toAnyAddr(a netip.Addr) ip_types.Address {
	if a.Is6() && !a.Is4In6() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
	}
	if !a.IsValid() {
		a = netip.IPv4Unspecified()
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
}

func ep(e cnat.CnatEndpoint) cnatEP {
	return cnatEP{addr: anyAddr(e.Addr), swIf: uint32(e.SwIfIndex), port: e.Port}
}

// resolve returns an endpoint's address: its own, or, when it names an
// interface, that interface's address of the same family.
// ASSUMPTION: the simulated interfaces have IPv4 addresses only; an
// IPv6 endpoint on an interface, an unknown interface or one without an
// address stays unresolved (recorded: local0 -> unresolved).
func (v *VPP) resolve(e cnatEP) (netip.Addr, bool) {
	if e.swIf == noIndex {
		return e.addr, true
	}
	if !e.addr.Is4() {
		return netip.IPv6Unspecified(), false
	}
	if a := v.ifaceAddr(e.swIf); a.IsValid() {
		return a, true
	}
	return netip.IPv4Unspecified(), false
}

// endpoint is what a dump shows of an endpoint: the resolved address,
// the interface as given, the address family.
func (v *VPP) endpoint(e cnatEP) cnat.CnatEndpoint {
	a, _ := v.resolve(e)
	out := cnat.CnatEndpoint{Addr: toAnyAddr(a), SwIfIndex: interface_types.InterfaceIndex(e.swIf), Port: e.port}
	if a.Is6() {
		out.IfAf = ip_types.ADDRESS_IP6
	}
	return out
}

// cnatEPResolved is the path flag VPP reads back for a resolved path.
const cnatEPResolved = 1

func (v *VPP) cnatTranslationUpdate(req *cnat.CnatTranslationUpdate) []api.Message {
	r := &cnat.CnatTranslationUpdateReply{}
	t := req.Translation
	if len(t.Paths) == 0 {
		v.crashLocked("cnat_translation_update with 0 paths: VPP 25.02 aborts (SIGABRT, vec_validate of n_paths-1)")
		return reply(r, 0)
	}
	c := v.cnat
	// ASSUMPTION: the key is the VIP address as given (an interface-based
	// VIP is not resolved for it).
	key := cnatKey{vip: anyAddr(t.Vip.Addr), port: t.Vip.Port, proto: uint8(t.IPProto)}
	paths := make([]cnatPath, len(t.Paths))
	for i, p := range t.Paths {
		paths[i] = cnatPath{dst: ep(p.DstEp), src: ep(p.SrcEp), flags: p.Flags}
	}
	if id, ok := c.byKey[key]; ok {
		// An update keeps the id, replaces the paths, overwrites the flags
		// and ignores lb_type and flow_hash_config (recorded).
		// ASSUMPTION: is_real_ip is overwritten with the flags (VPP folds
		// it into them); nothing reads it back.
		tr := c.pool[id]
		tr.paths, tr.flags, tr.isRealIP, tr.vipIf = paths, t.Flags, t.IsRealIP != 0, uint32(t.Vip.SwIfIndex)
		v.markCnatSessionsStaleLocked(tr, false)
		r.ID = id
		return reply(r, 0)
	}
	tr := &cnatTranslation{
		key: key, vipIf: uint32(t.Vip.SwIfIndex), isRealIP: t.IsRealIP != 0, flags: t.Flags,
		lbType: t.LbType, fhc: t.FlowHashConfig, paths: paths,
	}
	if n := len(c.free); n > 0 {
		tr.id = c.free[n-1]
		c.free = c.free[:n-1]
		c.pool[tr.id] = tr
	} else {
		tr.id = uint32(len(c.pool))
		c.pool = append(c.pool, tr)
	}
	c.byKey[key] = tr.id
	r.ID = tr.id
	return reply(r, 0)
}

// delete frees a translation's pool slot.
func (c *cnatState) delete(id uint32) {
	tr := c.pool[id]
	delete(c.byKey, tr.key)
	c.pool[id] = nil
	c.free = append(c.free, id)
}

// lookup returns the live translation with an id (nil if none).
func (c *cnatState) lookup(id uint32) *cnatTranslation {
	if int64(id) >= int64(len(c.pool)) {
		return nil
	}
	return c.pool[id]
}

// cnatTranslationDel deletes by id (a missing one -> -6): its sessions
// live on (cnat_sessions.go; on 26.06 until the scanner frees them,
// ScanCnatSessions), new connections to its VIP fail.
func (v *VPP) cnatTranslationDel(req *cnat.CnatTranslationDel) []api.Message {
	r := &cnat.CnatTranslationDelReply{}
	if v.cnat.lookup(req.ID) == nil {
		return reply(r, api.NO_SUCH_ENTRY)
	}
	v.markCnatSessionsStaleLocked(v.cnat.lookup(req.ID), true)
	v.cnat.delete(req.ID)
	return reply(r, 0)
}

// cnatTranslationDump lists the translations in pool order with what VPP
// reads back: never flags, is_real_ip or flow_hash_config; path flags as
// given plus "resolved" (1) for a resolved path.
func (v *VPP) cnatTranslationDump(*cnat.CnatTranslationDump) []api.Message {
	var out []api.Message
	for _, tr := range v.cnat.pool {
		if tr == nil {
			continue
		}
		d := cnat.CnatTranslation{
			Vip:     v.endpoint(cnatEP{addr: tr.key.vip, swIf: tr.vipIf, port: tr.key.port}),
			ID:      tr.id,
			IPProto: ip_types.IPProto(tr.key.proto),
			LbType:  tr.lbType,
			NPaths:  uint32(len(tr.paths)),
			Paths:   make([]cnat.CnatEndpointTuple, len(tr.paths)),
		}
		for i, p := range tr.paths {
			f := p.flags
			if _, ok := v.resolve(p.dst); ok {
				f |= cnatEPResolved
			}
			d.Paths[i] = cnat.CnatEndpointTuple{DstEp: v.endpoint(p.dst), SrcEp: v.endpoint(p.src), Flags: f}
		}
		out = append(out, &cnat.CnatTranslationDetails{Translation: d})
	}
	return out
}

// purge deletes every translation, in pool order (recorded: the ids come
// back last-freed-first after a purge, the highest first).
func (c *cnatState) purge() {
	for id, tr := range c.pool {
		if tr != nil {
			c.delete(uint32(id))
		}
	}
}

// CnatTranslation is one cnat translation as the simulated VPP holds it,
// with what the dump does not read back (flags, is_real_ip,
// flow_hash_config).
type CnatTranslation struct {
	ID    uint32
	VIP   netip.AddrPort
	Proto ip_types.IPProto
	// LBType is cnat_lb_type: 0 default, 1 Maglev (set at creation).
	LBType uint8
	// FlowHashConfig is ip_flow_hash_config_v2 (set at creation; 0 is
	// VPP's default 5-tuple hash, 1 SRC_IP).
	FlowHashConfig uint32
	IsRealIP       bool
	Flags          uint8
	// Paths are the paths' destinations in request order (a repeated
	// path weighs more), as resolved: an unresolved interface path is
	// 0.0.0.0:port. PathSrcs are their source endpoints (the
	// unspecified address and port 0 when the request left them unset).
	Paths    []netip.AddrPort
	PathSrcs []netip.AddrPort
}

// CnatTranslations lists the cnat translations, sorted by id.
func (v *VPP) CnatTranslations() []CnatTranslation {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []CnatTranslation
	for _, tr := range v.cnat.pool {
		if tr == nil {
			continue
		}
		t := CnatTranslation{
			ID: tr.id, VIP: netip.AddrPortFrom(tr.key.vip, tr.key.port), Proto: ipProto(tr.key.proto),
			LBType: uint8(tr.lbType), FlowHashConfig: uint32(tr.fhc), IsRealIP: tr.isRealIP, Flags: tr.flags,
		}
		for _, p := range tr.paths {
			d, _ := v.resolve(p.dst)
			s, _ := v.resolve(p.src)
			t.Paths = append(t.Paths, netip.AddrPortFrom(d, p.dst.port))
			t.PathSrcs = append(t.PathSrcs, netip.AddrPortFrom(s, p.src.port))
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b CnatTranslation) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
