package sim

import "time"

// FeatureWalk is the time VPP's main thread spends per static mapping
// when a NAT44 feature that makes an interface outside (the outside
// feature, or the output feature) is enabled (Add) or disabled (Del) on
// an interface: VPP 25.02 (nat44_ed.c, nat44_ed_add_del_sm_fib_reg_entries)
// walks every record of the mapping pool (static, load-balanced and
// identity mappings) to (de)register its external address in the
// interface's FIB. The inside feature walks nothing. The zero value
// models no cost.
type FeatureWalk struct {
	Add, Del time.Duration
}

// measuredMappings is the number of mappings VPP held when the feature
// cost was measured (FACTS.md §7).
const measuredMappings = 11021

// VPP2502FeatureWalk is the cost measured on VPP 25.02 (FACTS.md §7,
// 2-core machine, one main thread): `set interface nat44 in X out X`
// took 0.35 s to add and 0.18 s to delete with 11 021 mappings (~1 ms
// with 21). Only the outside half walks the mappings (nat44_ed.c), so
// the whole time is the outside feature's: 0.35 s / 11 021 ≈ 31.8 µs per
// mapping to add, 0.18 s / 11 021 ≈ 16.3 µs to delete. ASSUMPTION: the
// output feature walks at the same rate (same function, not measured
// alone), and the cost is linear in the mappings (0.35 s at 11 021 and
// ~1 ms at 21 are within a constant of it).
var VPP2502FeatureWalk = FeatureWalk{
	Add: 350 * time.Millisecond / measuredMappings,
	Del: 180 * time.Millisecond / measuredMappings,
}

// measuredSessions is the session limit NAT44-ED was enabled with when
// the enable was measured (docs/real-vpp.md).
const measuredSessions = 262144

// VPP2502PluginEnable is the main-thread time per session of the limit
// measured on VPP 25.02 enabling NAT44-ED (nat44_ed_plugin_enable_disable,
// docs/real-vpp.md "First programming taken apart"): 0.93 s with 262 144
// sessions on the project's 2-CPU machine, idle (load 0.5–2; 3.2 s at load
// 6, the enable that opens the full apply after a VPP restart). VPP
// allocates and clears its session tables as it enables the plugin and
// answers nothing else meanwhile. ASSUMPTION: the time is linear in the
// session limit (only 262 144 was measured; the tables are sized by it),
// and a disable costs nothing (not measured).
const VPP2502PluginEnable = 930 * time.Millisecond / measuredSessions

// enablePlugin charges the main thread the enable of NAT44-ED with a
// session limit; called with mu held by the handler, before its answer,
// as walkMappings.
func (v *VPP) enablePlugin(sessions uint32) {
	d := v.enableCost * time.Duration(sessions)
	v.busy += d
	v.enabling += d
}

// walkMappings charges the main thread one walk of the mapping pool;
// called with mu held by the handler that walks, before its answer. The
// time is spent after mu is released (SendMsg), on the goroutine that
// executes requests: the server's main loop when served on a socket.
func (v *VPP) walkMappings(add bool) {
	per := v.walk.Del
	if add {
		per = v.walk.Add
	}
	d := per * time.Duration(len(v.nat.statics)+len(v.nat.identities))
	v.busy += d
	v.busyTotal += d
}

// Walked returns the main-thread time charged to feature walks since New
// (Options.FeatureWalk): what the requests cost, not when they ran.
func (v *VPP) Walked() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.busyTotal
}

// Enabling returns the main-thread time charged to NAT44-ED plugin
// enables since New (Options.PluginEnable).
func (v *VPP) Enabling() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.enabling
}
