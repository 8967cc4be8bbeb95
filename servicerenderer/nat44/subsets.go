package nat44

import (
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// SubsetStatus is a frontend served by a subset of its endpoints.
type SubsetStatus struct {
	Frontend MappingKey                `json:"frontend"`
	Service  servicerenderer.ServiceID `json:"service"`
	Subset
}

// noteSubset records whether m, the desired mapping of fe (nil: none),
// leaves endpoints out, and logs each change once: a warning naming the
// numbers when a frontend becomes, or stays with other numbers, a subset;
// a line when it is served by all its endpoints again. The caller holds
// mu.
func (r *Renderer) noteSubset(fe *frontendState, m *Mapping) {
	var sub *Subset
	if m != nil && m.cut {
		// m is the winner's: it was set desired for it.
		s := r.cuts[fe.Winner()][m.MappingKey]
		sub = &s
	}
	if sub == nil && len(r.subsets) == 0 {
		return // nothing to note (and fe's key left unread)
	}
	old, had := r.subsets[fe.Key]
	switch {
	case sub == nil && had:
		delete(r.subsets, fe.Key)
		r.log.Info("frontend no longer served by a subset of its endpoints", "frontend", fe.Key.String(), "previously_left_out", old.LeftOut())
	case sub != nil && (!had || old != *sub):
		r.subsets[fe.Key] = *sub
		var svc servicerenderer.ServiceID
		if fe.Winner() != nil {
			svc = fe.Winner().Svc.ID
		}
		r.log.Warn("frontend served by a subset of its endpoints: VPP 25.02 sums a mapping's probabilities in a u8 (at most 255)",
			"frontend", fe.Key.String(), "service", svc, "endpoints", sub.Endpoints, "used", sub.Used,
			"left_out", sub.LeftOut(), "local", sub.Local, "used_local", sub.UsedLocal, "local_weight", sub.LocalWeight)
	}
}

// Subsets lists the frontends whose mapping leaves endpoints out to keep
// its probabilities within MaxProbabilitySum, sorted by frontend.
func (r *Renderer) Subsets() []SubsetStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]SubsetStatus, 0, len(r.subsets))
	for k, s := range r.subsets {
		st := SubsetStatus{Frontend: k, Subset: s}
		if fe := r.frontends.Get(k); fe != nil && fe.Winner() != nil {
			st.Service = fe.Winner().Svc.ID
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b SubsetStatus) int { return compareMappingKeys(a.Frontend, b.Frontend) })
	return out
}
