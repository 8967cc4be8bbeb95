package pods

import (
	"context"
	"errors"
	"fmt"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
)

// Op is a CNI operation the agent runs.
type Op string

// The operations.
const (
	OpAdd   Op = "add"
	OpDel   Op = "del"
	OpCheck Op = "check"
)

// Call is a blocking controller event: one CNI operation, run by the
// Manager on the controller's loop (so that it is ordered with every
// other change the agent applies), its outcome handed back to the caller
// waiting in Submit.
type Call struct {
	Op  Op
	Req Request
	// ctx is the caller's: its deadline bounds the operation, and one
	// that ended before the loop took the call in fails it at once.
	ctx  context.Context
	done chan outcome
}

type outcome struct {
	res Result
	err error
}

// EventName implements controller.Event.
func (c *Call) EventName() string { return "cni-" + string(c.Op) }

// Pusher queues an event on the controller's loop (controller.Controller).
type Pusher interface {
	Push(ev controller.Event)
}

// Submit pushes one CNI operation onto the loop and waits for its outcome
// or ctx's end. When ctx ends first the call fails with ErrNotReady (the
// loop did not take it in, or took too long), and the loop, when it
// takes it in, does nothing (an operation under way is reverted as any
// failed ADD).
func Submit(ctx context.Context, p Pusher, op Op, req Request) (Result, error) {
	c := &Call{Op: op, Req: req, ctx: ctx, done: make(chan outcome, 1)}
	p.Push(c)
	select {
	case o := <-c.done:
		return o.res, o.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("%s of pod %s/%s: no outcome within the deadline (the agent's event loop is busy or not started): %w: %w",
			op, req.Namespace, req.Pod, ErrNotReady, ctx.Err())
	}
}

// Update implements controller.Handler: it runs a Call. Its failure is
// the caller's, never the controller's (no healing resync for a pod the
// CNI could not wire).
func (m *Manager) Update(_ context.Context, ev controller.Event) error {
	c, ok := ev.(*Call)
	if !ok {
		return nil
	}
	var o outcome
	switch c.Op {
	case OpAdd:
		o.res, o.err = m.Add(c.ctx, c.Req)
	case OpDel:
		o.err = m.Del(c.ctx, c.Req)
	case OpCheck:
		o.err = m.Check(c.ctx, c.Req)
	default:
		o.err = fmt.Errorf("operation %q: %w", c.Op, ErrInvalid)
	}
	if o.err != nil && c.ctx.Err() != nil && !errors.Is(o.err, ErrNotReady) {
		o.err = fmt.Errorf("%w (deadline: %w)", o.err, c.ctx.Err())
	}
	// The caller hears the outcome once the batch is applied (Applied):
	// by then the service processor has taken the pod's interface in and
	// the renderers have programmed it.
	m.replies = append(m.replies, func() { c.done <- o })
	return nil
}

// ApplyStarting implements controller.ApplyObserver.
func (m *Manager) ApplyStarting(bool) {}

// Applied implements controller.ApplyObserver: the calls of the batch
// just applied get their outcome.
func (m *Manager) Applied(bool, error) {
	for _, r := range m.replies {
		r()
	}
	m.replies = nil
}

// podInterfaceEvent tells the service processor to look pod's interface
// up again (the seed's ProcessNewPod / ProcessDeletingPod).
func podInterfaceEvent(pod addrplan.PodID) controller.Event {
	return &service.PodInterfaceEvent{Namespace: pod.Namespace, Name: pod.Name}
}
