package cnat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// ErrInvalid marks a call VPP refused as invalid: retrying the same call
// cannot succeed, so it is reported per object (Failures) and not retried
// until the object changes or a full apply runs. Errors not wrapping it are
// transient and healed by the controller's resync. It is
// servicerenderer.ErrInvalid, which both renderers share.
var ErrInvalid = servicerenderer.ErrInvalid

// ErrNoInterface marks a call naming an interface VPP does not have (it
// wraps ErrInvalid too). Disabling the features of such an interface
// succeeds in effect: VPP drops them with the interface.
// It is servicerenderer.ErrNoInterface, which both renderers share.
var ErrNoInterface = servicerenderer.ErrNoInterface

// ErrNoTable marks a route into a FIB table VPP does not have (yet): it
// wraps ErrInvalid too. After a VPP restart the pod VRF's table comes with
// the startup configuration, seconds after the API answers (FACTS §6): the
// route waits for it (PendingTables), as an interface's configuration
// waits for the interface. It is servicerenderer.ErrNoTable, which NAT44
// shares.
var ErrNoTable = servicerenderer.ErrNoTable

// ErrNotFound marks a delete of something VPP does not hold (it wraps
// ErrInvalid too): the delete is done in effect.
var ErrNotFound = errors.New("VPP holds no such entry")

// Protocol re-exports the renderer API's protocol.
type Protocol = servicerenderer.Protocol

// Key identifies a translation in VPP: cnat keys translations by VIP
// address, port and protocol (an update on an existing key replaces it).
type Key struct {
	IP    netip.Addr
	Port  uint16
	Proto Protocol
}

// String is "ip:port/proto".
func (k Key) String() string {
	return netip.AddrPortFrom(k.IP, k.Port).String() + "/" + k.Proto.String()
}

// Compare orders keys by IP, port, protocol.
func (k Key) Compare(o Key) int {
	return cmp.Or(k.IP.Compare(o.IP), cmp.Compare(k.Port, o.Port), cmp.Compare(k.Proto, o.Proto))
}

// Path is one backend of a translation: its dst_ep. Every path the
// renderer builds has the unspecified source (0.0.0.0 or ::) and ~0
// interfaces. A backend weighs more by being repeated.
type Path struct {
	IP   netip.Addr
	Port uint16
}

// Compare orders paths by IP, port.
func (p Path) Compare(o Path) int {
	return cmp.Or(p.IP.Compare(o.IP), cmp.Compare(p.Port, o.Port))
}

// LBType is cnat's load-balancing algorithm of a translation.
type LBType uint8

// The load-balancing types (binapi cnat_lb_type).
const (
	LBDefault LBType = 0
	LBMaglev  LBType = 1
)

// FlowHash is the flow-hash configuration of a translation
// (ip_flow_hash_config_v2); 0 means VPP's default 5-tuple hash.
type FlowHash uint32

// FlowHashSrcIP hashes on the client's address only: stateless client-IP
// stickiness (FACTS §6).
const FlowHashSrcIP FlowHash = 1

// Translation is one cnat translation, as the renderer builds it.
type Translation struct {
	Key
	// Paths are sorted; a path repeated n times weighs n. Never empty: a
	// translation with no path crashes VPP 25.02 (FACTS §1).
	Paths []Path
	// RealIP (is_real_ip) is set when the VIP is one of this node's own
	// addresses (NodePorts). VPP never dumps it: the renderer derives it.
	RealIP bool
	// LB and FlowHash are set at creation only (VPP ignores them on an
	// update): a change is a delete and a re-add. VPP dumps LB but never
	// FlowHash: the renderer derives it from LB (Maglev only with affinity).
	LB       LBType
	FlowHash FlowHash
}

// Equal tells whether two translations (either may be nil) are equal.
func (t *Translation) Equal(o *Translation) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.Key == o.Key && t.RealIP == o.RealIP && t.LB == o.LB && t.FlowHash == o.FlowHash &&
		slices.Equal(t.Paths, o.Paths)
}

// String describes the translation.
func (t *Translation) String() string {
	return fmt.Sprintf("%s lb=%d fhc=%d real=%v paths=%d", t.Key, t.LB, t.FlowHash, t.RealIP, len(t.Paths))
}

// Dumped is one translation as cnat_translation_dump returns it: VPP's id
// (a pool index, reused last-in-first-out after a delete), the key, the
// LB type and the destinations of the paths. Flags, is_real_ip and
// flow_hash_config are never returned.
type Dumped struct {
	ID uint32
	Key
	LB LBType
	// Paths are in VPP's order. Interface-based paths (never the
	// renderer's) have an invalid IP.
	Paths []Path
}

// Feature is one cnat graph node on one interface; features combine.
type Feature uint8

// The cnat features (feature_enable_disable arc and node names in
// FeatureArc and FeatureNode).
const (
	FeatureInput4 Feature = 1 << iota
	FeatureOutput4
	FeatureInput6
	FeatureOutput6
)

// AllFeatures lists each feature, in the order they are enabled.
var AllFeatures = []Feature{FeatureInput4, FeatureOutput4, FeatureInput6, FeatureOutput6}

// FeatureArc is the feature arc of a single feature.
func FeatureArc(f Feature) string {
	switch f {
	case FeatureInput4:
		return "ip4-unicast"
	case FeatureOutput4:
		return "ip4-output"
	case FeatureInput6:
		return "ip6-unicast"
	case FeatureOutput6:
		return "ip6-output"
	}
	return ""
}

// FeatureNode is the graph node name of a single feature.
func FeatureNode(f Feature) string {
	switch f {
	case FeatureInput4:
		return "cnat-input-ip4"
	case FeatureOutput4:
		return "cnat-output-ip4"
	case FeatureInput6:
		return "cnat-input-ip6"
	case FeatureOutput6:
		return "cnat-output-ip6"
	}
	return ""
}

// SNATPolicy is cnat's source-NAT policy (cnat_snat_policies).
type SNATPolicy uint8

// The policies; the renderer uses K8S.
const (
	PolicyNone  SNATPolicy = 0
	PolicyIfPfx SNATPolicy = 1
	PolicyK8S   SNATPolicy = 2
)

// SNATTable is a table of the K8S source-NAT policy (cnat_snat_policy_table).
type SNATTable uint8

// The tables; pod interfaces go into IncludeV4 and Pod (IncludeV6 too
// with IPv6).
const (
	TableIncludeV4 SNATTable = 0
	TableIncludeV6 SNATTable = 1
	TablePod       SNATTable = 2
	TableHost      SNATTable = 3
)

// Tables is a set of SNAT tables (bit 1<<table).
type Tables uint8

// Has tells whether the set holds t.
func (s Tables) Has(t SNATTable) bool { return s&(1<<t) != 0 }

// allTables lists the tables in the order they are added.
var allTables = []SNATTable{TableIncludeV4, TableIncludeV6, TablePod, TableHost}

// RouteKind is what a route does with the traffic it matches: the
// route kinds are servicerenderer's, which both renderers share.
type RouteKind = servicerenderer.RouteKind

// The route kinds (see servicerenderer.RouteKind).
const RouteDrop, RouteReject, RouteLookup = servicerenderer.RouteDrop, servicerenderer.RouteReject, servicerenderer.RouteLookup

// Route is a route on a prefix in one VRF (FIB table): a drop route on a
// service CIDR (Node.Routes), so that a packet to a service address no
// translation matched is dropped instead of following the default route
// (FACTS §4; see the package documentation for why cnat allows it), or a
// cluster IP's verdict route (BuildRoutes).
type Route struct {
	Prefix netip.Prefix
	VRF    uint32
	Kind   RouteKind `json:",omitempty"`
	// Table is the table a RouteLookup looks up (0 otherwise).
	Table uint32 `json:",omitempty"`
}

// String is "prefix vrf=N", then "reject" or "lookup table=T" for those
// kinds.
func (r Route) String() string {
	s := fmt.Sprintf("%v vrf=%d", r.Prefix, r.VRF)
	switch r.Kind {
	case RouteReject:
		s += " reject"
	case RouteLookup:
		s += fmt.Sprintf(" lookup table=%d", r.Table)
	}
	return s
}

// samePlace tells whether o is on r's prefix in r's VRF (VPP keeps one
// route there).
func (r Route) samePlace(o Route) bool { return r.VRF == o.VRF && r.Prefix == o.Prefix }

// Compare orders routes by VRF, prefix, kind, then table.
func (r Route) Compare(o Route) int {
	return cmp.Or(cmp.Compare(r.VRF, o.VRF), comparePrefix(r.Prefix, o.Prefix), cmp.Compare(r.Kind, o.Kind),
		cmp.Compare(r.Table, o.Table))
}

// Node is the node-wide cnat configuration. None of it can be read back
// from VPP but the SNAT addresses (cnat_get_snat_addresses) and the routes
// (ip_route_v2_dump).
type Node struct {
	// SNAT4 and SNAT6 are the source-NAT addresses (cnat_set_snat_addresses
	// with ~0 interface); an unset family is sent as 0.0.0.0 / ::.
	SNAT4, SNAT6 netip.Addr
	Policy       SNATPolicy
	// Exclude are the prefixes never source-NATed, sorted and masked.
	Exclude []netip.Prefix
	// Tables are the SNAT tables of each interface (pod interfaces).
	Tables map[string]Tables
	// Features are the cnat features of each interface.
	Features map[string]Feature
	// Routes are the drop routes of the service CIDRs, sorted
	// (Route.Compare). A full apply reads them back from VPP.
	Routes []Route `json:",omitempty"`
	// Verdicts are the services' verdict routes (BuildRoutes), sorted; set
	// in the views only (DesiredNode, AppliedNode), never in the record: a
	// full apply reads them back and owns them by key (see Apply).
	Verdicts []Route `json:",omitempty"`
}

// Clone is a deep copy.
func (n *Node) Clone() *Node {
	c := *n
	c.Exclude = slices.Clone(n.Exclude)
	c.Routes = slices.Clone(n.Routes)
	c.Verdicts = slices.Clone(n.Verdicts)
	c.Tables = cloneMap(n.Tables)
	c.Features = cloneMap(n.Features)
	return &c
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// configured tells whether n holds any configuration.
func (n *Node) configured() bool {
	return n.SNAT4.IsValid() || n.SNAT6.IsValid() || n.Policy != PolicyNone || len(n.Exclude) > 0 ||
		len(n.Tables) > 0 || len(n.Features) > 0 || len(n.Routes) > 0
}

// VPP is what the apply step needs from VPP. plugins/vpp implements it over
// govpp (CNAT); tests use a fake. Errors of VPP refusing a call as invalid
// wrap ErrInvalid; of a call naming an interface VPP lacks, ErrNoInterface.
type VPP interface {
	// UpdateTranslation creates the translation on t's key, or replaces
	// the paths (and flags) of the one there, keeping its id; it returns
	// the id. t has at least one path.
	UpdateTranslation(ctx context.Context, t *Translation) (id uint32, err error)
	// DeleteTranslation deletes the translation with this id (VPP answers
	// -6 when there is none).
	DeleteTranslation(ctx context.Context, id uint32) error
	// DumpTranslations reads every translation VPP holds.
	DumpTranslations(ctx context.Context) ([]Dumped, error)
	// SNATAddresses reads the source-NAT addresses (unset: 0.0.0.0 and ::).
	SNATAddresses(ctx context.Context) (ip4, ip6 netip.Addr, err error)
	// SetSNATAddresses sets the source-NAT addresses (interface ~0); an
	// invalid address is sent as the family's unspecified one.
	SetSNATAddresses(ctx context.Context, ip4, ip6 netip.Addr) error
	SetSNATPolicy(ctx context.Context, p SNATPolicy) error
	AddDelExcludePrefix(ctx context.Context, p netip.Prefix, add bool) error
	// AddDelSNATInterface adds an interface to a SNAT table or removes it;
	// it returns the sw_if_index the name had when the call was made.
	AddDelSNATInterface(ctx context.Context, ifName string, table SNATTable, add bool) (swIfIndex uint32, err error)
	// EnableDisableFeature enables or disables one feature (a single bit)
	// on an interface and returns the sw_if_index the name had. VPP does
	// not refuse enabling twice: the feature is then on the arc twice. The
	// renderer never does it.
	EnableDisableFeature(ctx context.Context, ifName string, f Feature, enable bool) (swIfIndex uint32, err error)
	// AddDelFIBRoute adds or deletes a route: one path of type DROP,
	// ICMP_PROHIBIT (a RouteReject; in table 0 only: in any other table it
	// crashes VPP 25.02, so it is refused as invalid unsent) or a lookup.
	// VPP answers 0 to adding an existing route and to deleting a missing
	// one.
	AddDelFIBRoute(ctx context.Context, r Route, add bool) error
	// DumpFIBRoutes reads the routes of the given VRFs whose only path drops,
	// rejects or looks up a table: IPv4 ones, and IPv6 ones too with ip6.
	DumpFIBRoutes(ctx context.Context, vrfs []uint32, ip6 bool) ([]Route, error)
}
