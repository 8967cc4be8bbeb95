package controller

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
)

// deliver hands ev, then the follow-ups it caused, to the handlers.
func (c *Controller) deliver(ctx context.Context, ev Event) {
	c.dirty = true
	c.dispatch(ctx, ev)
	c.deliverFollowUps(ctx)
}

func (c *Controller) deliverFollowUps(ctx context.Context) {
	for {
		c.fmu.Lock()
		if len(c.follow) == 0 {
			c.fmu.Unlock()
			return
		}
		ev := c.follow[0]
		c.follow = c.follow[1:]
		c.fmu.Unlock()
		if c.followUps++; c.followUps > maxFollowUps {
			c.fmu.Lock()
			c.follow = nil
			c.fmu.Unlock()
			c.fail(fmt.Errorf("more than %d follow-ups in one batch: the rest dropped", maxFollowUps))
			return
		}
		c.dispatch(ctx, ev)
	}
}

// dispatch hands ev to the handlers that declare it, in order (reverse
// order for removals).
func (c *Controller) dispatch(ctx context.Context, ev Event) {
	c.tally.events++
	hs := c.p.Handlers
	if removal(ev) {
		hs = c.reversed
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.Debug("event", "event", ev.EventName(), "detail", describe(ev))
	}
	for i := 0; i < len(hs); {
		i = c.update(ctx, hs, i, ev)
	}
}

// update hands ev to hs[i:] in order and returns the index after the last
// handler called: len(hs), or the one after a handler that panicked (its
// panic turned into an error). One recover covers all of an event's
// handlers.
func (c *Controller) update(ctx context.Context, hs []Handler, i int, ev Event) (next int) {
	defer func() {
		if r := recover(); r != nil {
			c.fail(c.panicked(hs[i], ev, r))
			next = i + 1
		}
	}()
	for ; i < len(hs); i++ {
		if h := hs[i]; h.HandlesEvent(ev) {
			if err := h.Update(ctx, ev); err != nil {
				c.fail(fmt.Errorf("handler %s: %s: %w", h.Name(), ev.EventName(), err))
			}
		}
	}
	return i
}

// removal tells whether ev removes a value: handlers then run in reverse.
func removal(ev Event) bool {
	switch e := ev.(type) {
	case *ChangeEvent:
		return e.New == nil
	case *NodeUpdate:
		return e.New == nil
	}
	return false
}

// describe names what ev is about, for debug logs.
func describe(ev Event) string {
	switch e := ev.(type) {
	case *ChangeEvent:
		return e.Key.String() + "@" + strconv.FormatInt(e.Revision, 10)
	case *NodeUpdate:
		return e.Name
	}
	return ""
}

// guard runs one handler call, turning a panic into an error.
func (c *Controller) guard(h Handler, ev Event, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = c.panicked(h, ev, r)
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("handler %s: %s: %w", h.Name(), ev.EventName(), err)
	}
	return nil
}

// panicked logs the panic r of h taking in ev (with the stack, from the
// deferred recover) and returns it as an error.
func (c *Controller) panicked(h Handler, ev Event, r any) error {
	c.log.Error("handler panicked", "handler", h.Name(), "event", ev.EventName(), "panic", r, "stack", string(debug.Stack()))
	return fmt.Errorf("handler %s: %s: panic: %v", h.Name(), ev.EventName(), r)
}

// applyOne calls one Applier, turning a panic into an error.
func (c *Controller) applyOne(ctx context.Context, a Applier, full bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("applier panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("apply: panic: %v", r)
		}
	}()
	if err := a.Apply(ctx, full); err != nil {
		return fmt.Errorf("apply (full=%t): %w", full, err)
	}
	return nil
}

// shutdown delivers ShutdownEvent in reverse handler order.
func (c *Controller) shutdown(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	ev := &ShutdownEvent{}
	for _, h := range c.reversed {
		err := c.guard(h, ev, func() error {
			if !h.HandlesEvent(ev) {
				return nil
			}
			return h.Update(sctx, ev)
		})
		if err != nil {
			c.log.Warn("shutdown", "err", err)
		}
	}
	c.log.Info("controller stopped")
}
