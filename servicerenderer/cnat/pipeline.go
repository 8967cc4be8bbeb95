package cnat

import "context"

// Pipeliner is an optional extension of VPP: a VPP that implements it
// keeps many calls in flight on one connection, and Apply sends the
// translation calls Pipelined accepts through it. VPP executes
// binary-API messages in the order they arrive, so the calls still run
// in the apply's order; Apply waits for a translation's answer before
// sending its next operation, so that its operations after a failure are
// skipped as in a synchronous apply; an interface's operations go out
// together (each records its own result). Failures are reported per
// object.
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
	// its result, as the synchronous method of VPP returns it (for an
	// interface's operation, the interface's sw_if_index).
	Recv() (swIfIndex uint32, err error)
	// Close ends the pipeline; answers not received are dropped.
	Close()
}

// Pipelined tells whether op goes through a Pipeline: a translation
// update, a delete by an id this apply's dump read (VPP runs the calls in
// order, so the id is still that translation's when the delete arrives),
// an interface's feature or SNAT table, a route (drop, verdict or lookup:
// a route's -3 for a table not yet there comes back in its answer as from
// the synchronous call). A delete that must re-read its id
// first (an incremental one) and the node-wide settings are called
// synchronously: the SNAT addresses, which tell that the node
// configuration is complete, are sent after every earlier answer came.
func Pipelined(op *Op) bool {
	switch op.Kind {
	case OpUpdateTranslation, OpFeature, OpSNATInterface, OpRoute, OpVerdictRoute:
		return true
	case OpDeleteTranslation:
		return op.HaveID
	}
	return false
}
