package sim

import (
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// o2iKey is how NAT44-ED finds a static or identity mapping from the
// outside: external address, port and protocol (port and protocol 0 for
// address-only mappings).
type o2iKey struct {
	addr  netip.Addr
	port  uint16
	proto uint8
}

// i2oKey is how NAT44-ED finds a static mapping from the inside.
type i2oKey struct {
	addr  netip.Addr
	port  uint16
	vrf   uint32
	proto uint8
}

// local is one backend of a static or load-balanced mapping.
type local struct {
	addr netip.Addr
	port uint16
	vrf  uint32
	prob uint8
}

// staticMapping is a static mapping (one local) or a load-balanced one.
type staticMapping struct {
	key      o2iKey
	flags    nat_types.NatConfigFlags
	lb       bool
	locals   []local // in VPP's pool order (see slot)
	slot     []int   // locals[i]'s slot in the mapping's pool of locals
	free     []int   // freed slots, reused last-freed-first
	affinity uint32
	tag      string
}

func (m *staticMapping) out2inOnly() bool { return m.flags&nat_types.NAT_IS_OUT2IN_ONLY != 0 }

// addLocal puts a local in the first free slot (the one freed last) or
// after the others.
func (m *staticMapping) addLocal(l local) {
	s := len(m.locals)
	if n := len(m.free); n > 0 {
		s = m.free[n-1]
		m.free = m.free[:n-1]
	}
	i, _ := slices.BinarySearch(m.slot, s)
	m.locals = slices.Insert(m.locals, i, l)
	m.slot = slices.Insert(m.slot, i, s)
}

func (m *staticMapping) delLocal(i int) {
	m.free = append(m.free, m.slot[i])
	m.locals = slices.Delete(m.locals, i, i+1)
	m.slot = slices.Delete(m.slot, i, i+1)
}

// identityMapping is an identity mapping with its VRFs (VPP keeps one
// mapping per key and a "local" per VRF; the tag is the first one's).
type identityMapping struct {
	key      o2iKey
	addrOnly bool
	tag      string
	vrfs     []uint32
}

// resolveRecord is a mapping bound to an interface's address: VPP keeps
// it to re-resolve the address and lists it after the mappings.
type resolveRecord struct {
	identity bool
	swIf     uint32
	addrOnly bool
	local    netip.Addr
	lport    uint16
	eport    uint16
	proto    uint8
	vrf      uint32
	tag      string
}

// twiceNATFlags are the flags that select a twice-NAT mode.
const twiceNATFlags = nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT

// kept are the mapping flags the simulator stores.
const kept = twiceNATFlags | nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_ADDR_ONLY

// vrfOrInside maps ~0 to the plugin's inside VRF.
// ASSUMPTION: VPP reads ~0 as the inside VRF given at enable (0 when
// none was given, as recorded).
func (n *natState) vrfOrInside(vrf uint32) uint32 {
	if vrf == noIndex {
		return n.insideVRF
	}
	return vrf
}

// addMapping puts a new mapping in the shared pool.
func (n *natState) addMapping(key o2iKey) { n.mappingSlots.add(key) }

func (n *natState) delMapping(key o2iKey) {
	delete(n.statics, key)
	delete(n.identities, key)
	n.mappingSlots.remove(key)
}

func (v *VPP) addDelStaticMapping(req *nat44_ed.Nat44AddDelStaticMappingV2) []api.Message {
	return reply(&nat44_ed.Nat44AddDelStaticMappingV2Reply{}, v.cutSessions(v.planStaticCut(req), v.addDelStatic(req))) // sessions.go
}

func (v *VPP) addDelStatic(req *nat44_ed.Nat44AddDelStaticMappingV2) api.VPPApiError {
	n := v.nat
	if !n.enabled {
		return api.UNSUPPORTED
	}
	flags := req.Flags & kept
	addrOnly := flags&nat_types.NAT_IS_ADDR_ONLY != 0
	if addrOnly && flags&twiceNATFlags != 0 {
		// ASSUMPTION: VPP refuses twice-NAT on address-only mappings.
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalIPAddress), port: req.ExternalPort, proto: req.Protocol}
	l := local{addr: ip4(req.LocalIPAddress), port: req.LocalPort, vrf: n.vrfOrInside(req.VrfID)}
	if addrOnly {
		key.port, key.proto, l.port = 0, 0, 0
	}
	if swIf := uint32(req.ExternalSwIfIndex); swIf != noIndex {
		rec := resolveRecord{
			swIf: swIf, addrOnly: addrOnly, local: l.addr, lport: l.port, eport: key.port,
			proto: key.proto, vrf: req.VrfID, tag: cut(req.Tag),
		}
		return v.resolveAddDel(rec, req.IsAdd, func(a netip.Addr) api.VPPApiError {
			k := key
			k.addr = a
			return n.addDelStaticKey(k, l, flags, rec.tag, req.IsAdd)
		})
	}
	return n.addDelStaticKey(key, l, flags, cut(req.Tag), req.IsAdd)
}

func (n *natState) addDelStaticKey(key o2iKey, l local, flags nat_types.NatConfigFlags, tag string, add bool) api.VPPApiError {
	if !add {
		// Delete ignores flags, local, VRF and tag.
		if id := n.identities[key]; id != nil {
			// ASSUMPTION: symmetric to the add below, a static delete on
			// an identity key deletes the identity local of that VRF.
			return n.delIdentityVRF(id, l.vrf)
		}
		m, ok := n.statics[key]
		switch {
		case !ok:
			return api.NO_SUCH_ENTRY
		case m.lb:
			// A static delete on a load-balanced key does nothing.
			return 0
		}
		n.delMapping(key)
		if !m.out2inOnly() {
			ml := m.locals[0]
			delete(n.i2o, i2oKey{addr: ml.addr, port: ml.port, vrf: ml.vrf, proto: key.proto})
		}
		return 0
	}
	if id := n.identities[key]; id != nil {
		// A static mapping on an identity key with a new VRF silently
		// becomes another identity local.
		if slices.Contains(id.vrfs, l.vrf) {
			return api.VALUE_EXIST
		}
		id.vrfs = append(id.vrfs, l.vrf)
		return 0
	}
	if _, taken := n.statics[key]; taken {
		return api.VALUE_EXIST
	}
	inside := i2oKey{addr: l.addr, port: l.port, vrf: l.vrf, proto: key.proto}
	if flags&nat_types.NAT_IS_OUT2IN_ONLY == 0 {
		if n.i2o[inside] {
			return api.VALUE_EXIST
		}
		n.i2o[inside] = true
	}
	m := &staticMapping{key: key, flags: flags, tag: tag}
	m.addLocal(l)
	n.statics[key] = m
	n.addMapping(key)
	return 0
}

// resolveAddDel adds or deletes a mapping bound to an interface's
// address: the record stays (and is dumped) while the interface exists;
// when the interface has an address the mapping on it is added or
// deleted at once by apply, whose error is the answer (then no record is
// kept).
func (v *VPP) resolveAddDel(rec resolveRecord, add bool, apply func(netip.Addr) api.VPPApiError) api.VPPApiError {
	n := v.nat
	if v.ifaces[rec.swIf] == nil {
		// ASSUMPTION: an unknown interface is refused.
		return api.INVALID_SW_IF_INDEX
	}
	same := func(r resolveRecord) bool {
		return r.identity == rec.identity && r.swIf == rec.swIf && r.addrOnly == rec.addrOnly &&
			r.eport == rec.eport && r.proto == rec.proto && (!r.identity || r.vrf == rec.vrf)
	}
	i := slices.IndexFunc(n.resolve, same)
	addr := v.ifaceAddr(rec.swIf)
	if add {
		if i >= 0 {
			return api.VALUE_EXIST
		}
		if addr.IsValid() {
			if rv := apply(addr); rv != 0 {
				return rv
			}
		}
		n.resolve = append(n.resolve, rec)
		return 0
	}
	if i < 0 {
		return api.NO_SUCH_ENTRY
	}
	n.resolve = slices.Delete(n.resolve, i, i+1)
	if addr.IsValid() {
		return apply(addr)
	}
	return 0
}

func (v *VPP) staticMappingDump(*nat44_ed.Nat44StaticMappingDump) []api.Message {
	var out []api.Message
	n := v.nat
	for _, key := range n.mappingSlots.all() {
		m := n.statics[key]
		if m == nil || m.lb {
			continue
		}
		l := m.locals[0]
		out = append(out, &nat44_ed.Nat44StaticMappingDetails{
			Flags:             m.flags,
			LocalIPAddress:    toIP4(l.addr),
			ExternalIPAddress: toIP4(m.key.addr),
			Protocol:          m.key.proto,
			LocalPort:         l.port,
			ExternalPort:      m.key.port,
			ExternalSwIfIndex: interface_types.InterfaceIndex(noIndex),
			VrfID:             l.vrf,
			Tag:               m.tag,
		})
	}
	for _, r := range n.resolve {
		if r.identity {
			continue
		}
		d := &nat44_ed.Nat44StaticMappingDetails{
			LocalIPAddress:    toIP4(r.local),
			Protocol:          r.proto,
			LocalPort:         r.lport,
			ExternalPort:      r.eport,
			ExternalSwIfIndex: interface_types.InterfaceIndex(r.swIf),
			VrfID:             r.vrf,
			Tag:               r.tag,
		}
		if r.addrOnly {
			// ASSUMPTION: of the flags only address-only is kept in the
			// record (out2in-only was recorded lost).
			d.Flags = nat_types.NAT_IS_ADDR_ONLY
		}
		out = append(out, d)
	}
	return out
}

// maxLBLocals is where VPP 25.02 dies: its loop over the locals of
// nat44_add_del_lb_static_mapping counts in a u8.
const maxLBLocals = 255

func (v *VPP) addDelLBStaticMapping(req *nat44_ed.Nat44AddDelLbStaticMapping) []api.Message {
	// ASSUMPTION: a disabled plugin answers before reading the locals;
	// an enabled one reads them for a delete too.
	if len(req.Locals) > maxLBLocals && v.nat.enabled {
		v.crashLocked("nat44_add_del_lb_static_mapping with 256 or more locals (SIGABRT in VPP 25.02)")
		return nil
	}
	rv := v.cutSessions(v.planLBCut(req), v.nat.addDelLB(req)) // sessions.go
	if rv == 0 && req.IsAdd && v.probeLBLocked(o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}) {
		return nil
	}
	return reply(&nat44_ed.Nat44AddDelLbStaticMappingReply{}, rv)
}

func (n *natState) addDelLB(req *nat44_ed.Nat44AddDelLbStaticMapping) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}
	if !req.IsAdd {
		// Delete ignores locals, flags, affinity and tag.
		m, ok := n.statics[key]
		switch {
		case n.identities[key] != nil:
			// ASSUMPTION: as on a static key.
			return api.INVALID_VALUE
		case !ok:
			return api.NO_SUCH_ENTRY
		case !m.lb:
			return api.INVALID_VALUE
		}
		n.delMapping(key)
		return 0
	}
	if _, taken := n.statics[key]; taken || n.identities[key] != nil {
		return api.VALUE_EXIST
	}
	if len(req.Locals) < 2 {
		return api.INVALID_VALUE
	}
	flags := req.Flags & kept &^ nat_types.NAT_IS_ADDR_ONLY
	if flags&nat_types.NAT_IS_OUT2IN_ONLY == 0 &&
		!slices.ContainsFunc(n.pool, func(p poolAddr) bool { return p.addr == key.addr }) {
		// Without out2in-only the external address must be in the NAT pool.
		return api.NO_SUCH_ENTRY
	}
	// Probability 0, duplicate locals and unknown VRFs are accepted;
	// affinity is kept but never dumped.
	m := &staticMapping{key: key, flags: flags, lb: true, affinity: req.Affinity, tag: cut(req.Tag)}
	for _, rl := range req.Locals {
		m.addLocal(local{addr: ip4(rl.Addr), port: rl.Port, vrf: rl.VrfID, prob: rl.Probability})
	}
	n.statics[key] = m
	n.addMapping(key)
	return 0
}

// same tells whether two locals are the same backend (probability aside).
func (l local) same(o local) bool { return l.addr == o.addr && l.port == o.port && l.vrf == o.vrf }

func (v *VPP) lbStaticMappingAddDelLocal(req *nat44_ed.Nat44LbStaticMappingAddDelLocal) []api.Message {
	rv := v.cutSessions(v.planLocalCut(req), v.nat.lbLocal(req)) // sessions.go
	if rv == 0 && v.probeLBLocked(o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}) {
		return nil
	}
	return reply(&nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}, rv)
}

func (n *natState) lbLocal(req *nat44_ed.Nat44LbStaticMappingAddDelLocal) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}
	m, ok := n.statics[key]
	switch {
	case n.identities[key] != nil:
		// ASSUMPTION: as on a static key.
		return api.INVALID_VALUE
	case !ok:
		return api.NO_SUCH_ENTRY
	case !m.lb:
		return api.INVALID_VALUE
	}
	// A local is addr+port+VRF; the probability is ignored.
	l := local{addr: ip4(req.Local.Addr), port: req.Local.Port, vrf: req.Local.VrfID, prob: req.Local.Probability}
	i := slices.IndexFunc(m.locals, l.same)
	if req.IsAdd {
		if i >= 0 {
			return api.VALUE_EXIST
		}
		m.addLocal(l)
		return 0
	}
	switch {
	case i < 0:
		return api.NO_SUCH_ENTRY
	case len(m.locals) < 3:
		// A load-balanced mapping keeps at least two locals.
		return api.UNSPECIFIED
	}
	m.delLocal(i)
	return 0
}

func (v *VPP) lbStaticMappingDump(*nat44_ed.Nat44LbStaticMappingDump) []api.Message {
	var out []api.Message
	n := v.nat
	for _, key := range n.mappingSlots.all() {
		m := n.statics[key]
		if m == nil || !m.lb {
			continue
		}
		locals := make([]nat44_ed.Nat44LbAddrPort, 0, len(m.locals))
		for _, l := range m.locals {
			locals = append(locals, nat44_ed.Nat44LbAddrPort{
				Addr: toIP4(l.addr), Port: l.port, Probability: l.prob, VrfID: l.vrf,
			})
		}
		// VPP 25.02 never reports the affinity.
		out = append(out, &nat44_ed.Nat44LbStaticMappingDetails{
			ExternalAddr: toIP4(m.key.addr),
			ExternalPort: m.key.port,
			Protocol:     m.key.proto,
			Flags:        m.flags,
			Tag:          m.tag,
			LocalNum:     uint32(len(locals)),
			Locals:       locals,
		})
	}
	return out
}

func (v *VPP) addDelIdentityMapping(req *nat44_ed.Nat44AddDelIdentityMapping) []api.Message {
	return reply(&nat44_ed.Nat44AddDelIdentityMappingReply{}, v.addDelIdentity(req))
}

func (v *VPP) addDelIdentity(req *nat44_ed.Nat44AddDelIdentityMapping) api.VPPApiError {
	n := v.nat
	if !n.enabled {
		return api.UNSUPPORTED
	}
	addrOnly := req.Flags&nat_types.NAT_IS_ADDR_ONLY != 0
	key := o2iKey{addr: ip4(req.IPAddress), port: req.Port, proto: req.Protocol}
	if addrOnly {
		key.port, key.proto = 0, 0
	}
	vrf := n.vrfOrInside(req.VrfID)
	tag := cut(req.Tag)
	if swIf := uint32(req.SwIfIndex); swIf != noIndex {
		// sw_if_index 0 (govpp's zero value) is local0: the IP given is
		// ignored and the record waits for an address local0 never gets.
		rec := resolveRecord{
			identity: true, swIf: swIf, addrOnly: addrOnly, eport: key.port, proto: key.proto,
			vrf: req.VrfID, tag: tag,
		}
		return v.resolveAddDel(rec, req.IsAdd, func(a netip.Addr) api.VPPApiError {
			k := key
			k.addr = a
			return n.addDelIdentityKey(k, addrOnly, vrf, tag, req.IsAdd)
		})
	}
	return n.addDelIdentityKey(key, addrOnly, vrf, tag, req.IsAdd)
}

func (n *natState) addDelIdentityKey(key o2iKey, addrOnly bool, vrf uint32, tag string, add bool) api.VPPApiError {
	id := n.identities[key]
	if !add {
		// Delete must match a local's VRF; the tag is ignored.
		if id == nil {
			return api.NO_SUCH_ENTRY
		}
		return n.delIdentityVRF(id, vrf)
	}
	if _, static := n.statics[key]; static {
		return api.VALUE_EXIST
	}
	if id == nil {
		n.identities[key] = &identityMapping{key: key, addrOnly: addrOnly, tag: tag, vrfs: []uint32{vrf}}
		n.addMapping(key)
		return 0
	}
	// The same key in another VRF is another local of one mapping.
	if slices.Contains(id.vrfs, vrf) {
		return api.VALUE_EXIST
	}
	id.vrfs = append(id.vrfs, vrf)
	return 0
}

func (n *natState) delIdentityVRF(id *identityMapping, vrf uint32) api.VPPApiError {
	i := slices.Index(id.vrfs, vrf)
	if i < 0 {
		return api.NO_SUCH_ENTRY
	}
	id.vrfs = slices.Delete(id.vrfs, i, i+1)
	if len(id.vrfs) == 0 {
		n.delMapping(id.key)
	}
	return 0
}

func (v *VPP) identityMappingDump(*nat44_ed.Nat44IdentityMappingDump) []api.Message {
	var out []api.Message
	n := v.nat
	for _, key := range n.mappingSlots.all() {
		id := n.identities[key]
		if id == nil {
			continue
		}
		var flags nat_types.NatConfigFlags
		if id.addrOnly {
			flags = nat_types.NAT_IS_ADDR_ONLY
		}
		for _, vrf := range id.vrfs {
			out = append(out, &nat44_ed.Nat44IdentityMappingDetails{
				Flags:     flags,
				IPAddress: toIP4(id.key.addr),
				Protocol:  id.key.proto,
				Port:      id.key.port,
				SwIfIndex: interface_types.InterfaceIndex(noIndex),
				VrfID:     vrf,
				Tag:       id.tag,
			})
		}
	}
	for _, r := range n.resolve {
		if !r.identity {
			continue
		}
		d := &nat44_ed.Nat44IdentityMappingDetails{
			Protocol:  r.proto,
			Port:      r.eport,
			SwIfIndex: interface_types.InterfaceIndex(r.swIf),
			VrfID:     r.vrf,
			Tag:       r.tag,
		}
		if r.addrOnly {
			d.Flags = nat_types.NAT_IS_ADDR_ONLY
		}
		out = append(out, d)
	}
	return out
}
