// Package reconcile is what every service renderer shares: the frontends
// services claim (the oldest service wins one; a conflict is logged once
// per frontend and losing service), each frontend's desired and applied
// object with the set of frontends changed since the last apply, the things
// that wait for VPP to make them (interfaces, FIB tables), the objects VPP
// refused, and the lock contract the renderers follow.
//
// It is generic over the frontend's key K and the object rendered there O
// (nat44: MappingKey and Mapping; cnat: Key and Translation). A renderer
// keeps its pure build, its per-object diff and its VPP port; this package
// knows nothing of VPP, NAT44 or cnat. Its parts, one a file:
//
//   - Front (front.go): the change methods of servicerenderer.Renderer,
//     each under the renderer's lock, over the renderer's Changes.
//   - Table and Claimant (claims.go): the frontends, the claims on them
//     and their desired and applied objects; Dirty the frontends changed
//     since the last apply, Conflicts the contested ones (their losers
//     are the table's, beside the frontends: a frontend is 32 bytes and
//     its key, 48 allocated for nat44's 8-byte key).
//   - Waits and PendingTables (waits.go): what waits for VPP to make it
//     (an interface, a FIB table: a table stays pending until every route
//     into it is in).
//   - Failures (failures.go): the objects VPP refused as invalid, retried
//     when they change or by a full apply.
//   - Apply and Cycle (apply.go): the apply skeleton: begin, dump (full
//     apply), load and plan, run, end.
//   - Run and Port (run.go): one run of operations, in order, a failed
//     call skipping the rest of its object, pipelined calls answered in
//     send order.
//
// # Lock contract
//
// The controller's loop is the only writer: it calls the renderer's
// Renderer methods (Front takes the lock for each) and Apply. A renderer
// guards its state with one lock, which the loop takes to write (it may
// read without it: no one else writes) and the readers (REST views,
// status) take to read snapshots (Conflicts, Failures, Pending…, copies
// only). No lock is held while VPP is called, so a reader never waits for
// VPP: Apply plans under the lock, calls VPP without it, and records each
// answer under it. The types here take no lock themselves: their callers
// hold the renderer's. (nat44's lock is a sync.RWMutex, its readers
// sharing it; cnat's a sync.Mutex: an RWMutex costs its loop 2% more CPU
// per change for readers that hold it for microseconds.)
//
// Everything else reaches a renderer on the loop too (a VPP restart comes
// as a controller event, see servicerenderer/cnat's VPPRestarted).
package reconcile
