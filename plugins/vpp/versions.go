package vpp

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"

	cnat2606 "contiv.dev/vpp/internal/vppapi/vpp2606/cnat"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// ErrUnsupportedVersion marks a VPP of a release the agent has no
// bindings for; it wraps ErrIncompatible.
var ErrUnsupportedVersion = fmt.Errorf("%w: unsupported VPP version", ErrIncompatible)

// Release is a VPP release the agent has bindings for: what differs
// between releases in the messages the agent sends and in what VPP does
// with them (docs/vpp-versions.md). Conn picks one at every connect from
// the version VPP reports; the clients of this package ask the connection
// for the current one and build their requests with it, so the
// renderers' VPP interfaces are the same for every release.
type Release struct {
	// Name is the release, "25.02" or "26.06".
	Name string
	// rebind are this release's bindings of the messages whose govpp
	// v0.13.0 binding has another CRC, by message name.
	rebind map[string]api.Message
	// extra are messages this release needs besides the rebound ones
	// when the cnat messages are checked.
	cnatExtra []api.Message
	// cnatFeature: cnat is enabled on an interface with
	// feature_cnat_enable_disable (its 8 feature nodes) instead of
	// feature_enable_disable of each node.
	cnatFeature bool
	// rejectAnyTable: an ICMP_PROHIBIT/UNREACH path may be added in any
	// FIB table (VPP 25.02 crashes outside table 0, FACTS §1; fixed in
	// 26.02).
	rejectAnyTable bool
	// snatUnsetDisabled: cnat_get_snat_addresses answers
	// FEATURE_DISABLED (-30) while no SNAT address is set (26.06 keeps
	// them in a policy entry made by the first cnat_set_snat_addresses;
	// 25.02 answers zeros). Measured by the real-VPP suite.
	snatUnsetDisabled bool
	// snatV2: the SNAT addresses are set with cnat_set_snat_addresses_v2
	// (snatAddresses).
	snatV2 bool
	// cnatSessionTables: cnat keeps a session budget per table, given to a
	// table when an interface is bound to it after cnat's first use
	// (CNAT.giveSessionBudgets).
	cnatSessionTables bool
	// cnatUnsupported, when set, says why the cnat renderer does not work
	// on this release: the agent refuses such a VPP when it renders with
	// cnat (Config.AllowUnsupported overrides). No release sets it: 26.06's
	// was lifted once cnat passed every real-VPP scenario there with the
	// node configuration of docs/vpp-node.md section 8.
	cnatUnsupported string
}

// RejectInAnyTable tells whether reject routes may be added in a table
// other than 0 on this release.
func (r *Release) RejectInAnyTable() bool { return r.rejectAnyTable }

// release2502 is VPP 25.02: govpp v0.13.0's bindings serve every message
// (corpus connect.jsonl and cnat_compat.jsonl).
var release2502 = Release{Name: "25.02"}

// release2606 is VPP 26.06 (cnat.api 1.0.0): cnat_set_snat_policy has
// another CRC (CNAT_POLICY_DNAT added) and cnat is enabled through
// feature_cnat_enable_disable.
//
// ASSUMPTION (not yet recorded from a real 26.06): the CRCs are those
// vppapigen computes from the 26.06 archive's .api files
// (docs/vpp-versions.md), and feature_cnat_enable_disable enables
// cnat-input/cnat-lookup on ip4/ip6-unicast and cnat-output/
// cnat-writeback on ip4/ip6-output (src/plugins/cnat/cnat_types.c,
// cnat_sw_interface_enable_disable); reject routes outside table 0 work
// (the fix of 26.02).
var release2606 = Release{
	Name: "26.06",
	rebind: map[string]api.Message{
		"cnat_set_snat_policy":       &cnat2606.CnatSetSnatPolicy{},
		"cnat_set_snat_policy_reply": &cnat2606.CnatSetSnatPolicyReply{},
		"cnat_session_details":       &cnat2606.CnatSessionDetails{},
	},
	cnatExtra: []api.Message{
		&cnat2606.FeatureCnatEnableDisable{}, &cnat2606.FeatureCnatEnableDisableReply{},
		&cnat2606.CnatSetSnatAddressesV2{}, &cnat2606.CnatSetSnatAddressesV2Reply{},
		&ipapi.IPTableDump{}, &ipapi.IPTableDetails{},
		&interfaces.SwInterfaceSetTable{}, &interfaces.SwInterfaceSetTableReply{},
	},
	cnatFeature:       true,
	rejectAnyTable:    true,
	snatUnsetDisabled: true,
	snatV2:            true,
	cnatSessionTables: true,
}

// releases are the supported releases, oldest first.
func releases() []*Release { return []*Release{&release2502, &release2606} }

// SupportedReleases names the VPP releases the agent has bindings for.
func SupportedReleases() []string {
	var out []string
	for _, r := range releases() {
		out = append(out, r.Name)
	}
	return out
}

// releaseOf matches "25.02", "v25.02-release", "26.06-rc1~3-gabc"...
var releaseOf = regexp.MustCompile(`^v?(\d+\.\d+)(?:[.~_-]|$)`)

// ReleaseFor picks the bindings of the VPP whose show_version says
// version; a release without bindings wraps ErrUnsupportedVersion and
// names the supported ones.
func ReleaseFor(version string) (*Release, error) {
	m := releaseOf.FindStringSubmatch(strings.TrimSpace(version))
	if m != nil {
		for _, r := range releases() {
			if r.Name == m[1] {
				return r, nil
			}
		}
	}
	return nil, fmt.Errorf("%w %q: this agent has bindings for VPP %s only (docs/vpp-versions.md)",
		ErrUnsupportedVersion, version, strings.Join(SupportedReleases(), ", "))
}

// snatAddresses is this release's request setting the SNAT addresses of
// req, and its reply. On 26.06, cnat_set_snat_addresses (v1) makes the
// addresses an entry with a "client": a route to the SNAT address that
// drops everything that is not a cnat return session, so with the node
// address as the SNAT address the node's own traffic (VXLAN from the other
// nodes) is dropped (measured by the real-VPP suite: ip4-cnat-return);
// and the entry holds for the main table only, so pod traffic (pod VRF)
// would not be source-NATed. v2 with NO_CLIENT and USE_AS_DEFAULT keeps
// 25.02's behaviour: return traffic translated by the cnat input feature,
// one entry for every table.
func (r *Release) snatAddresses(req *cnatapi.CnatSetSnatAddresses) (api.Message, api.Message) {
	if !r.snatV2 {
		return req, &cnatapi.CnatSetSnatAddressesReply{}
	}
	return &cnat2606.CnatSetSnatAddressesV2{
		SnatIP4: req.SnatIP4, SnatIP6: req.SnatIP6, SwIfIndex: req.SwIfIndex,
		Flags: cnat2606.CNAT_SNAT_POLICY_F_NO_CLIENT | cnat2606.CNAT_SNAT_POLICY_F_USE_AS_DEFAULT,
	}, &cnat2606.CnatSetSnatAddressesV2Reply{}
}

// messages returns msgs with this release's bindings: a message whose
// govpp binding differs is replaced by the release's, and the release's
// extra cnat messages are added when msgs hold the cnat renderer's.
func (r *Release) messages(msgs []api.Message) []api.Message {
	out := make([]api.Message, 0, len(msgs)+len(r.cnatExtra))
	for _, m := range msgs {
		if b, ok := r.rebind[m.GetMessageName()]; ok {
			m = b
		}
		out = append(out, m)
	}
	if usesCNAT(msgs) {
		out = append(out, r.cnatExtra...)
	}
	return out
}

// usesCNAT tells whether msgs hold the cnat renderer's messages.
func usesCNAT(msgs []api.Message) bool {
	return slices.ContainsFunc(msgs, func(m api.Message) bool { return m.GetMessageName() == "cnat_translation_update" })
}

// snatPolicy is this release's cnat_set_snat_policy of p and its reply.
func (r *Release) snatPolicy(p cnat.SNATPolicy) (req, reply api.Message) {
	if _, ok := r.rebind["cnat_set_snat_policy"]; ok {
		return &cnat2606.CnatSetSnatPolicy{Policy: cnat2606.CnatSnatPolicies(p)}, &cnat2606.CnatSetSnatPolicyReply{}
	}
	return &cnatapi.CnatSetSnatPolicy{Policy: cnatapi.CnatSnatPolicies(p)}, &cnatapi.CnatSetSnatPolicyReply{}
}

// errNotSingleFeature refuses a feature value that is not one feature.
var errNotSingleFeature = errors.New("not a single cnat feature")

// cnatFeatureRequest is this release's message enabling or disabling
// cnat feature f on interface idx, and its reply. On a release that
// enables cnat as a whole (feature_cnat_enable_disable) the message is
// sent for FeatureInput4 and none (nil) for the other features: the cnat
// renderer gives every interface FeatureInput4 with the others
// (servicerenderer/cnat interfaceConfig), enables it first and disables
// it last (AllFeatures' order).
func (r *Release) cnatFeatureRequest(idx uint32, f cnat.Feature, enable bool) (req, reply api.Message, err error) {
	if !slices.Contains(cnat.AllFeatures, f) {
		return nil, nil, fmt.Errorf("%w: %d", errNotSingleFeature, f)
	}
	if r.cnatFeature {
		if f != cnat.FeatureInput4 {
			return nil, nil, nil
		}
		return &cnat2606.FeatureCnatEnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx), EnableDisable: enable},
			&cnat2606.FeatureCnatEnableDisableReply{}, nil
	}
	fr, err := featureRequest(idx, f, enable)
	if err != nil {
		return nil, nil, err
	}
	return fr, &feature.FeatureEnableDisableReply{}, nil
}

// Release is the release of the connected VPP (that of the last
// connection while none is up; VPP 25.02 before the first).
func (c *Conn) Release() *Release {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.release == nil {
		return &release2502
	}
	return c.release
}

// govppBindings is where govpp registers its bundled bindings (the
// messages of every release but those rebound).
const govppBindings = "go.fd.io/govpp/binapi"
