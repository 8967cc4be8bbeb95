package nat44

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"

	"contiv.dev/vpp/servicerenderer"
)

// ErrInvalid marks a call VPP refused as invalid: retrying the same call
// cannot succeed, so it is reported per object and not retried. Errors not
// wrapping ErrInvalid are transient and healed by the controller's resync.
// It is servicerenderer.ErrInvalid, which both renderers share.
var ErrInvalid = servicerenderer.ErrInvalid

// ErrNoInterface marks a call naming an interface VPP does not have (it
// wraps ErrInvalid too). Removing the features of such an interface
// succeeds in effect: VPP drops an interface's features with it, so the
// renderer records the removal as done.
// It is servicerenderer.ErrNoInterface, which both renderers share.
var ErrNoInterface = servicerenderer.ErrNoInterface

// ErrNoTable marks a route into a FIB table VPP does not have (yet): it
// wraps ErrInvalid too. The route waits for the table (PendingTables), as
// an interface's features wait for the interface. It is
// servicerenderer.ErrNoTable, which cnat shares.
var ErrNoTable = servicerenderer.ErrNoTable

// Protocol re-exports the renderer API's protocol.
type Protocol = servicerenderer.Protocol

// TwiceNAT selects how a mapping rewrites the source address.
type TwiceNAT uint8

// The twice-NAT modes.
const (
	// TwiceNATOff never rewrites the source.
	TwiceNATOff TwiceNAT = iota
	// TwiceNATOn always rewrites the source to a twice-NAT pool address.
	TwiceNATOn
	// TwiceNATSelf rewrites the source only when a backend reaches itself.
	TwiceNATSelf
)

// Features are the NAT44 features enabled on one interface.
type Features uint8

// Interface features; In and Out may combine.
const (
	FeatureIn Features = 1 << iota
	FeatureOut
	// FeatureOutput is the output feature (SNAT of traffic leaving the
	// interface), used on the default interface.
	FeatureOutput
)

// Timeouts are NAT44-ED session timeouts in seconds.
type Timeouts struct {
	UDP            uint32
	TCPEstablished uint32
	TCPTransitory  uint32
	ICMP           uint32
}

// Global is the plugin-wide NAT44-ED configuration.
type Global struct {
	// SessionLimit is the per-thread session limit given at enable.
	SessionLimit uint32
	Forwarding   bool
	Timeouts     Timeouts
}

// PoolAddress is one address of the NAT pool or the twice-NAT pool.
type PoolAddress struct {
	IP       netip.Addr
	VRF      uint32
	TwiceNAT bool
}

// MappingKey identifies a static or load-balanced mapping in VPP: its
// external address (NAT44 maps IPv4 only), port and protocol; 8 bytes
// without a pointer.
type MappingKey struct {
	IP    IPv4
	Port  uint16
	Proto Protocol
}

// IPv4 is an IPv4 address in its 4 bytes: NAT44 translates IPv4 only, and
// a Local holding one takes 12 bytes without a pointer where a netip.Addr
// made it 32 with one (600 000 locals at W(50 000): 7 MB, not 18, and
// nothing for the garbage collector to follow). It prints, orders and
// encodes (text, JSON) as its netip.Addr does.
type IPv4 [4]byte

// IPv4Of is a as an IPv4 (an IPv4-mapped IPv6 address unmapped); false
// when a is not IPv4.
func IPv4Of(a netip.Addr) (IPv4, bool) {
	a = a.Unmap()
	if !a.Is4() {
		return IPv4{}, false
	}
	return a.As4(), true
}

// MustIPv4 is IPv4Of(a), which must be IPv4: it panics otherwise.
func MustIPv4(a netip.Addr) IPv4 {
	ip, ok := IPv4Of(a)
	if !ok {
		panic("nat44: " + a.String() + " is not an IPv4 address")
	}
	return ip
}

// MustParseIPv4 is the IPv4 address s; it panics when s is none.
func MustParseIPv4(s string) IPv4 { return MustIPv4(netip.MustParseAddr(s)) }

// Addr is the address as a netip.Addr.
func (a IPv4) Addr() netip.Addr { return netip.AddrFrom4(a) }

// String is the dotted decimal form.
func (a IPv4) String() string { return a.Addr().String() }

// Compare orders addresses as netip.Addr.Compare orders IPv4 addresses.
func (a IPv4) Compare(b IPv4) int {
	return cmp.Compare(binary.BigEndian.Uint32(a[:]), binary.BigEndian.Uint32(b[:]))
}

// MarshalText is the dotted decimal form, as netip.Addr's.
func (a IPv4) MarshalText() ([]byte, error) { return a.Addr().MarshalText() }

// UnmarshalText reads the dotted decimal form; an IPv6 address is refused.
func (a *IPv4) UnmarshalText(b []byte) error {
	var ip netip.Addr
	if err := ip.UnmarshalText(b); err != nil {
		return err
	}
	v, ok := IPv4Of(ip)
	if !ok {
		return fmt.Errorf("nat44: %q is not an IPv4 address", b)
	}
	*a = v
	return nil
}

// Local is one backend of a mapping: 12 bytes, no pointer.
type Local struct {
	IP   IPv4
	Port uint16
	// Probability is the weight of this local among the mapping's locals;
	// a plain static mapping (one local) has none in VPP, and it is not
	// compared there. VPP never picks a local with probability 0.
	Probability uint8
	VRF         uint32
}

// Placeholder is the probability-0 local 0.0.0.0:0 (VRF 0) that keeps a
// frontend with one backend a load-balanced mapping: VPP never picks it,
// and it lets the mapping go 2→1→2 backends by local operations only.
// It is the zero Local.
// ASSUMPTION: its VRF is 0; FACTS §3 measured 0.0.0.0:0 without naming
// the VRF, and VPP accepts locals in any VRF (FACTS §2).
var Placeholder = Local{}

// IsPlaceholder tells whether l is the placeholder local.
func (l Local) IsPlaceholder() bool { return l == Placeholder }

// MaxLocalsPerAdd is the most locals one nat44_add_del_lb_static_mapping
// may carry: VPP 25.02 aborts on 256 or more (FACTS §1). A bigger mapping
// is created with this many and grown one local at a time.
const MaxLocalsPerAdd = 255

// Mapping is a load-balanced static mapping (two or more locals), as the
// agent builds them, or a plain static mapping (one local), as an older
// agent made them and a dump may still show; always out2in-only.
type Mapping struct {
	MappingKey
	// Locals are sorted by IP, port, VRF.
	Locals   []Local
	TwiceNAT TwiceNAT
	// external is set on a built mapping of an external or LoadBalancer IP
	// (it drives the source-NAT objects of that IP); cut, on one that
	// leaves endpoints out to fit MaxProbabilitySum (its Subset is the
	// renderer's, by service: Renderer.cuts). Neither is compared. (They
	// lie next to TwiceNAT, in its padding: a Mapping takes 56 bytes, and
	// a claim on it, with its frontend's pointer, one cache line.)
	external, cut bool
	// Affinity is the session-affinity timeout in seconds; 0 = none. VPP's
	// dump never returns it: the agent records it in the tag (AffinityTag)
	// and reads it back from there. A plain static mapping has none.
	Affinity uint32
	// Tag names the owner (and the affinity); the agent only touches
	// mappings it tagged.
	Tag string
}

// IdentityKey identifies an identity mapping (port 0 = address only, and
// then Proto is 0).
type IdentityKey struct {
	IP    netip.Addr
	Port  uint16
	Proto Protocol
	VRF   uint32
}

// Identity is an identity mapping: traffic to it is never translated.
type Identity struct {
	IdentityKey
	Tag string
}

// IPv4Prefix is an IPv4 prefix in 5 bytes without a pointer (the agent's
// routes are IPv4: a RouteKey holding one is 12 bytes, not 40 with a
// pointer). As a netip.Prefix, it keeps its address as given (Masked masks
// it), its zero value is invalid, and it prints and encodes alike.
type IPv4Prefix struct {
	addr IPv4
	// bitsPlusOne is the prefix length plus one; 0 for the invalid prefix.
	bitsPlusOne uint8
}

// IPv4PrefixOf is p as an IPv4Prefix; false when p is not a valid IPv4
// prefix (an IPv4-mapped IPv6 prefix is not).
func IPv4PrefixOf(p netip.Prefix) (IPv4Prefix, bool) {
	if !p.IsValid() || !p.Addr().Is4() {
		return IPv4Prefix{}, false
	}
	return IPv4Prefix{addr: p.Addr().As4(), bitsPlusOne: uint8(p.Bits() + 1)}, true
}

// MustIPv4Prefix is IPv4PrefixOf(p), which must be IPv4: it panics otherwise.
func MustIPv4Prefix(p netip.Prefix) IPv4Prefix {
	v, ok := IPv4PrefixOf(p)
	if !ok {
		panic("nat44: " + p.String() + " is not an IPv4 prefix")
	}
	return v
}

// MustParseIPv4Prefix is the IPv4 prefix s; it panics when s is none.
func MustParseIPv4Prefix(s string) IPv4Prefix { return MustIPv4Prefix(netip.MustParsePrefix(s)) }

// AsPrefix is the prefix as a netip.Prefix (invalid when p is).
func (p IPv4Prefix) AsPrefix() netip.Prefix {
	if p.bitsPlusOne == 0 {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(p.Addr(), p.Bits())
}

// IsValid tells whether p is a prefix (the zero IPv4Prefix is not).
func (p IPv4Prefix) IsValid() bool { return p.bitsPlusOne != 0 }

// Addr is the prefix's address (the zero netip.Addr when p is invalid).
func (p IPv4Prefix) Addr() netip.Addr {
	if p.bitsPlusOne == 0 {
		return netip.Addr{}
	}
	return p.addr.Addr()
}

// Bits is the prefix length; -1 when p is invalid.
func (p IPv4Prefix) Bits() int { return int(p.bitsPlusOne) - 1 }

// Masked is p with the bits past its length cleared.
func (p IPv4Prefix) Masked() IPv4Prefix {
	if p.bitsPlusOne == 0 {
		return p
	}
	return MustIPv4Prefix(p.AsPrefix().Masked())
}

// String is "a.b.c.d/n", "invalid Prefix" when p is invalid, as netip's.
func (p IPv4Prefix) String() string { return p.AsPrefix().String() }

// MarshalText is netip.Prefix's text form.
func (p IPv4Prefix) MarshalText() ([]byte, error) { return p.AsPrefix().MarshalText() }

// UnmarshalText reads netip.Prefix's text form; an IPv6 prefix is refused.
func (p *IPv4Prefix) UnmarshalText(b []byte) error {
	var np netip.Prefix
	if err := np.UnmarshalText(b); err != nil {
		return err
	}
	if !np.IsValid() {
		*p = IPv4Prefix{}
		return nil
	}
	v, ok := IPv4PrefixOf(np)
	if !ok {
		return fmt.Errorf("nat44: %q is not an IPv4 prefix", b)
	}
	*p = v
	return nil
}

// RouteKey identifies a FIB route: its prefix in one VRF (FIB table). It
// is 12 bytes without a pointer (the agent's routes are IPv4).
type RouteKey struct {
	Prefix IPv4Prefix
	VRF    uint32
}

// RouteKind is what a route does with the traffic it matches: the
// route kinds are servicerenderer's, which both renderers share.
type RouteKind = servicerenderer.RouteKind

// The route kinds (see servicerenderer.RouteKind).
const RouteDrop, RouteReject, RouteLookup = servicerenderer.RouteDrop, servicerenderer.RouteReject, servicerenderer.RouteLookup

// Route is a FIB route the agent owns (see RouteKind).
type Route struct {
	RouteKey
	Kind RouteKind
	// Table is the table a RouteLookup looks up (0 otherwise).
	Table uint32
}

// State is a complete NAT44 configuration: what the agent wants (desired)
// or what VPP holds (dumped).
type State struct {
	Global Global
	// Pool is sorted (PoolAddress.Compare).
	Pool       []PoolAddress
	Interfaces map[string]Features
	Mappings   map[MappingKey]*Mapping
	Identities map[IdentityKey]*Identity
	// Routes are the agent's routes (Dump leaves it empty: routes are
	// read by DumpRoutes).
	Routes map[RouteKey]*Route
}

// VPP is what the apply step needs from VPP. plugins/vpp implements it over
// govpp; tests use the simulated VPP. Errors from VPP rejecting a call as
// invalid wrap ErrInvalid.
type VPP interface {
	// SetGlobal enables the plugin (if needed) and sets forwarding and timeouts.
	SetGlobal(ctx context.Context, g Global) error
	AddDelPoolAddress(ctx context.Context, a PoolAddress, add bool) error
	// SetInterfaceFeatures changes the features of one interface from old
	// to new; it returns the sw_if_index the name had (0 if unresolved).
	SetInterfaceFeatures(ctx context.Context, ifName string, old, new Features) (swIfIndex uint32, err error)
	// AddDelMapping adds or deletes a whole mapping: a static mapping when it
	// has one local, a load-balanced one when it has more. A load-balanced
	// add carries 2 to MaxLocalsPerAdd locals, not all of probability 0.
	AddDelMapping(ctx context.Context, m *Mapping, add bool) error
	// AddDelLBLocal adds or removes one local of a load-balanced mapping in place.
	AddDelLBLocal(ctx context.Context, key MappingKey, l Local, add bool) error
	AddDelIdentity(ctx context.Context, id *Identity, add bool) error
	// AddDelRoute adds or deletes a route (an add on an existing prefix
	// replaces its path). It never sends an ICMP_UNREACH path outside
	// table 0, which crashes VPP 25.02: such a route is refused as invalid.
	AddDelRoute(ctx context.Context, r Route, add bool) error
	// Dump reads the whole NAT44 state VPP holds (Routes left empty).
	Dump(ctx context.Context) (*State, error)
	// DumpRoutes reads the routes of the given VRFs whose only path
	// drops, rejects or looks up another table, with their kind.
	DumpRoutes(ctx context.Context, vrfs []uint32) ([]Route, error)
}

// Compare orders pool addresses as the model keeps them: by IP, VRF, plain
// before twice-NAT. Dumps of VPP use it too, so states compare as slices.
func (a PoolAddress) Compare(b PoolAddress) int { return comparePool(a, b) }

// Compare orders locals as the model keeps them: by IP, port, VRF.
func (l Local) Compare(o Local) int { return compareLocals(l, o) }
