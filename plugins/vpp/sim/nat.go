package sim

import (
	"cmp"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// noIndex is VPP's "none" for interface indices and VRF IDs (~0).
const noIndex = ^uint32(0)

// defaultSessions is NAT44-ED's session limit when enabled with 0.
const defaultSessions = 63 * 1024

// maxRange bounds the address ranges the simulator accepts.
const maxRange = 1 << 16

// defaultTimeouts are NAT44-ED's timeouts after enable.
var defaultTimeouts = nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60}

// o2iKey is how NAT44-ED finds a static or identity mapping from the
// outside: external address, port and protocol (port and protocol 0 for
// address-only mappings).
type o2iKey struct {
	addr  netip.Addr
	port  uint16
	proto uint8
}

func compareO2I(a, b o2iKey) int {
	if c := a.addr.Compare(b.addr); c != 0 {
		return c
	}
	if c := cmp.Compare(a.port, b.port); c != 0 {
		return c
	}
	return cmp.Compare(a.proto, b.proto)
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
	locals   []local // in the order VPP received them
	affinity uint32
	tag      string
}

func (m *staticMapping) out2inOnly() bool { return m.flags&nat_types.NAT_IS_OUT2IN_ONLY != 0 }

// identityMapping is an identity mapping with its VRFs (VPP keeps one
// mapping per key and a "local" per VRF; the tag is the first one's).
type identityMapping struct {
	key      o2iKey
	addrOnly bool
	tag      string
	vrfs     []uint32
}

type poolAddr struct {
	addr netip.Addr
	vrf  uint32
}

// features are the in/out features of one interface.
type features uint8

const (
	featIn features = 1 << iota
	featOut
)

// natState is the NAT44-ED plugin's configuration.
type natState struct {
	enabled    bool
	sessions   uint32
	insideVRF  uint32
	outsideVRF uint32
	forwarding bool
	timeouts   nat_types.NatTimeouts
	pool       []poolAddr
	twicePool  []poolAddr
	ifaces     map[uint32]features
	output     map[uint32]bool
	statics    map[o2iKey]*staticMapping
	identities map[o2iKey]*identityMapping
	i2o        map[i2oKey]bool
}

func newNATState() *natState {
	return &natState{
		timeouts:   defaultTimeouts,
		ifaces:     make(map[uint32]features),
		output:     make(map[uint32]bool),
		statics:    make(map[o2iKey]*staticMapping),
		identities: make(map[o2iKey]*identityMapping),
		i2o:        make(map[i2oKey]bool),
	}
}

func ip4(a ip_types.IP4Address) netip.Addr { return netip.AddrFrom4(a) }

func toIP4(a netip.Addr) ip_types.IP4Address { return a.As4() }

// retvalAlreadyDone is what NAT44-ED answers when asked to enable an
// enabled plugin or disable a disabled one.
const retvalAlreadyDone api.VPPApiError = 1

func (v *VPP) pluginEnableDisable(req *nat44_ed.Nat44EdPluginEnableDisable) []api.Message {
	r := &nat44_ed.Nat44EdPluginEnableDisableReply{}
	if req.Enable == v.nat.enabled {
		return reply(r, retvalAlreadyDone)
	}
	fresh := newNATState()
	if req.Enable {
		fresh.enabled = true
		fresh.sessions = req.Sessions
		if fresh.sessions == 0 {
			fresh.sessions = defaultSessions
		}
		fresh.insideVRF, fresh.outsideVRF = req.InsideVrf, req.OutsideVrf
	}
	// Disabling frees every mapping, address and interface feature.
	v.nat = fresh
	v.loseSessionsLocked() // sessions.go: disabling loses every session
	return reply(r, 0)
}

func (v *VPP) forwardingEnableDisable(req *nat44_ed.Nat44ForwardingEnableDisable) []api.Message {
	v.nat.forwarding = req.Enable
	return reply(&nat44_ed.Nat44ForwardingEnableDisableReply{}, 0)
}

func (v *VPP) setTimeouts(req *nat44_ed.NatSetTimeouts) []api.Message {
	v.nat.timeouts = nat_types.NatTimeouts{
		UDP: req.UDP, TCPEstablished: req.TCPEstablished, TCPTransitory: req.TCPTransitory, ICMP: req.ICMP,
	}
	return reply(&nat44_ed.NatSetTimeoutsReply{}, 0)
}

func (v *VPP) showRunningConfig(*nat44_ed.Nat44ShowRunningConfig) []api.Message {
	n := v.nat
	return []api.Message{&nat44_ed.Nat44ShowRunningConfigReply{
		InsideVrf:         n.insideVRF,
		OutsideVrf:        n.outsideVRF,
		Sessions:          n.sessions,
		ForwardingEnabled: n.forwarding,
		Timeouts:          n.timeouts,
	}}
}

func (v *VPP) addDelAddressRange(req *nat44_ed.Nat44AddDelAddressRange) []api.Message {
	return reply(&nat44_ed.Nat44AddDelAddressRangeReply{}, v.nat.addDelAddressRange(req))
}

func (n *natState) addDelAddressRange(req *nat44_ed.Nat44AddDelAddressRange) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	first, last := ip4(req.FirstIPAddress), ip4(req.LastIPAddress)
	if first == netip.IPv4Unspecified() || last.Less(first) {
		return api.INVALID_VALUE
	}
	if count(first, last) > maxRange {
		return api.INVALID_VALUE
	}
	list := &n.pool
	if req.Flags&nat_types.NAT_IS_TWICE_NAT != 0 {
		list = &n.twicePool
	}
	for a := first; ; a = a.Next() {
		i := slices.IndexFunc(*list, func(p poolAddr) bool { return p.addr == a })
		switch {
		case req.IsAdd && i >= 0:
			return api.VALUE_EXIST
		case req.IsAdd:
			*list = append(*list, poolAddr{addr: a, vrf: req.VrfID})
		case i < 0:
			return api.NO_SUCH_ENTRY
		default:
			*list = slices.Delete(*list, i, i+1)
		}
		if a == last {
			return 0
		}
	}
}

// count is the number of addresses from first to last, capped past maxRange.
func count(first, last netip.Addr) int {
	n := 1
	for a := first; a != last && n <= maxRange; a = a.Next() {
		n++
	}
	return n
}

func (v *VPP) addressDump(*nat44_ed.Nat44AddressDump) []api.Message {
	var out []api.Message
	for _, p := range v.nat.pool {
		out = append(out, &nat44_ed.Nat44AddressDetails{IPAddress: toIP4(p.addr), VrfID: p.vrf})
	}
	for _, p := range v.nat.twicePool {
		out = append(out, &nat44_ed.Nat44AddressDetails{
			IPAddress: toIP4(p.addr), VrfID: p.vrf, Flags: nat_types.NAT_IS_TWICE_NAT,
		})
	}
	return out
}

func (v *VPP) interfaceAddDelFeature(req *nat44_ed.Nat44InterfaceAddDelFeature) []api.Message {
	r := &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	n := v.nat
	if !n.enabled {
		return reply(r, api.UNSUPPORTED)
	}
	f := featOut
	if req.Flags&nat_types.NAT_IS_INSIDE != 0 {
		f = featIn
	}
	if req.IsAdd {
		if n.output[idx] {
			// NAT44-ED keeps in/out and output-feature interfaces apart.
			return reply(r, api.VALUE_EXIST)
		}
		n.ifaces[idx] |= f
		return reply(r, 0)
	}
	cur, ok := n.ifaces[idx]
	switch {
	case !ok:
		return reply(r, api.NO_SUCH_ENTRY)
	case cur == featIn|featOut:
		n.ifaces[idx] = cur &^ f
	default:
		// As VPP does: removing either feature of a one-feature
		// interface removes the interface from NAT.
		delete(n.ifaces, idx)
	}
	return reply(r, 0)
}

func (v *VPP) interfaceDump(*nat44_ed.Nat44InterfaceDump) []api.Message {
	var out []api.Message
	for _, idx := range sortedKeys(v.nat.ifaces) {
		var flags nat_types.NatConfigFlags
		if v.nat.ifaces[idx]&featIn != 0 {
			flags |= nat_types.NAT_IS_INSIDE
		}
		if v.nat.ifaces[idx]&featOut != 0 {
			flags |= nat_types.NAT_IS_OUTSIDE
		}
		out = append(out, &nat44_ed.Nat44InterfaceDetails{Flags: flags, SwIfIndex: interface_types.InterfaceIndex(idx)})
	}
	return out
}

func (v *VPP) addDelOutputInterface(req *nat44_ed.Nat44EdAddDelOutputInterface) []api.Message {
	r := &nat44_ed.Nat44EdAddDelOutputInterfaceReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	n := v.nat
	if !n.enabled {
		return reply(r, api.UNSUPPORTED)
	}
	if req.IsAdd {
		if _, inOut := n.ifaces[idx]; inOut || n.output[idx] {
			return reply(r, api.VALUE_EXIST)
		}
		n.output[idx] = true
		return reply(r, 0)
	}
	if !n.output[idx] {
		return reply(r, api.NO_SUCH_ENTRY)
	}
	delete(n.output, idx)
	return reply(r, 0)
}

func (v *VPP) outputInterfaceGet(*nat44_ed.Nat44EdOutputInterfaceGet) []api.Message {
	var out []api.Message
	for _, idx := range sortedKeys(v.nat.output) {
		out = append(out, &nat44_ed.Nat44EdOutputInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(idx)})
	}
	return append(out, &nat44_ed.Nat44EdOutputInterfaceGetReply{Cursor: noIndex})
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// twiceNATFlags are the flags that select a twice-NAT mode.
const twiceNATFlags = nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT

// kept are the mapping flags the simulator stores.
const kept = twiceNATFlags | nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_ADDR_ONLY

func (v *VPP) addDelStaticMapping(req *nat44_ed.Nat44AddDelStaticMappingV2) []api.Message {
	return reply(&nat44_ed.Nat44AddDelStaticMappingV2Reply{}, v.cutSessions(v.planStaticCut(req), v.nat.addDelStatic(req))) // sessions.go
}

func (n *natState) addDelStatic(req *nat44_ed.Nat44AddDelStaticMappingV2) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	if uint32(req.ExternalSwIfIndex) != noIndex {
		// Mappings on an interface's address are not simulated.
		return api.UNSUPPORTED
	}
	flags := req.Flags & kept
	addrOnly := flags&nat_types.NAT_IS_ADDR_ONLY != 0
	if addrOnly && flags&twiceNATFlags != 0 {
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalIPAddress), port: req.ExternalPort, proto: req.Protocol}
	l := local{addr: ip4(req.LocalIPAddress), port: req.LocalPort, vrf: req.VrfID}
	if addrOnly {
		key.port, key.proto, l.port = 0, 0, 0
	}
	if l.vrf == noIndex {
		l.vrf = n.insideVRF
	}
	inside := i2oKey{addr: l.addr, port: l.port, vrf: l.vrf, proto: key.proto}
	if !req.IsAdd {
		m, ok := n.statics[key]
		switch {
		case !ok:
			return api.NO_SUCH_ENTRY
		case m.lb:
			return api.INVALID_VALUE
		}
		delete(n.statics, key)
		if !m.out2inOnly() {
			ml := m.locals[0]
			delete(n.i2o, i2oKey{addr: ml.addr, port: ml.port, vrf: ml.vrf, proto: key.proto})
		}
		return 0
	}
	if n.o2iTaken(key) {
		return api.VALUE_EXIST
	}
	if flags&nat_types.NAT_IS_OUT2IN_ONLY == 0 {
		if n.i2o[inside] {
			return api.VALUE_EXIST
		}
		n.i2o[inside] = true
	}
	n.statics[key] = &staticMapping{key: key, flags: flags, locals: []local{l}, tag: req.Tag}
	return 0
}

// o2iTaken tells whether a static, load-balanced or identity mapping
// already owns an external address:port/protocol.
func (n *natState) o2iTaken(key o2iKey) bool {
	_, s := n.statics[key]
	_, i := n.identities[key]
	return s || i
}

func (v *VPP) staticMappingDump(*nat44_ed.Nat44StaticMappingDump) []api.Message {
	var out []api.Message
	for _, m := range v.nat.sortedStatics(false) {
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
	return out
}

// sortedStatics lists the plain (lb false) or load-balanced mappings.
func (n *natState) sortedStatics(lb bool) []*staticMapping {
	var out []*staticMapping
	for _, m := range n.statics {
		if m.lb == lb {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *staticMapping) int { return compareO2I(a.key, b.key) })
	return out
}

func (v *VPP) addDelLBStaticMapping(req *nat44_ed.Nat44AddDelLbStaticMapping) []api.Message {
	return reply(&nat44_ed.Nat44AddDelLbStaticMappingReply{}, v.cutSessions(v.planLBCut(req), v.nat.addDelLB(req))) // sessions.go
}

func (n *natState) addDelLB(req *nat44_ed.Nat44AddDelLbStaticMapping) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}
	if !req.IsAdd {
		m, ok := n.statics[key]
		switch {
		case !ok:
			return api.NO_SUCH_ENTRY
		case !m.lb:
			return api.INVALID_VALUE
		}
		delete(n.statics, key)
		return 0
	}
	if n.o2iTaken(key) {
		return api.VALUE_EXIST
	}
	if len(req.Locals) < 2 {
		return api.INVALID_VALUE
	}
	locals := make([]local, 0, len(req.Locals))
	for _, rl := range req.Locals {
		l := local{addr: ip4(rl.Addr), port: rl.Port, vrf: rl.VrfID, prob: rl.Probability}
		if l.prob == 0 || slices.ContainsFunc(locals, l.same) {
			return api.INVALID_VALUE
		}
		locals = append(locals, l)
	}
	flags := req.Flags & kept &^ nat_types.NAT_IS_ADDR_ONLY
	if flags&nat_types.NAT_IS_OUT2IN_ONLY == 0 &&
		!slices.ContainsFunc(n.pool, func(p poolAddr) bool { return p.addr == key.addr }) {
		// Without out2in-only the external address must be in the NAT pool.
		return api.NO_SUCH_ENTRY
	}
	n.statics[key] = &staticMapping{
		key: key, flags: flags, lb: true, locals: locals, affinity: req.Affinity, tag: req.Tag,
	}
	return 0
}

// same tells whether two locals are the same backend (probability aside).
func (l local) same(o local) bool { return l.addr == o.addr && l.port == o.port && l.vrf == o.vrf }

func (v *VPP) lbStaticMappingAddDelLocal(req *nat44_ed.Nat44LbStaticMappingAddDelLocal) []api.Message {
	return reply(&nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}, v.cutSessions(v.planLocalCut(req), v.nat.lbLocal(req))) // sessions.go
}

func (n *natState) lbLocal(req *nat44_ed.Nat44LbStaticMappingAddDelLocal) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	key := o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}
	m, ok := n.statics[key]
	switch {
	case !ok:
		return api.NO_SUCH_ENTRY
	case !m.lb:
		return api.INVALID_VALUE
	}
	l := local{addr: ip4(req.Local.Addr), port: req.Local.Port, vrf: req.Local.VrfID, prob: req.Local.Probability}
	i := slices.IndexFunc(m.locals, l.same)
	if req.IsAdd {
		switch {
		case i >= 0:
			return api.VALUE_EXIST
		case l.prob == 0:
			return api.INVALID_VALUE
		}
		m.locals = append(m.locals, l)
		return 0
	}
	switch {
	case i < 0:
		return api.NO_SUCH_ENTRY
	case len(m.locals) < 3:
		// A load-balanced mapping keeps at least two locals.
		return api.UNSPECIFIED
	}
	m.locals = slices.Delete(m.locals, i, i+1)
	return 0
}

func (v *VPP) lbStaticMappingDump(*nat44_ed.Nat44LbStaticMappingDump) []api.Message {
	var out []api.Message
	for _, m := range v.nat.sortedStatics(true) {
		locals := make([]nat44_ed.Nat44LbAddrPort, 0, len(m.locals))
		for _, l := range m.locals {
			locals = append(locals, nat44_ed.Nat44LbAddrPort{
				Addr: toIP4(l.addr), Port: l.port, Probability: l.prob, VrfID: l.vrf,
			})
		}
		out = append(out, &nat44_ed.Nat44LbStaticMappingDetails{
			ExternalAddr: toIP4(m.key.addr),
			ExternalPort: m.key.port,
			Protocol:     m.key.proto,
			Flags:        m.flags,
			Affinity:     m.affinity,
			Tag:          m.tag,
			LocalNum:     uint32(len(locals)),
			Locals:       locals,
		})
	}
	return out
}

func (v *VPP) addDelIdentityMapping(req *nat44_ed.Nat44AddDelIdentityMapping) []api.Message {
	return reply(&nat44_ed.Nat44AddDelIdentityMappingReply{}, v.nat.addDelIdentity(req))
}

func (n *natState) addDelIdentity(req *nat44_ed.Nat44AddDelIdentityMapping) api.VPPApiError {
	if !n.enabled {
		return api.UNSUPPORTED
	}
	if uint32(req.SwIfIndex) != noIndex {
		// Identity mappings on an interface's address are not simulated.
		return api.UNSUPPORTED
	}
	addrOnly := req.Flags&nat_types.NAT_IS_ADDR_ONLY != 0
	key := o2iKey{addr: ip4(req.IPAddress), port: req.Port, proto: req.Protocol}
	if addrOnly {
		key.port, key.proto = 0, 0
	}
	vrf := req.VrfID
	if vrf == noIndex {
		vrf = n.insideVRF
	}
	id := n.identities[key]
	if !req.IsAdd {
		if id == nil {
			return api.NO_SUCH_ENTRY
		}
		i := slices.Index(id.vrfs, vrf)
		if i < 0 {
			return api.NO_SUCH_ENTRY
		}
		id.vrfs = slices.Delete(id.vrfs, i, i+1)
		if len(id.vrfs) == 0 {
			delete(n.identities, key)
		}
		return 0
	}
	if _, static := n.statics[key]; static {
		return api.VALUE_EXIST
	}
	if id == nil {
		n.identities[key] = &identityMapping{key: key, addrOnly: addrOnly, tag: req.Tag, vrfs: []uint32{vrf}}
		return 0
	}
	if slices.Contains(id.vrfs, vrf) {
		return api.VALUE_EXIST
	}
	id.vrfs = append(id.vrfs, vrf)
	return 0
}

func (v *VPP) identityMappingDump(*nat44_ed.Nat44IdentityMappingDump) []api.Message {
	var out []api.Message
	for _, id := range v.nat.sortedIdentities() {
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
	return out
}

func (n *natState) sortedIdentities() []*identityMapping {
	out := make([]*identityMapping, 0, len(n.identities))
	for _, id := range n.identities {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b *identityMapping) int { return compareO2I(a.key, b.key) })
	return out
}
