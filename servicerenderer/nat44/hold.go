package nat44

import (
	"slices"
	"time"
)

// Features before mappings. Enabling or disabling an outside (or output)
// feature makes VPP walk every mapping it holds (FACTS §7: 0.35 s per
// interface at 11 021 mappings, ~1 ms at 21), while a mapping added
// after the features costs no more than one added before. After a VPP
// restart, VPP's API answers seconds before its startup configuration
// re-creates the interfaces: an apply then finds the node's interfaces
// missing (their features wait: Pending) and would add every mapping at
// once, so that each feature enabled later walks them all. Instead,
// while an interface of Config.NodeInterfaces is pending, the mapping
// operations of an apply wait (their frontends stay dirty) until an
// apply finds none pending — the interface events that make VPP's
// interfaces known trigger it — or Config.HoldMappings has passed since
// the first apply that held them; HoldUntil tells the caller when to
// apply again if nothing else does.

// holding tells whether this apply's mapping operations wait; called on
// the loop goroutine after the apply's interface operations have been
// answered. The caller holds mu.
func (r *Renderer) holding(now time.Time) bool {
	name := r.pendingNodeInterface()
	switch {
	case name == "":
		if !r.holdSince.IsZero() && r.held > 0 {
			r.log.Info("NAT44: node interfaces are back; mappings follow their features", "waited", now.Sub(r.holdSince).Round(time.Millisecond))
		}
		r.holdSince, r.holdOver = time.Time{}, false
		return false
	case r.holdOver:
		return false
	case r.holdSince.IsZero():
		r.holdSince = now
		r.log.Info("NAT44: mappings wait for the features of the node's interfaces", "interface", name, "atMost", r.cfg.HoldMappings)
	case now.Sub(r.holdSince) >= r.cfg.HoldMappings:
		r.holdOver = true
		r.log.Warn("NAT44: node interface still missing; adding mappings without its features (enabling them later walks every mapping)",
			"interface", name, "waited", now.Sub(r.holdSince).Round(time.Millisecond))
		return false
	}
	return true
}

// settleHold ends a hold, spent or not, once no node interface is
// pending; for an apply that asked holding nothing (no mapping
// operation). The caller holds mu.
func (r *Renderer) settleHold() {
	if (!r.holdSince.IsZero() || r.holdOver) && r.pendingNodeInterface() == "" {
		r.holdSince, r.holdOver = time.Time{}, false
	}
}

// pendingNodeInterface is a node interface whose features wait for VPP to
// have it, "" when none does or nothing is held for them.
func (r *Renderer) pendingNodeInterface() string {
	if r.cfg.HoldMappings <= 0 {
		return ""
	}
	for _, name := range r.cfg.NodeInterfaces {
		if r.pending.Has(name) {
			return name
		}
	}
	return ""
}

// mayRelease tells whether an apply could end a hold: the bound has
// passed, or every pending node interface is to be tried again.
// Otherwise the held frontends are not diffed again (an apply during a
// hold costs what changed, not every held mapping).
func (r *Renderer) mayRelease(now time.Time) bool {
	if r.holdSince.IsZero() || r.holdOver || now.Sub(r.holdSince) >= r.cfg.HoldMappings {
		return true
	}
	return !slices.ContainsFunc(r.cfg.NodeInterfaces, func(name string) bool {
		_, dirty := r.dirtyInterfaces[name]
		return r.pending.Has(name) && !dirty
	})
}

// Held is the number of frontends whose mapping operations wait for the
// features of the node's interfaces (0: none).
func (r *Renderer) Held() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.held
}

// HoldUntil is when the current hold of mapping operations ends by its
// bound (zero when none is held): the caller should Apply then, should no
// interface event make it apply before.
func (r *Renderer) HoldUntil() time.Time {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.held == 0 || r.holdSince.IsZero() {
		return time.Time{}
	}
	return r.holdSince.Add(r.cfg.HoldMappings)
}
