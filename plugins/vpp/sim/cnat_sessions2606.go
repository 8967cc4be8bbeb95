package sim

import (
	"slices"
	"strconv"
	"strings"

	"go.fd.io/govpp/api"
	ipapi "go.fd.io/govpp/binapi/ip"
)

// VPP 26.06's cnat keeps a session budget per FIB table
// (src/plugins/cnat/cnat_inline.h, cnat_timestamp_alloc): a table without
// one makes no session, so a flow through an interface of that table is
// neither translated by the input feature ("session lookup error") nor
// has its replies reverse-translated. The budget is given to table 0 and
// to a table an interface is bound to (a table-bind callback) — but that
// callback is registered only at cnat's first use (cnat_lazy_init): a
// table whose interfaces were bound before (the startup configuration's,
// pods re-created before the services) has none until some interface is
// bound to it again. Measured on the real 26.06 by the real-VPP suite
// (replies left untranslated; binding local0 to the pod table and back
// made them work). The simulator keeps the tables with a budget; it
// forwards no packets, so CnatTablesWithoutSessions says which tables'
// flows the real VPP would fail.

// isCnatMessage tells a cnat message (any of them initialises cnat).
func isCnatMessage(name string) bool {
	return strings.HasPrefix(name, "cnat_") || name == "feature_cnat_enable_disable"
}

// cnatInitLocked is cnat's lazy init on 26.06: table 0 gets its budget.
func (v *VPP) cnatInitLocked() {
	if v.cnat.initDone {
		return
	}
	v.cnat.initDone = true
	v.cnat.sessionTables = map[uint32]bool{0: true}
}

// cnatTableBoundLocked is the table-bind callback: registered by the
// lazy init, it gives table vrf a budget.
func (v *VPP) cnatTableBoundLocked(vrf uint32) {
	if v.rel2606 && v.cnat.initDone {
		v.cnat.sessionTables[vrf] = true
	}
}

// CnatTablesWithoutSessions lists, on VPP 26.06 once cnat is in use, the
// IPv4 tables that have interfaces but no cnat session budget: the real
// VPP makes no session for their flows. nil on 25.02 (no budgets).
func (v *VPP) CnatTablesWithoutSessions() []uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.rel2606 || !v.cnat.initDone {
		return nil
	}
	var out []uint32
	for _, i := range v.ifaces {
		if !v.cnat.sessionTables[i.vrf] && !slices.Contains(out, i.vrf) {
			out = append(out, i.vrf)
		}
	}
	slices.Sort(out)
	return out
}

// ipTableDump lists the IPv4 tables (table 0 and every one made) and
// IPv6 table 0, the one IPv6 table the simulator has.
func (v *VPP) ipTableDump(*ipapi.IPTableDump) []api.Message {
	vrfs := []uint32{0}
	for vrf := range v.fib.tables {
		if vrf != 0 {
			vrfs = append(vrfs, vrf)
		}
	}
	slices.Sort(vrfs)
	var out []api.Message
	for _, vrf := range vrfs {
		out = append(out, &ipapi.IPTableDetails{Table: ipapi.IPTable{TableID: vrf, Name: "ipv4-VRF:" + strconv.FormatUint(uint64(vrf), 10)}})
	}
	out = append(out, &ipapi.IPTableDetails{Table: ipapi.IPTable{TableID: 0, IsIP6: true, Name: "ipv6-VRF:0"}})
	return out
}
