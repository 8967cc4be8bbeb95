package sim

import (
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
// ASSUMPTION: VPP takes any range; the sim refuses ranges past 65536
// addresses with "invalid value" to bound its memory.
const maxRange = 1 << 16

// defaultTimeouts are NAT44-ED's timeouts after enable.
var defaultTimeouts = nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60}

type poolAddr struct {
	addr netip.Addr
	vrf  uint32
}

// ifAddr is a nat44_add_del_interface_addr record: the interface's
// address is a pool address (twice-NAT pool if twice).
type ifAddr struct {
	idx   uint32
	twice bool
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
	buckets    uint32 // translation hash buckets: kept across disable
	insideVRF  uint32
	outsideVRF uint32
	forwarding bool
	timeouts   nat_types.NatTimeouts
	// pool and twicePool are the address pools in VPP's order: appended,
	// and a deleted address's place taken by the last one.
	pool      []poolAddr
	twicePool []poolAddr
	ifAddrs   []ifAddr
	// ifaces are the in/out features per interface, ifaceSlots their
	// records in VPP's pool order; output and outputSlots the same for
	// the output feature.
	ifaces      map[uint32]features
	ifaceSlots  slots[uint32]
	output      map[uint32]bool
	outputSlots slots[uint32]
	// Static, load-balanced and identity mappings share one pool
	// (mappingSlots, by key); statics holds the static and
	// load-balanced ones, identities the identity ones.
	statics      map[o2iKey]*staticMapping
	identities   map[o2iKey]*identityMapping
	mappingSlots slots[o2iKey]
	// resolve are the mappings bound to an interface's address
	// (external_sw_if_index / sw_if_index), in VPP's order.
	resolve []resolveRecord
	i2o     map[i2oKey]bool
}

func newNATState() *natState {
	return &natState{
		ifaces:     make(map[uint32]features),
		output:     make(map[uint32]bool),
		statics:    make(map[o2iKey]*staticMapping),
		identities: make(map[o2iKey]*identityMapping),
		i2o:        make(map[i2oKey]bool),
	}
}

// slots is a VPP pool: freed slots are reused, the one freed last first,
// and walks go in slot order.
type slots[T comparable] struct {
	items []T
	used  []bool
	free  []int
}

func (s *slots[T]) add(x T) {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.items[i], s.used[i] = x, true
		return
	}
	s.items = append(s.items, x)
	s.used = append(s.used, true)
}

func (s *slots[T]) remove(x T) {
	for i, it := range s.items {
		if s.used[i] && it == x {
			var zero T
			s.items[i], s.used[i] = zero, false
			s.free = append(s.free, i)
			return
		}
	}
}

// from lists the items from slot i on.
func (s *slots[T]) from(i int) []T {
	var out []T
	for ; i < len(s.items); i++ {
		if s.used[i] {
			out = append(out, s.items[i])
		}
	}
	return out
}

func (s *slots[T]) all() []T { return s.from(0) }

func ip4(a ip_types.IP4Address) netip.Addr { return netip.AddrFrom4(a) }

func toIP4(a netip.Addr) ip_types.IP4Address { return a.As4() }

// buckets is the translation hash size NAT44-ED derives from the session
// limit: the power of two nearest to sessions/2.5 (the lower one on a
// tie), as show_running_config reports it (262144 -> 131072,
// 64512 -> 32768, 5000 -> 2048).
func buckets(sessions uint32) uint32 {
	n := float64(sessions) / 2.5
	lo := uint64(1)
	for float64(lo*2) < n {
		lo *= 2
	}
	if hi := 2 * lo; float64(hi)-n < n-float64(lo) && hi <= uint64(^uint32(0)) {
		return uint32(hi)
	}
	return uint32(lo)
}

func (v *VPP) pluginEnableDisable(req *nat44_ed.Nat44EdPluginEnableDisable) []api.Message {
	r := &nat44_ed.Nat44EdPluginEnableDisableReply{}
	n := v.nat
	switch {
	case req.Enable && n.enabled:
		return reply(r, api.FEATURE_ALREADY_ENABLED)
	case !req.Enable && !n.enabled:
		return reply(r, api.FEATURE_ALREADY_DISABLED)
	}
	fresh := newNATState()
	fresh.buckets, fresh.timeouts = n.buckets, n.timeouts
	if req.Enable {
		// Enabling starts from the defaults: forwarding off, default
		// timeouts.
		fresh.enabled = true
		fresh.sessions = req.Sessions
		if fresh.sessions == 0 {
			fresh.sessions = defaultSessions
		}
		fresh.buckets = buckets(fresh.sessions)
		v.enablePlugin(fresh.sessions) // cost.go
		fresh.timeouts = defaultTimeouts
		fresh.insideVRF, fresh.outsideVRF = req.InsideVrf, req.OutsideVrf
	}
	// Disabling frees every mapping, address and interface feature.
	if !req.Enable {
		v.loseSessionsLocked() // sessions.go: disabling loses every session
	}
	v.nat = fresh
	return reply(r, 0)
}

func (v *VPP) forwardingEnableDisable(req *nat44_ed.Nat44ForwardingEnableDisable) []api.Message {
	// While the plugin is disabled the call succeeds and is lost.
	if v.nat.enabled {
		v.nat.forwarding = req.Enable
	}
	return reply(&nat44_ed.Nat44ForwardingEnableDisableReply{}, 0)
}

func (v *VPP) setTimeouts(req *nat44_ed.NatSetTimeouts) []api.Message {
	// While the plugin is disabled the call succeeds and is lost.
	if v.nat.enabled {
		v.nat.timeouts = nat_types.NatTimeouts{
			UDP: req.UDP, TCPEstablished: req.TCPEstablished, TCPTransitory: req.TCPTransitory, ICMP: req.ICMP,
		}
	}
	return reply(&nat44_ed.NatSetTimeoutsReply{}, 0)
}

func (v *VPP) setSessionLimit(req *nat44_ed.Nat44SetSessionLimit) []api.Message {
	r := &nat44_ed.Nat44SetSessionLimitReply{}
	switch {
	case !v.nat.enabled:
		// ASSUMPTION: refused while disabled, as every NAT config call.
		return reply(r, api.UNSUPPORTED)
	case !v.vrfExists(req.VrfID):
		return reply(r, api.UNSPECIFIED)
	}
	// The per-VRF limit is not reported by show_running_config.
	return reply(r, 0)
}

// vrfExists tells whether a FIB table exists: table 0, those of the
// interfaces and those added through the API.
func (v *VPP) vrfExists(vrf uint32) bool {
	if vrf == 0 || v.fib.tables[vrf] {
		return true
	}
	for _, i := range v.ifaces {
		if i.vrf == vrf {
			return true
		}
	}
	return false
}

func (v *VPP) showRunningConfig(*nat44_ed.Nat44ShowRunningConfig) []api.Message {
	n := v.nat
	return []api.Message{&nat44_ed.Nat44ShowRunningConfigReply{
		InsideVrf:           n.insideVRF,
		OutsideVrf:          n.outsideVRF,
		Sessions:            n.sessions,
		TranslationBuckets:  n.buckets,
		ForwardingEnabled:   n.forwarding,
		IpfixLoggingEnabled: true,
		Timeouts:            n.timeouts,
		Flags:               nat44_ed.NAT44_IS_ENDPOINT_DEPENDENT,
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
	if last.Less(first) {
		// An empty range: nothing to do.
		return 0
	}
	if count(first, last) > maxRange {
		return api.INVALID_VALUE
	}
	twice := req.Flags&nat_types.NAT_IS_TWICE_NAT != 0
	for a := first; ; a = a.Next() {
		var rv api.VPPApiError
		if req.IsAdd {
			rv = n.addPoolAddr(a, req.VrfID, twice)
		} else {
			rv = n.delPoolAddr(a, twice)
		}
		if rv != 0 || a == last {
			// A failing address stops the range; earlier ones stay done.
			return rv
		}
	}
}

func (n *natState) poolList(twice bool) *[]poolAddr {
	if twice {
		return &n.twicePool
	}
	return &n.pool
}

// addPoolAddr appends an address; one address is in a pool once, in
// whatever VRF.
func (n *natState) addPoolAddr(a netip.Addr, vrf uint32, twice bool) api.VPPApiError {
	list := n.poolList(twice)
	if slices.ContainsFunc(*list, func(p poolAddr) bool { return p.addr == a }) {
		return api.VALUE_EXIST
	}
	*list = append(*list, poolAddr{addr: a, vrf: vrf})
	return 0
}

// delPoolAddr deletes an address whatever its VRF; the last address
// takes its place.
func (n *natState) delPoolAddr(a netip.Addr, twice bool) api.VPPApiError {
	list := n.poolList(twice)
	i := slices.IndexFunc(*list, func(p poolAddr) bool { return p.addr == a })
	if i < 0 {
		return api.NO_SUCH_ENTRY
	}
	last := len(*list) - 1
	(*list)[i] = (*list)[last]
	*list = (*list)[:last]
	return 0
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

func (v *VPP) addDelInterfaceAddr(req *nat44_ed.Nat44AddDelInterfaceAddr) []api.Message {
	r := &nat44_ed.Nat44AddDelInterfaceAddrReply{}
	n := v.nat
	idx := uint32(req.SwIfIndex)
	// ASSUMPTION: the index is checked first; then, as every NAT
	// configuration call, refused while disabled.
	switch {
	case v.ifaces[idx] == nil:
		return reply(r, api.INVALID_SW_IF_INDEX)
	case !n.enabled:
		return reply(r, api.UNSUPPORTED)
	}
	rec := ifAddr{idx: idx, twice: req.Flags&nat_types.NAT_IS_TWICE_NAT != 0}
	i := slices.Index(n.ifAddrs, rec)
	addr := v.ifaceAddr(idx)
	if req.IsAdd {
		if i >= 0 {
			return reply(r, api.VALUE_EXIST)
		}
		n.ifAddrs = append(n.ifAddrs, rec)
		if addr.IsValid() {
			// ASSUMPTION: an address already in the pool stays as is.
			n.addPoolAddr(addr, noIndex, rec.twice)
		}
		return reply(r, 0)
	}
	if i < 0 {
		return reply(r, api.NO_SUCH_ENTRY)
	}
	// The record goes first; then the address, which may be gone
	// already (deleted by address): then the answer is "no such entry".
	n.ifAddrs = slices.Delete(n.ifAddrs, i, i+1)
	if addr.IsValid() {
		return reply(r, n.delPoolAddr(addr, rec.twice))
	}
	return reply(r, 0)
}

func (v *VPP) interfaceAddrDump(*nat44_ed.Nat44InterfaceAddrDump) []api.Message {
	var out []api.Message
	for _, rec := range v.nat.ifAddrs {
		d := &nat44_ed.Nat44InterfaceAddrDetails{SwIfIndex: interface_types.InterfaceIndex(rec.idx)}
		if rec.twice {
			d.Flags = nat_types.NAT_IS_TWICE_NAT
		}
		out = append(out, d)
	}
	return out
}

// natInterfaceRefusal is VPP's answer to a NAT44 interface request for
// idx before the request itself is read: an unknown index, then a plugin
// not enabled (ASSUMPTION: the index is checked before the plugin's
// state); 0 when neither.
func (v *VPP) natInterfaceRefusal(idx uint32) api.VPPApiError {
	switch {
	case v.ifaces[idx] == nil:
		return api.INVALID_SW_IF_INDEX
	case !v.nat.enabled:
		return api.UNSUPPORTED
	}
	return 0
}

func (v *VPP) interfaceAddDelFeature(req *nat44_ed.Nat44InterfaceAddDelFeature) []api.Message {
	r := &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
	idx, n := uint32(req.SwIfIndex), v.nat
	if rv := v.natInterfaceRefusal(idx); rv != 0 {
		return reply(r, rv)
	}
	// INSIDE|OUTSIDE means inside; no flag means outside.
	f := featOut
	if req.Flags&nat_types.NAT_IS_INSIDE != 0 {
		f = featIn
	}
	cur, ok := n.ifaces[idx]
	if req.IsAdd {
		if n.output[idx] {
			// NAT44-ED keeps in/out and output-feature interfaces apart.
			return reply(r, api.VALUE_EXIST)
		}
		if !ok {
			n.ifaceSlots.add(idx)
		}
		if f == featOut && cur&featOut == 0 {
			v.walkMappings(true)
		}
		// Adding a feature again is fine.
		n.ifaces[idx] = cur | f
		return reply(r, 0)
	}
	if ok && f == featOut {
		v.walkMappings(false) // by the request's side, as VPP does
	}
	switch {
	case !ok:
		return reply(r, api.NO_SUCH_ENTRY)
	case cur == featIn|featOut:
		n.ifaces[idx] = cur &^ f
	default:
		// As VPP does: removing either feature of a one-feature
		// interface removes the interface from NAT.
		delete(n.ifaces, idx)
		n.ifaceSlots.remove(idx)
	}
	return reply(r, 0)
}

func (v *VPP) interfaceDump(*nat44_ed.Nat44InterfaceDump) []api.Message {
	var out []api.Message
	for _, idx := range v.nat.ifaceSlots.all() {
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
	idx, n := uint32(req.SwIfIndex), v.nat
	if rv := v.natInterfaceRefusal(idx); rv != 0 {
		return reply(r, rv)
	}
	if req.IsAdd {
		if _, inOut := n.ifaces[idx]; inOut || n.output[idx] {
			return reply(r, api.VALUE_EXIST)
		}
		n.output[idx] = true
		n.outputSlots.add(idx)
		v.walkMappings(true)
		return reply(r, 0)
	}
	if !n.output[idx] {
		return reply(r, api.NO_SUCH_ENTRY)
	}
	v.walkMappings(false)
	delete(n.output, idx)
	n.outputSlots.remove(idx)
	return reply(r, 0)
}

// outputInterfaceGet walks the output-feature pool from the cursor (a
// pool index; ~0 starts over) and answers every remaining interface,
// then cursor ~0. An empty pool answers cursor 0; a cursor past the pool
// "invalid value".
func (v *VPP) outputInterfaceGet(req *nat44_ed.Nat44EdOutputInterfaceGet) []api.Message {
	s := &v.nat.outputSlots
	if len(s.items) == 0 {
		return []api.Message{&nat44_ed.Nat44EdOutputInterfaceGetReply{}}
	}
	cursor := req.Cursor
	if cursor == noIndex {
		cursor = 0
	}
	if cursor >= uint32(len(s.items)) {
		return []api.Message{withRetval(&nat44_ed.Nat44EdOutputInterfaceGetReply{Cursor: noIndex}, api.INVALID_VALUE)}
	}
	var out []api.Message
	for _, idx := range s.from(int(cursor)) {
		out = append(out, &nat44_ed.Nat44EdOutputInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(idx)})
	}
	return append(out, &nat44_ed.Nat44EdOutputInterfaceGetReply{Cursor: noIndex})
}

// dropInterface forgets the NAT44 features of a deleted interface.
func (n *natState) dropInterface(idx uint32) {
	if _, ok := n.ifaces[idx]; ok {
		delete(n.ifaces, idx)
		n.ifaceSlots.remove(idx)
	}
	if n.output[idx] {
		delete(n.output, idx)
		n.outputSlots.remove(idx)
	}
}
