package reconcile

import "context"

// Port is a renderer's side of a Run over operations Op on objects ID,
// each call answered with R (an interface's index, say). Its methods are
// called on the loop goroutine, without the renderer's lock but for
// Result, which takes it.
type Port[Op any, ID comparable, R any] interface {
	// Object is the object op changes: once one of its calls failed, its
	// remaining operations are skipped.
	Object(op *Op) ID
	// Ordered tells whether a call on id waits for the answer to the
	// previous one (whose failure skips it).
	Ordered(id ID) bool
	// Pipelined tells whether op is sent without waiting for the answer
	// (false when no pipeline is open); Send sends it, and Recv returns
	// the answer to the oldest call in flight.
	Pipelined(op *Op) bool
	Send(op *Op) error
	Recv() (R, error)
	// Call issues op's call and waits for the answer.
	Call(op *Op) (R, error)
	// Result records the answer to the i-th operation; failed skips the
	// object's remaining operations.
	Result(i int, res R, err error) (failed bool)
}

// Run issues a list of operations in order through a Port: after a
// failed call, the object's remaining operations are skipped; pipelined
// calls go out without waiting, and their answers are recorded in send
// order. A renderer keeps one Run, reused by every apply.
type Run[Op any, ID comparable, R any] struct {
	// MaxInFlight, when set, bounds the pipelined calls in flight: once
	// that many wait, the oldest answer is recorded before the next call
	// goes out, so that a long run keeps its bookkeeping (and the
	// transport its answers) about that size rather than one entry per
	// call. Set above the transport's own window (plugins/vpp keeps 256
	// calls in flight), it never narrows the pipeline. The renderer sets
	// it once; zero: unbounded (answers recorded as calls need them and
	// by Drain).
	MaxInFlight int

	ctx  context.Context
	port Port[Op, ID, R]
	ops  []Op
	// inflight are the calls sent and not answered (indexes into ops,
	// oldest first); busy counts them per object.
	inflight []int
	busy     map[ID]int
	failed   map[ID]struct{}
}

// Start begins a run of ops through port.
func (q *Run[Op, ID, R]) Start(ctx context.Context, port Port[Op, ID, R], ops []Op) {
	q.ctx, q.port, q.ops = ctx, port, ops
	q.inflight = q.inflight[:0]
	clear(q.busy)
	clear(q.failed)
}

// End ends the run: what it refers to goes.
func (q *Run[Op, ID, R]) End() { q.ctx, q.port, q.ops = nil, nil, nil }

// Do issues the i-th operation unless a call of its object failed. It is
// false, issuing nothing, when the context is done: the caller stops.
func (q *Run[Op, ID, R]) Do(i int) bool {
	op := &q.ops[i]
	p := q.port
	id := p.Object(op)
	if p.Ordered(id) {
		for q.busy[id] > 0 {
			q.recv() // the object's earlier call decides whether this one runs
		}
	}
	if _, skip := q.failed[id]; skip {
		return true
	}
	if q.ctx.Err() != nil {
		return false
	}
	if p.Pipelined(op) {
		if q.MaxInFlight > 0 && len(q.inflight) >= q.MaxInFlight {
			q.recv()
		}
		if err := p.Send(op); err != nil {
			var zero R
			q.result(i, id, zero, err)
			return true
		}
		q.inflight = append(q.inflight, i)
		if q.busy == nil {
			q.busy = map[ID]int{}
		}
		q.busy[id]++
		return true
	}
	q.Drain()
	res, err := p.Call(op)
	q.result(i, id, res, err)
	return true
}

// Drain records the answer to every call in flight.
func (q *Run[Op, ID, R]) Drain() {
	for len(q.inflight) > 0 {
		q.recv()
	}
}

// recv records the answer to the oldest call in flight.
func (q *Run[Op, ID, R]) recv() {
	i := q.inflight[0]
	q.inflight = q.inflight[1:]
	res, err := q.port.Recv()
	id := q.port.Object(&q.ops[i])
	if q.busy[id]--; q.busy[id] == 0 {
		delete(q.busy, id)
	}
	q.result(i, id, res, err)
}

func (q *Run[Op, ID, R]) result(i int, id ID, res R, err error) {
	if q.port.Result(i, res, err) {
		if q.failed == nil {
			q.failed = map[ID]struct{}{}
		}
		q.failed[id] = struct{}{}
	}
}
