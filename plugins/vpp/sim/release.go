package sim

import (
	"net/netip"
	"regexp"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/ip_types"

	cnat2606 "contiv.dev/vpp/internal/vppapi/vpp2606/cnat"
)

// Release 26.06: the simulated VPP answers as the release its
// Options.Version names. "26.06…" is VPP 26.06; any other version (the
// default "25.02-simulated", or one no binding exists for, which the agent
// refuses by its version) is VPP 25.02's message table and behaviour.
//
// What VPP 26.06 does differently, as read in the 26.06 source archive
// (../shared/vpp/src/vpp-26.06.tar.gz) and not yet recorded from a real
// 26.06 (ASSUMPTION for each; docs/vpp-versions.md):
//
//   - its message table holds cnat.api 1.0.0 (src/plugins/cnat/cnat.api):
//     cnat_set_snat_policy and cnat_session_details with new CRCs
//     (internal/vppapi/vpp2606/cnat), feature_cnat_enable_disable,
//     cnat_set_snat_addresses_v2 and cnat_snat_addresses_dump are new;
//     the rest have 25.02's CRCs;
//   - feature_cnat_enable_disable enables (disables) the 8 cnat feature
//     nodes of an interface (cnat_types.c,
//     cnat_sw_interface_enable_disable); the generic
//     feature_enable_disable still takes a single node;
//   - a path removed from a translation, or every path of a deleted one,
//     is marked, and the session scanner frees a marked path's sessions
//     when it reaches them (cnat_session.c, cnat_session_is_stale); a pass
//     of the default-sized table takes ~17 min (MEASURED on the real 26.06:
//     ~9 700 buckets a second of ~10 M; in the real-VPP suite's 4 s, 1 TCP
//     flow of 12 to a removed backend was reset, the rest kept flowing;
//     with a table scanned in ~1 s, every one ended, reset or moved).
//     Sessions stay stale until ScanCnatSessions; the deletion is ASSUMED
//     to work as the update (read, not measured);
//   - an ICMP_UNREACH/ICMP_PROHIBIT path is a reject in any table (fixed
//     in 26.02; 25.02 crashes outside table 0);
//   - cnat_set_snat_policy accepts CNAT_POLICY_DNAT (3).

// release2606 matches the versions of VPP 26.06.
var release2606 = regexp.MustCompile(`^v?26\.06(?:[.~_-]|$)`)

// is2606 tells whether version is VPP 26.06's.
func is2606(version string) bool { return release2606.MatchString(strings.TrimSpace(version)) }

// cnat2606Table are VPP 26.06's cnat messages, which replace govpp's (by
// name) in its message table.
func cnat2606Table() []api.Message {
	var out []api.Message
	for _, m := range api.GetRegisteredMessages()[bindingPath2606] {
		if msgPackage(m) == "cnat" {
			out = append(out, m)
		}
	}
	return out
}

// bindingPath2606 is where govpp registers the 26.06 bindings.
const bindingPath2606 = "contiv.dev/vpp/internal/vppapi/vpp2606"

// messageDefs2606 are the requests VPP 26.06 answers differently or
// newly; they replace 25.02's of the same name.
func messageDefs2606() []*msgDef {
	const read, write = false, true
	return append([]*msgDef{
		def(write, &cnat2606.CnatSetSnatPolicy{}, (*VPP).cnatSetSnatPolicy2606, &cnat2606.CnatSetSnatPolicyReply{}),
		def(read, &cnat2606.CnatSessionDump{}, (*VPP).cnatSessionDump2606, &cnat2606.CnatSessionDetails{}),
		def(write, &cnat2606.FeatureCnatEnableDisable{}, (*VPP).featureCnatEnableDisable, &cnat2606.FeatureCnatEnableDisableReply{}),
	}, snatDefs2606()...)
}

// cnatSetSnatPolicy2606 takes the policies of cnat.api 1.0.0 (NONE,
// IF_PFX, K8S, DNAT); another -> +1 as on 25.02.
func (v *VPP) cnatSetSnatPolicy2606(req *cnat2606.CnatSetSnatPolicy) []api.Message {
	if v.cnatSetSnatPolicy2606NoEntry(req) {
		return nil
	}
	r := &cnat2606.CnatSetSnatPolicyReply{}
	if req.Policy > cnat2606.CNAT_POLICY_DNAT {
		return reply(r, 1)
	}
	v.cnat.policy = cnat.CnatSnatPolicies(req.Policy)
	return reply(r, 0)
}

// cnatFeatures2606 are the nodes feature_cnat_enable_disable enables, with
// their arc (cnat_types.c).
var cnatFeatures2606 = []struct{ node, arc string }{
	{"cnat-input-ip4", "ip4-unicast"}, {"cnat-lookup-ip4", "ip4-unicast"},
	{"cnat-input-ip6", "ip6-unicast"}, {"cnat-lookup-ip6", "ip6-unicast"},
	{"cnat-output-ip4", "ip4-output"}, {"cnat-writeback-ip4", "ip4-output"},
	{"cnat-output-ip6", "ip6-output"}, {"cnat-writeback-ip6", "ip6-output"},
}

// featureCnatEnableDisable enables or disables every cnat node on an
// interface, each as feature_enable_disable would (enabling twice puts a
// node on its arc twice); an unknown interface -> -2.
func (v *VPP) featureCnatEnableDisable(req *cnat2606.FeatureCnatEnableDisable) []api.Message {
	r := &cnat2606.FeatureCnatEnableDisableReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	for _, f := range cnatFeatures2606 {
		v.cnat.setFeature(cnatFeatKey{idx, f.node}, req.EnableDisable)
	}
	return reply(r, 0)
}

// cnatSessionDump2606 lists each live session twice as the 25.02 dump
// does, in cnat.api 1.0.0's shape: the session's lookup 5-tuple (addr[0]
// and port[0] the packet's source, [1] its destination), the timestamp
// index and flags. ASSUMPTION: index 0 is VLIB_RX, the source
// (cnat_api.c cnat_5tuple_encode); ts_index is the session's ID and flags
// 0 (not read by the agent).
func (v *VPP) cnatSessionDump2606(*cnat2606.CnatSessionDump) []api.Message {
	var out []api.Message
	tuple := func(src, dst netip.AddrPort, proto ip_types.IPProto) cnat2606.Cnat5tuple {
		return cnat2606.Cnat5tuple{
			Addr:    [2]ip_types.Address{toAnyAddr(src.Addr()), toAnyAddr(dst.Addr())},
			Port:    []uint16{src.Port(), dst.Port()},
			IPProto: proto,
		}
	}
	for _, s := range v.cnatSessionsLocked() {
		proto := ip_types.IPProto(s.Proto)
		out = append(out,
			&cnat2606.CnatSessionDetails{Session: cnat2606.CnatSession{Tuple: tuple(s.Client, s.VIP, proto), TsIndex: uint32(s.ID)}},
			&cnat2606.CnatSessionDetails{Session: cnat2606.CnatSession{
				Tuple: tuple(s.Backend, netip.AddrPortFrom(s.Src, s.Client.Port()), proto), TsIndex: uint32(s.ID)}})
	}
	return out
}
