package sim

import (
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	featureapi "go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
)

// cnat source NAT (addresses, policy, interface tables, exclude
// prefixes) and the cnat graph nodes on feature arcs, as VPP 25.02
// answered (corpus/cnat_snat.jsonl). Nothing of it is read back by the
// API but the SNAT addresses; CnatSnat and CnatFeatureCount read it for
// tests.

func (v *VPP) cnatSetSnatAddresses(req *cnat.CnatSetSnatAddresses) []api.Message {
	c := v.cnat
	c.snat4 = netip.AddrFrom4(req.SnatIP4)
	c.snat6 = netip.AddrFrom16(req.SnatIP6)
	c.snatIf = uint32(req.SwIfIndex)
	c.snatSet = true
	return reply(&cnat.CnatSetSnatAddressesReply{}, 0)
}

// snatAddrs are the SNAT addresses in use: those given, or with an
// interface (sw_if_index not ~0), that interface's addresses (recorded:
// host-vcup -> its IPv4 address and ::; an unknown index -> 0.0.0.0, ::,
// answered 0).
// ASSUMPTION: with an interface the given addresses are ignored (so
// sw_if_index 0, govpp's zero value, means local0: no address); the
// simulated interfaces have no IPv6 address.
func (v *VPP) snatAddrs() (ip4, ip6 netip.Addr) {
	c := v.cnat
	if c.snatIf == noIndex || !c.snatSet {
		return c.snat4, c.snat6
	}
	ip4 = v.ifaceAddr(c.snatIf)
	if !ip4.IsValid() {
		ip4 = netip.IPv4Unspecified()
	}
	return ip4, netip.IPv6Unspecified()
}

func (v *VPP) cnatGetSnatAddresses(*cnat.CnatGetSnatAddresses) []api.Message {
	ip4, ip6 := v.snatAddrs()
	return reply(&cnat.CnatGetSnatAddressesReply{
		SnatIP4: ip4.As4(), SnatIP6: ip6.As16(), SwIfIndex: interface_types.InterfaceIndex(v.cnat.snatIf),
	}, 0)
}

// cnatSetSnatPolicy: NONE, IF_PFX and K8S are set; any other value
// answers 1 (recorded for 3 and 7).
// ASSUMPTION: a refused value leaves the policy as it was.
func (v *VPP) cnatSetSnatPolicy(req *cnat.CnatSetSnatPolicy) []api.Message {
	r := &cnat.CnatSetSnatPolicyReply{}
	if req.Policy > cnat.CNAT_POLICY_K8S {
		return reply(r, 1)
	}
	v.cnat.policy = req.Policy
	return reply(r, 0)
}

// cnatSnatPolicyAddDelIf: tables 0..3 (INCLUDE_V4, INCLUDE_V6, POD,
// HOST); another table -> -7, an unknown interface -> -2; adding twice
// and deleting what is not there answer 0.
// ASSUMPTION: the interface is checked before the table.
func (v *VPP) cnatSnatPolicyAddDelIf(req *cnat.CnatSnatPolicyAddDelIf) []api.Message {
	r := &cnat.CnatSnatPolicyAddDelIfReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	if int(req.Table) >= cnatTables {
		return reply(r, api.INVALID_VALUE)
	}
	if req.IsAdd != 0 {
		v.cnat.tables[req.Table][idx] = true
	} else {
		delete(v.cnat.tables[req.Table], idx)
	}
	return reply(r, 0)
}

// cnatSnatPolicyAddDelExcludePfx keeps a set of prefixes, masked (a
// non-canonical prefix is its network's, recorded): adding twice answers
// 0 and one delete removes it; deleting a missing prefix answers 1.
func (v *VPP) cnatSnatPolicyAddDelExcludePfx(req *cnat.CnatSnatPolicyAddDelExcludePfx) []api.Message {
	r := &cnat.CnatSnatPolicyAddDelExcludePfxReply{}
	p := netip.PrefixFrom(anyAddr(req.Prefix.Address), int(req.Prefix.Len)).Masked()
	switch {
	case req.IsAdd != 0:
		v.cnat.exclude[p] = true
	case !v.cnat.exclude[p]:
		return reply(r, 1)
	default:
		delete(v.cnat.exclude, p)
	}
	return reply(r, 0)
}

// cnatFeatKey is one cnat node on one interface.
type cnatFeatKey struct {
	swIf uint32
	node string
}

// cnatArcs are the cnat graph nodes feature_enable_disable knows, with
// their arc (recorded: cnat-input-ip4 on ip4-unicast, cnat-output-ip4 on
// ip4-output, cnat-snat-ip4 on ip4-unicast, and the ip6 twins).
// ASSUMPTION: cnat-snat-ip6 is on ip6-unicast; the simulated VPP knows
// no other feature (another name or arc -> -7).
// cnatArcs2606 are the nodes VPP 26.06 adds (cnat_node_lookup.c).
var cnatArcs2606 = map[string]string{
	"cnat-lookup-ip4": "ip4-unicast", "cnat-lookup-ip6": "ip6-unicast",
	"cnat-writeback-ip4": "ip4-output", "cnat-writeback-ip6": "ip6-output",
}

var cnatArcs = map[string]string{
	"cnat-input-ip4":  "ip4-unicast",
	"cnat-output-ip4": "ip4-output",
	"cnat-snat-ip4":   "ip4-unicast",
	"cnat-input-ip6":  "ip6-unicast",
	"cnat-output-ip6": "ip6-output",
	"cnat-snat-ip6":   "ip6-unicast",
}

// featureEnableDisable puts a cnat node on an interface's arc or takes
// it off. Enabling is not idempotent: enabling twice answers 0 and puts
// the node on the arc twice (two disables needed); disabling what is not
// there answers 0. An unknown interface -> -2, an unknown node or the
// wrong arc -> -7.
// ASSUMPTION: the interface is checked first.
func (v *VPP) featureEnableDisable(req *featureapi.FeatureEnableDisable) []api.Message {
	r := &featureapi.FeatureEnableDisableReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	arc, ok := cnatArcs[req.FeatureName]
	if !ok && v.rel2606 {
		arc, ok = cnatArcs2606[req.FeatureName]
	}
	if !ok || arc != req.ArcName {
		return reply(r, api.INVALID_VALUE)
	}
	v.cnat.setFeature(cnatFeatKey{idx, req.FeatureName}, req.Enable)
	return reply(r, 0)
}

// setFeature puts a node on an interface's arc once more, or takes it
// off once.
func (c *cnatState) setFeature(k cnatFeatKey, enable bool) {
	switch {
	case enable:
		c.features[k]++
	case c.features[k] > 1:
		c.features[k]--
	default:
		delete(c.features, k)
	}
}

// CnatFeatureCount tells how many times a cnat node (e.g.
// "cnat-input-ip4") is on an interface's feature arc: 0 if not, 2 after
// two enables (VPP 25.02 lists it twice).
func (v *VPP) CnatFeatureCount(ifName, node string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	idx, ok := v.ifaceIndex(ifName)
	if !ok {
		return 0
	}
	return v.cnat.features[cnatFeatKey{idx, node}]
}

// CnatSnatPolicy is the cnat SNAT policy: 0 none, 1 IF_PFX, 2 K8S.
type CnatSnatPolicy uint8

// The policies cnat_set_snat_policy accepts.
const (
	CnatPolicyNone  CnatSnatPolicy = CnatSnatPolicy(cnat.CNAT_POLICY_NONE)
	CnatPolicyIfPfx CnatSnatPolicy = CnatSnatPolicy(cnat.CNAT_POLICY_IF_PFX)
	CnatPolicyK8s   CnatSnatPolicy = CnatSnatPolicy(cnat.CNAT_POLICY_K8S)
)

// CnatSnat is the cnat source-NAT state, which the API does not read back
// (but for the addresses).
type CnatSnat struct {
	// IP4 and IP6 are what cnat_get_snat_addresses answers (an
	// interface's address when SwIfIndex names one).
	IP4, IP6  netip.Addr
	SwIfIndex uint32
	Policy    CnatSnatPolicy
	// IncludeV4, IncludeV6, Pod and Host are the interface names in each
	// policy table (tables 0 to 3), sorted.
	IncludeV4, IncludeV6, Pod, Host []string
	// Exclude are the exclude prefixes (masked), sorted.
	Exclude []netip.Prefix
	// Flags are VPP 26.06's flags of the entry (NO_CLIENT 2,
	// USE_AS_DEFAULT 4); 0 on 25.02.
	Flags uint8
}

// CnatSnatState returns the cnat source-NAT state.
func (v *VPP) CnatSnatState() CnatSnat {
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.cnat
	s := CnatSnat{SwIfIndex: c.snatIf, Policy: CnatSnatPolicy(c.policy), Flags: c.snatFlags}
	s.IP4, s.IP6 = v.snatAddrs()
	names := func(t map[uint32]bool) []string {
		var out []string
		for idx := range t {
			out = append(out, v.ifaceName(idx))
		}
		slices.Sort(out)
		return out
	}
	s.IncludeV4, s.IncludeV6 = names(c.tables[cnat.CNAT_POLICY_INCLUDE_V4]), names(c.tables[cnat.CNAT_POLICY_INCLUDE_V6])
	s.Pod, s.Host = names(c.tables[cnat.CNAT_POLICY_POD]), names(c.tables[cnat.CNAT_POLICY_HOST])
	for p := range c.exclude {
		s.Exclude = append(s.Exclude, p)
	}
	slices.SortFunc(s.Exclude, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return s
}

// excluded tells whether an address is in an exclude prefix.
func (c *cnatState) excluded(a netip.Addr) bool {
	for p := range c.exclude {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// dropInterface forgets a deleted interface's cnat nodes and SNAT policy
// table entries.
// ASSUMPTION: VPP drops them with the interface (unrecorded); a new
// interface that gets the freed index starts without them.
func (c *cnatState) dropInterface(idx uint32) {
	for k := range c.features {
		if k.swIf == idx {
			delete(c.features, k)
		}
	}
	for _, t := range c.tables {
		delete(t, idx)
	}
}
