package nat44

import (
	"slices"
	"time"

	"contiv.dev/vpp/servicerenderer/reconcile"
)

// Routes wait for their table. After a VPP restart the API answers
// seconds before the startup configuration has made the pod VRF's table
// (FACTS §6): the service CIDR's drop route into it answers -3
// (ErrNoTable). That is not a failure, and no reason to heal: the route
// waits for its table (PendingTables) and is tried again by an apply with
// interface news (the startup configuration makes its tables before its
// interfaces, whose events then reach the renderer), by every full apply,
// and, within the apply, after mappings were added: NAT44 mappings with
// locals in a VRF make its table (FACTS §6).

// waitForTable records that op's route waits for VPP to make its table;
// the caller holds mu.
func (r *Renderer) waitForTable(op *Op) {
	if r.pendingTables.Add(op.Route.VRF, struct{}{}, time.Now()) {
		r.log.Info("NAT44: waiting for FIB table", "vrf", op.Route.VRF, "route", op.Route.Prefix)
	}
}

// appendTableRetries appends the adds of the desired routes that wait for
// their table; the caller holds mu. It walks the desired routes only
// while some table is pending: an apply with interface news (every pod
// added or deleted) costs nothing per route otherwise.
func (r *Renderer) appendTableRetries(ops []Op) []Op {
	if r.pendingTables.Len() == 0 {
		return ops
	}
	for k, rt := range r.desired.Routes {
		if r.pendingTables.Has(k.VRF) && r.applied.Routes[k] == nil {
			ops = append(ops, Op{Kind: OpAddRoute, Route: *rt})
		}
	}
	return ops
}

// forgetTables drops the tables no desired route waits for any more; the
// caller holds mu.
func (r *Renderer) forgetTables() {
	r.pendingTables.Keep(func(vrf uint32) bool {
		for k := range r.desired.Routes {
			if k.VRF == vrf && r.applied.Routes[k] == nil {
				return true
			}
		}
		return false
	})
}

// PendingTable is a FIB table whose routes wait for VPP to make it.
type PendingTable = reconcile.PendingTable[Route]

// PendingTables lists the tables whose routes wait for VPP to make them,
// by VRF.
func (r *Renderer) PendingTables() []PendingTable {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return reconcile.PendingTables(&r.pendingTables, r.waitingFor, func(a, b Route) int {
		return compareRouteKeys(a.RouteKey, b.RouteKey)
	})
}

// waitingFor lists the desired routes into vrf VPP does not hold.
func (r *Renderer) waitingFor(vrf uint32) []Route {
	var rs []Route
	for k, rt := range r.desired.Routes {
		if k.VRF == vrf && r.applied.Routes[k] == nil {
			rs = append(rs, *rt)
		}
	}
	return rs
}

// madeTable sets retry when op, which succeeded, added a local in the
// VRF of a route refused earlier in the run for want of its table.
func (x *runner) madeTable(op *Op) {
	if x.retry || len(x.noTable) == 0 || (op.Kind != OpAddMapping && op.Kind != OpAddLocal) {
		return
	}
	for _, i := range x.noTable {
		vrf := x.ops[i].Route.VRF
		x.retry = x.retry || (op.Kind == OpAddLocal && op.Local.VRF == vrf) ||
			(op.Kind == OpAddMapping && slices.ContainsFunc(op.Mapping.Locals, func(l Local) bool { return l.VRF == vrf }))
	}
}

// routeAdded sets retry when a route into vrf was added while routes into
// the same table were refused earlier in the run: the table exists now
// (made meanwhile by mappings, or by VPP's startup configuration). The
// table stays pending until no desired route waits for it (forgetTables
// at the end of the run), however the run's routes interleave.
func (x *runner) routeAdded(vrf uint32) {
	for _, i := range x.noTable {
		x.retry = x.retry || x.ops[i].Route.VRF == vrf
	}
}
