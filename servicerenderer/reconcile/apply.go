package reconcile

import (
	"context"
	"sync"
)

// Cycle is a renderer's side of Apply. Begin, PlanFull, PlanChanges and
// End are called with the renderer's lock held; Dump and Run without it
// (they take it to record what they learn).
type Cycle[D, Op any] interface {
	// Begin starts an apply (full when asked to) and tells whether it is
	// full.
	Begin(full bool) bool
	// Dump reads what VPP holds.
	Dump(ctx context.Context) (D, error)
	// PlanFull makes d what VPP holds and lists the operations that make
	// it hold the desired state; PlanChanges lists those for what changed
	// since the last apply.
	PlanFull(d D) []Op
	PlanChanges() []Op
	// Run issues the operations.
	Run(ctx context.Context, ops []Op, full bool) error
	// End ends the apply: the frontends nothing refers to any more go.
	End(full bool, ops []Op)
}

// Apply is the apply step every renderer shares (the controller's
// Applier): a full apply (asked for, or the first after a resync) dumps
// what VPP holds, loads it and issues only the differences; an incremental
// one issues the calls for what changed since the last apply. Calls VPP
// refuses as invalid are reported per object (Failures) and not retried
// until the object changes or a full apply runs; what waits for VPP to
// make it (an interface, a table) waits; the rest is still applied. Other
// failures make Apply return an error after applying what it can: the
// controller then heals with a full resync. mu is the renderer's lock:
// held to plan and record, never while VPP is called.
func Apply[D, Op any](ctx context.Context, mu sync.Locker, c Cycle[D, Op], full bool) error {
	mu.Lock()
	full = c.Begin(full)
	var ops []Op
	if full {
		mu.Unlock()
		d, err := c.Dump(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		ops = c.PlanFull(d)
	} else {
		ops = c.PlanChanges()
	}
	mu.Unlock()
	err := c.Run(ctx, ops, full)
	mu.Lock()
	c.End(full, ops)
	mu.Unlock()
	return err
}
