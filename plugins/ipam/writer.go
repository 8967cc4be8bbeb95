package ipam

import (
	"context"
	"errors"
	"fmt"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/retryloop"
)

// write is the background writer's job: load the allocations once the plan
// is known, write what is pending, and compare etcd with the allocations
// when a resync asked.
func (h *Handler) write(ctx context.Context) error {
	h.mu.RLock()
	plan, alloc, recheck := h.plan, h.alloc, h.recheck
	h.mu.RUnlock()
	if plan == nil || h.store == nil {
		return nil
	}
	if alloc == nil {
		a, err := addrplan.NewAllocator(ctx, addrplan.AllocatorParams{
			Subnet: plan.PodSubnet, Store: h.store, Grace: h.p.Grace, Logger: h.log,
		})
		if err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
		h.mu.Lock()
		if h.plan != plan { // a new plan came meanwhile: load for it
			h.mu.Unlock()
			return errors.New("ipam: the address plan changed while loading")
		}
		// Pods deleted before the load were not released by Update: under
		// h.mu, no pod change slips between this and the allocator's use.
		err = a.Prune(ctx, func(p addrplan.PodID) bool { return h.live[p] })
		h.alloc, alloc = a, a
		h.mu.Unlock()
		h.log.Info("ipam: allocations loaded", "node", h.p.NodeName, "pods", len(a.Allocations()))
		if err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
	}
	if err := h.store.flush(ctx); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	h.mu.RLock()
	checked := h.checked
	h.mu.RUnlock()
	if checked == recheck {
		return nil
	}
	stored, err := h.store.List(ctx)
	if err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	if h.store.reconcile(stored, alloc.Allocations()) {
		h.log.Info("ipam: etcd's allocation records repaired", "node", h.p.NodeName, "pending", h.store.pending())
		if err := h.store.flush(ctx); err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
	}
	h.mu.Lock()
	h.checked = max(h.checked, recheck)
	h.mu.Unlock()
	return nil
}

// WriteStatus is the state of the handler's background etcd writer.
type WriteStatus struct {
	// Loaded is set once the allocations were read from etcd.
	Loaded bool `json:"loaded"`
	// Pending is the number of pods whose record waits to be written.
	Pending int `json:"pending"`
	// Checking is set while a comparison of etcd with the allocations
	// waits.
	Checking bool `json:"checking"`
	retryloop.Status
}

// WriteStatus returns the background writer's state (for /v1/status).
func (h *Handler) WriteStatus() WriteStatus {
	h.mu.RLock()
	st := WriteStatus{Loaded: h.alloc != nil, Checking: h.checked != h.recheck}
	h.mu.RUnlock()
	if h.store != nil {
		st.Pending = h.store.pending()
	}
	st.Status = h.w.Status()
	return st
}

// Flush waits until the allocations are loaded and nothing waits to be
// written or checked, or ctx ends, or the writer stalled on a failure
// retrying cannot mend. Without an etcd client it returns at once.
func (h *Handler) Flush(ctx context.Context) error {
	if err := h.w.Wait(ctx, h.written); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	return nil
}

// written tells whether the writer has nothing left to do: no etcd client
// or no plan yet, or the allocations loaded and nothing pending.
func (h *Handler) written() bool {
	if h.store == nil {
		return true
	}
	h.mu.RLock()
	noPlan := h.plan == nil
	h.mu.RUnlock()
	st := h.WriteStatus()
	return noPlan || (st.Loaded && st.Pending == 0 && !st.Checking)
}

// Close stops the background writer; what it had not written stays
// unwritten. Safe to call more than once; the controller's ShutdownEvent
// calls it.
func (h *Handler) Close() { h.w.Close() }
