package sim

import (
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"

	cnat2606 "contiv.dev/vpp/internal/vppapi/vpp2606/cnat"
)

// VPP 26.06 keeps cnat's source NAT in a policy entry per forwarding table
// (cnat_snat_policy.c): the SNAT addresses, the policy, the exclude
// prefixes and the interface tables all live in it, and only
// cnat_set_snat_addresses with an address or an interface creates it. An
// all-zero cnat_set_snat_addresses frees it with everything in it.
// Measured on the real 26.06 (the real-VPP suite): cnat_get_snat_addresses
// before any address is set answers FEATURE_DISABLED (-30). Read in the
// source and not measured (ASSUMPTION): without an entry,
// cnat_snat_policy_add_del_if answers -30 (after the interface check), an
// all-zero set answers -30, and cnat_set_snat_policy and
// cnat_snat_policy_add_del_exclude_pfx dereference the missing entry
// (release builds compile the ASSERT out): VPP dies.

// snatDefs2606 are the source-NAT requests VPP 26.06 answers by its entry.
func snatDefs2606() []*msgDef {
	const read, write = false, true
	return []*msgDef{
		def(write, &cnat.CnatSetSnatAddresses{}, (*VPP).cnatSetSnatAddresses2606, &cnat.CnatSetSnatAddressesReply{}),
		def(write, &cnat2606.CnatSetSnatAddressesV2{}, (*VPP).cnatSetSnatAddressesV2, &cnat2606.CnatSetSnatAddressesV2Reply{}),
		def(read, &cnat.CnatGetSnatAddresses{}, (*VPP).cnatGetSnatAddresses2606, &cnat.CnatGetSnatAddressesReply{}),
		def(write, &cnat.CnatSnatPolicyAddDelIf{}, (*VPP).cnatSnatPolicyAddDelIf2606, &cnat.CnatSnatPolicyAddDelIfReply{}),
		def(write, &cnat.CnatSnatPolicyAddDelExcludePfx{}, (*VPP).cnatSnatPolicyAddDelExcludePfx2606, &cnat.CnatSnatPolicyAddDelExcludePfxReply{}),
	}
}

// cnatSetSnatAddresses2606 is v1: v2 in table 0 with no flags (a
// "client" on the SNAT address, cnat_api.c).
func (v *VPP) cnatSetSnatAddresses2606(req *cnat.CnatSetSnatAddresses) []api.Message {
	rv := v.setSnat2606(req.SnatIP4, req.SnatIP6, uint32(req.SwIfIndex), 0)
	return reply(&cnat.CnatSetSnatAddressesReply{}, rv)
}

// cnatSetSnatAddressesV2 sets the entry of a forwarding table with its
// flags, kept from the entry's creation (cnat_set_snat). Only table 0's
// entry is simulated: another table answers -7 (the simulator's limit,
// not VPP's answer).
func (v *VPP) cnatSetSnatAddressesV2(req *cnat2606.CnatSetSnatAddressesV2) []api.Message {
	r := &cnat2606.CnatSetSnatAddressesV2Reply{}
	if req.FwdFibIndex != 0 || req.RetFibIndex != 0 {
		return reply(r, api.INVALID_VALUE)
	}
	return reply(r, v.setSnat2606(req.SnatIP4, req.SnatIP6, uint32(req.SwIfIndex), uint8(req.Flags)))
}

// setSnat2606 creates, updates or (all zero) frees table 0's entry.
func (v *VPP) setSnat2606(ip4 [4]byte, ip6 [16]byte, swIf uint32, flags uint8) api.VPPApiError {
	c := v.cnat
	if ip4 == [4]byte{} && ip6 == [16]byte{} && swIf == noIndex {
		if !c.snatSet {
			return api.FEATURE_DISABLED
		}
		// The entry goes with its policy, prefixes and tables.
		c.snat4, c.snat6, c.snatIf, c.snatSet = netip.Addr{}, netip.Addr{}, 0, false
		c.policy = cnat.CNAT_POLICY_NONE
		clear(c.exclude)
		for i := range c.tables {
			clear(c.tables[i])
		}
		c.snatFlags = 0
		return 0
	}
	if !c.snatSet {
		c.policy = cnat.CNAT_POLICY_NONE // a new entry's
		c.snatFlags = flags
	}
	c.snat4, c.snat6, c.snatIf, c.snatSet = netip.AddrFrom4(ip4), netip.AddrFrom16(ip6), swIf, true
	return 0
}

func (v *VPP) cnatGetSnatAddresses2606(req *cnat.CnatGetSnatAddresses) []api.Message {
	if !v.cnat.snatSet {
		return reply(&cnat.CnatGetSnatAddressesReply{}, api.FEATURE_DISABLED)
	}
	return v.cnatGetSnatAddresses(req)
}

func (v *VPP) cnatSnatPolicyAddDelIf2606(req *cnat.CnatSnatPolicyAddDelIf) []api.Message {
	if _, ok := v.ifaces[uint32(req.SwIfIndex)]; ok && int(req.Table) < cnatTables && !v.cnat.snatSet {
		return reply(&cnat.CnatSnatPolicyAddDelIfReply{}, api.FEATURE_DISABLED)
	}
	return v.cnatSnatPolicyAddDelIf(req)
}

func (v *VPP) cnatSnatPolicyAddDelExcludePfx2606(req *cnat.CnatSnatPolicyAddDelExcludePfx) []api.Message {
	if !v.cnat.snatSet {
		v.crashLocked("cnat_snat_policy_add_del_exclude_pfx before any SNAT address: VPP 26.06 has no policy entry (NULL dereference)")
		return nil
	}
	return v.cnatSnatPolicyAddDelExcludePfx(req)
}

// cnatSetSnatPolicy2606NoEntry crashes where VPP 26.06 has no policy
// entry to set the policy in; false when there is one.
func (v *VPP) cnatSetSnatPolicy2606NoEntry(*cnat2606.CnatSetSnatPolicy) bool {
	if v.cnat.snatSet {
		return false
	}
	v.crashLocked("cnat_set_snat_policy before any SNAT address: VPP 26.06 has no policy entry (NULL dereference)")
	return true
}
