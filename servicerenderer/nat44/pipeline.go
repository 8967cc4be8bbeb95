package nat44

import "context"

// Pipeliner is an optional extension of VPP: a VPP that implements it
// keeps many calls in flight on one connection, and Apply uses it for
// the operations Pipelined accepts. VPP executes binary-API messages in
// the order they arrive, so the calls still run in the apply's order;
// Apply waits for an object's answer before sending that object's next
// operation, so that an object's operations after a failure are skipped
// as in a synchronous apply, and failures are reported per object alike.
type Pipeliner interface {
	// Pipeline opens a pipeline for one apply. An error makes Apply call
	// synchronously.
	Pipeline(ctx context.Context) (Pipeline, error)
}

// Pipeline sends the calls of operations without waiting for each answer.
type Pipeline interface {
	// Send issues op's call. A non-nil error is op's result and nothing
	// is in flight for it (invalid input, a broken connection).
	Send(op *Op) error
	// Recv waits for the answer to the oldest call in flight and returns
	// its result, as the synchronous method of VPP returns it.
	Recv() error
	// Close ends the pipeline; answers not received are dropped.
	Close()
}

// Pipelined tells whether operations of kind k go through a Pipeline:
// all but the global settings, which read VPP's state before they write
// and run synchronously.
func Pipelined(k OpKind) bool { return k != OpSetGlobal }
