package pods

import (
	"context"
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

// Call is a blocking controller event: the loop's part of one CNI
// operation (IPAM, VPP, the record), run by the Manager on the
// controller's loop (so that it is ordered with every other change the
// agent applies), its outcome handed back to the caller waiting in
// Manager.Submit, who does the kernel's part off the loop.
type Call struct {
	Op  Op
	Req Request
	// ctx is the caller's: its deadline bounds the operation, and one
	// that ended before the loop took the call in fails it at once.
	ctx  context.Context
	prep prepared
	done chan outcome
}

// outcome is a Call's: the answer, and what the caller's kernel part needs.
type outcome struct {
	res Result
	err error
	// rec is the pod's record (ADD, CHECK) or the one removed (DEL).
	rec *record
	// stale is another sandbox's record ADD replaced: its kernel side is
	// left to remove.
	stale *record
	// foreign: DEL named a sandbox the pod no longer has.
	foreign bool
}

// EventName implements controller.Event.
func (c *Call) EventName() string { return "cni-" + string(c.Op) }

// Pusher queues an event on the controller's loop (controller.Controller).
type Pusher interface {
	Push(ev controller.Event)
}

// Submit runs one CNI operation for the socket: the kernel's part (the
// veth, the pod's eth0) in the caller's goroutine, at most
// Params.KernelConcurrency at once, the loop's part (IPAM, VPP, the
// record) as a Call pushed onto p's loop. It waits for the loop's outcome
// or ctx's end; when ctx ends first the call fails with ErrNotReady (the
// loop did not take it in, or took too long), and the loop, when it takes
// it in, does nothing (an ADD under way is reverted as any failed ADD; a
// veth it had made is removed by the sandbox's DEL, which the runtime
// sends after a failed ADD).
func (m *Manager) Submit(ctx context.Context, p Pusher, op Op, req Request) (Result, error) {
	return m.do(ctx, op, req, func(ctx context.Context, c *Call) outcome {
		c.ctx, c.done = ctx, make(chan outcome, 1)
		if c.Op == OpAdd {
			m.queueAdd(p, c)
		} else {
			p.Push(c)
		}
		select {
		case o := <-c.done:
			return o
		case <-ctx.Done():
			return outcome{err: fmt.Errorf("%s of pod %s/%s: no outcome within the deadline (the agent's event loop is busy or not started): %w: %w",
				c.Op, c.Req.Namespace, c.Req.Pod, ErrNotReady, ctx.Err())}
		}
	})
}

// Update implements controller.Handler: it runs a Call's loop part. Its
// failure is the caller's, never the controller's (no healing resync for
// a pod the CNI could not wire).
func (m *Manager) Update(ctx context.Context, ev controller.Event) error {
	if _, ok := ev.(*service.InterfaceEvent); ok {
		// VPP made an interface while pods wait for its startup
		// configuration: they may be re-created now (before the service
		// processor takes the event in). A failure waits for the healing
		// resync the failed reconcile scheduled.
		if m.waitStartup {
			if err := m.settle(ctx); err != nil {
				m.log.Debug("pods: still waiting to re-create pods", "err", err)
			}
		}
		return nil
	}
	if _, ok := ev.(*addBatch); ok {
		calls := m.takeAdds()
		if len(calls) == 0 {
			return nil
		}
		outs := m.addsLoop(ctx, calls)
		for i, c := range calls {
			o := finished(c, outs[i])
			m.replies = append(m.replies, func() { c.done <- o })
		}
		return nil
	}
	c, ok := ev.(*Call)
	if !ok {
		return nil
	}
	o := m.run(c)
	// The caller hears the outcome once the batch is applied (Applied):
	// by then the service processor has taken the pod's interface in and
	// the renderers have programmed it.
	m.replies = append(m.replies, func() { c.done <- o })
	return nil
}

// addBatch is a controller event: every ADD queued since the last one
// (queueAdd) runs when the loop takes it in, their VPP work together
// (addsLoop): the ADDs of many pods arriving at once cost the loop one
// turn and two VPP round trips, not a turn and two round trips each.
type addBatch struct{}

// EventName implements controller.Event: the name of the ADDs it runs.
func (*addBatch) EventName() string { return "cni-" + string(OpAdd) }

// queueAdd queues an ADD for the next addBatch, pushing one when none is
// pending.
func (m *Manager) queueAdd(p Pusher, c *Call) {
	m.qmu.Lock()
	m.queued = append(m.queued, c)
	push := !m.batchPushed
	m.batchPushed = true
	m.qmu.Unlock()
	if push {
		p.Push(&addBatch{})
	}
}

// takeAdds hands the loop the ADDs queued; an ADD queued after this
// pushes a new addBatch.
func (m *Manager) takeAdds() []*Call {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	calls := m.queued
	m.queued, m.batchPushed = nil, false
	return calls
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
