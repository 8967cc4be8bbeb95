package sim

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat_types"
)

// The transport protocols of packets and translations, as VPP's API
// numbers them.
const (
	TCP = ip_types.IP_API_PROTO_TCP
	UDP = ip_types.IP_API_PROTO_UDP
)

// ipProto is an IP protocol number as the API carries it.
func ipProto(p uint8) ip_types.IPProto { return ip_types.IPProto(p) }

// protoName names TCP and UDP as Kubernetes does ("TCP", "UDP"), any
// other protocol "unknown".
func protoName(p ip_types.IPProto) string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	}
	return "unknown"
}

// NAT44State is the NAT44-ED configuration the simulated VPP holds
// (Snapshot).
type NAT44State struct {
	Global NAT44Global
	// Pool are the NAT pool and twice-NAT pool addresses.
	Pool []PoolAddress
	// Interfaces are the NAT44 features of each interface, by name.
	Interfaces map[string]NAT44Features
	// Mappings are the static and load-balanced mappings.
	Mappings map[MappingKey]*Mapping
	// Identities are the identity mappings, one per VRF.
	Identities map[IdentityKey]*Identity
	// Routes are the routes added through the API that drop, reject or
	// look up another table.
	Routes []Route
}

// NAT44Global is the plugin-wide configuration: the per-thread session
// limit given at enable (0: disabled), forwarding and the timeouts.
type NAT44Global struct {
	SessionLimit uint32
	Forwarding   bool
	Timeouts     nat_types.NatTimeouts
}

// AnyVRF is the VRF ~0 of a pool address that serves every VRF.
const AnyVRF = ^uint32(0)

// PoolAddress is an address of the NAT pool, or of the twice-NAT pool.
type PoolAddress struct {
	IP       netip.Addr
	VRF      uint32
	TwiceNAT bool
}

// compare orders pool addresses by IP, VRF, the NAT pool's first.
func (a PoolAddress) compare(b PoolAddress) int {
	return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.VRF, b.VRF), cmpBool(a.TwiceNAT, b.TwiceNAT))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// NAT44Features are the NAT44 features of an interface.
type NAT44Features uint8

// The features.
const (
	FeatureIn     NAT44Features = 1 << iota // inside
	FeatureOut                              // outside
	FeatureOutput                           // output (nat44_ed_add_del_output_interface)
)

// MappingKey is a static or load-balanced mapping's external address,
// port and protocol (port 0 and protocol 0: address-only).
type MappingKey struct {
	IP    netip.Addr
	Port  uint16
	Proto ip_types.IPProto
}

// Mapping is a static mapping (one local) or a load-balanced one.
type Mapping struct {
	MappingKey
	Locals []Local
	// Flags are the twice-NAT flags of the mapping (NAT_IS_TWICE_NAT,
	// NAT_IS_SELF_TWICE_NAT), the others cleared.
	Flags    nat_types.NatConfigFlags
	Affinity uint32
	Tag      string
}

// Local is one local (backend) of a mapping; Probability is 0 for a
// static mapping's.
type Local struct {
	IP          netip.Addr
	Port        uint16
	Probability uint8
	VRF         uint32
}

// compare orders locals by IP, port and VRF.
func (l Local) compare(o Local) int {
	return cmp.Or(l.IP.Compare(o.IP), cmp.Compare(l.Port, o.Port), cmp.Compare(l.VRF, o.VRF))
}

// IdentityKey is an identity mapping's address, port, protocol (port and
// protocol 0: address-only) and VRF.
type IdentityKey struct {
	IP    netip.Addr
	Port  uint16
	Proto ip_types.IPProto
	VRF   uint32
}

// Identity is an identity mapping in one VRF.
type Identity struct {
	IdentityKey
	Tag string
}

// Lines is the state as sorted text, one line per object, in the form of
// the NAT44 renderer's golden files (so that tests compare what VPP holds
// with what the renderer wants): the plugin settings, pool addresses,
// interfaces, identity mappings, routes, then mappings.
func (s *NAT44State) Lines() []string {
	g := s.Global
	fwd := "off"
	if g.Forwarding {
		fwd = "on"
	}
	lines := []string{fmt.Sprintf("global forwarding=%s sessions=%d timeouts=udp:%d,tcp-established:%d,tcp-transitory:%d,icmp:%d",
		fwd, g.SessionLimit, g.Timeouts.UDP, g.Timeouts.TCPEstablished, g.Timeouts.TCPTransitory, g.Timeouts.ICMP)}
	pool := slices.Clone(s.Pool)
	slices.SortFunc(pool, PoolAddress.compare)
	for _, p := range pool {
		vrf := strconv.FormatUint(uint64(p.VRF), 10)
		if p.VRF == AnyVRF {
			vrf = "any"
		}
		line := "pool " + p.IP.String() + " vrf=" + vrf
		if p.TwiceNAT {
			line += " twice-nat"
		}
		lines = append(lines, line)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Interfaces)) {
		lines = append(lines, "interface "+name+" "+s.Interfaces[name].String())
	}
	ids := slices.SortedFunc(maps.Keys(s.Identities), func(a, b IdentityKey) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.VRF, b.VRF), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto))
	})
	for _, k := range ids {
		key := k.IP.String()
		if k.Port != 0 {
			key += ":" + strconv.Itoa(int(k.Port)) + "/" + protoName(k.Proto)
		}
		lines = append(lines, fmt.Sprintf("identity %s vrf=%d tag=%s", key, k.VRF, s.Identities[k].Tag))
	}
	routes := slices.Clone(s.Routes)
	slices.SortFunc(routes, func(a, b Route) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()), cmp.Compare(a.VRF, b.VRF))
	})
	for _, r := range routes {
		line := fmt.Sprintf("route %v vrf=%d", r.Prefix, r.VRF)
		switch {
		case r.Reject:
			line += " reject"
		case r.Lookup:
			line += fmt.Sprintf(" lookup table=%d", r.LookupVRF)
		default:
			line += " drop"
		}
		lines = append(lines, line)
	}
	keys := slices.SortedFunc(maps.Keys(s.Mappings), func(a, b MappingKey) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto))
	})
	for _, k := range keys {
		lines = append(lines, "mapping "+s.Mappings[k].String())
	}
	return lines
}

// String lists the features ("in,out"), "none" for none.
func (f NAT44Features) String() string {
	var parts []string
	for i, name := range []string{"in", "out", "output"} {
		if f&(1<<i) != 0 {
			parts = append(parts, name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// String is one line: "ip:port/proto", static (one local) or lb, the
// twice-NAT mode (off, on, self), the affinity of a load-balanced
// mapping, the tag and the locals ("ip:port vrf=N", with " p=N" for a
// load-balanced mapping's).
func (m *Mapping) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v:%d/%s", m.IP, m.Port, protoName(m.Proto))
	static := len(m.Locals) == 1
	if static {
		b.WriteString(" static")
	} else {
		b.WriteString(" lb")
	}
	twice := "off"
	switch {
	case m.Flags&nat_types.NAT_IS_TWICE_NAT != 0:
		twice = "on"
	case m.Flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0:
		twice = "self"
	}
	fmt.Fprintf(&b, " twice-nat=%s", twice)
	if !static {
		fmt.Fprintf(&b, " affinity=%d", m.Affinity)
	}
	fmt.Fprintf(&b, " tag=%s ->", m.Tag)
	for i, l := range m.Locals {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %v:%d vrf=%d", l.IP, l.Port, l.VRF)
		if !static {
			fmt.Fprintf(&b, " p=%d", l.Probability)
		}
	}
	return b.String()
}
