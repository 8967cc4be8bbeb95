package sim

// TEMPORARY stubs of functions the other half of the simulator work
// provides (crashes, FIB routes). The lead deletes this file at merge.

import "net/netip"

// crashLocked simulates a VPP crash. Called with mu held.
// TEMPORARY stub: it only logs.
func (v *VPP) crashLocked(reason string) {
	v.log.Error("simulated VPP crashed (stub)", "reason", reason)
}

// routeLookupLocked finds the longest-prefix FIB route covering dst in
// table vrf. Called with mu held. TEMPORARY stub: no routes.
func (v *VPP) routeLookupLocked(vrf uint32, dst netip.Addr) (drop bool, found bool) {
	_, _ = vrf, dst
	return false, false
}
