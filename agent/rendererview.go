package agent

import (
	"fmt"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
	"contiv.dev/vpp/servicerenderer/reconcile"
)

// rendererView is the renderer-neutral view of the renderer that runs;
// nil when none does.
func rendererView(a *Agent) any {
	var v restapi.RendererView
	switch {
	case a.renderer != nil:
		v = nat44RendererView(a.renderer)
	case a.cnat != nil:
		v = cnatRendererView(a.cnat)
	default:
		return nil
	}
	v.Counts.Failures, v.Counts.Conflicts = len(v.Failures), len(v.Conflicts)
	v.Counts.Pending, v.Counts.PendingTables = len(v.Pending), len(v.PendingTables)
	return v
}

func nat44RendererView(r *nat44.Renderer) restapi.RendererView {
	st := r.Stats()
	v := restapi.RendererView{
		Renderer: contivconf.RendererNAT44,
		Stats: restapi.RendererStats{Applies: st.Applies, FullApplies: st.FullApplies, Calls: st.Calls,
			Invalid: st.Invalid, Transient: st.Transient},
		Counts: restapi.RendererCounts{Desired: len(r.Desired().Mappings), Applied: len(r.Applied().Mappings), Held: r.Held()},
	}
	for _, f := range r.Failures() {
		rf := restapi.RendererFailure{Object: f.Object.String(), Error: f.Reason}
		if f.Op != 0 { // the zero Op: no call was made (nat44.Failure)
			rf.Op = f.Op.String()
		}
		if f.Service != (sr.ServiceID{}) {
			rf.Service = &f.Service
		}
		v.Failures = append(v.Failures, rf)
	}
	v.Conflicts = conflicts(r.Conflicts())
	for _, p := range r.Pending() {
		v.Pending = append(v.Pending, restapi.RendererPending{Name: p.Name, Since: p.Since, Waits: "NAT44 features " + p.Features.String()})
	}
	v.PendingTables = pendingTables(r.PendingTables())
	return v
}

func cnatRendererView(r *cnat.Renderer) restapi.RendererView {
	st := r.Stats()
	writes := uint64(st.Writes)
	v := restapi.RendererView{
		Renderer: contivconf.RendererCNAT,
		Stats: restapi.RendererStats{Applies: uint64(st.Applies), FullApplies: uint64(st.FullApplies), Calls: uint64(st.Calls),
			Writes: &writes, Invalid: uint64(st.Invalid), Transient: uint64(st.Transient)},
		Counts: restapi.RendererCounts{Desired: len(r.Desired()), Applied: len(r.Applied())},
	}
	for _, f := range r.Failures() {
		v.Failures = append(v.Failures, restapi.RendererFailure{Object: f.Object.String(), Op: f.Op.String(), Error: f.Reason})
	}
	v.Conflicts = conflicts(r.Conflicts())
	for _, p := range r.Pending() {
		v.Pending = append(v.Pending, restapi.RendererPending{Name: p.Name, Since: p.Since, Waits: "cnat features and SNAT tables"})
	}
	v.PendingTables = pendingTables(r.PendingTables())
	return v
}

// conflicts lists a renderer's conflicts with their frontends as text.
func conflicts[K reconcile.Key](cs []reconcile.Conflict[K]) []restapi.RendererConflict {
	var out []restapi.RendererConflict
	for _, c := range cs {
		out = append(out, restapi.RendererConflict{Frontend: c.Key.String(), Winner: c.Winner, Losers: c.Losers})
	}
	return out
}

// pendingTables lists a renderer's pending tables with their routes as
// text.
func pendingTables[R fmt.Stringer](ts []reconcile.PendingTable[R]) []restapi.RendererPendingTable {
	var out []restapi.RendererPendingTable
	for _, t := range ts {
		pt := restapi.RendererPendingTable{VRF: t.VRF, Since: t.Since}
		for _, rt := range t.Routes {
			pt.Routes = append(pt.Routes, rt.String())
		}
		out = append(out, pt)
	}
	return out
}
