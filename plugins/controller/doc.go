// Package controller is the agent's event loop: it takes in the cluster
// state (from etcd, through plugins/etcdfeed) and the agent's own events,
// and drives the agent's handlers and appliers with them. It is for the
// agent (and the tools that render offline); its contract: handlers see
// every change once, in order per key, in batches applied only after a
// consistent startup snapshot, and Push never blocks nor drops.
//
// One goroutine takes in events in batches. Producers (the etcd feed,
// NodeSync, timers, REST) only queue: Push never blocks and never drops.
// Queued changes to one key collapse into one (the previous value of the
// first, the new value of the last; no-ops are dropped) and a fresh listing
// of etcd supersedes the changes queued before it. A no-op is told apart by
// comparing the decoded object with the one the controller holds for its
// key (same); it keeps no stored bytes nor digests of them. Each batch runs in two
// phases: every Handler takes in every event, in a fixed order (reverse
// order for removals); then every Applier is called once. Nothing is
// applied before the startup snapshot is in and every ReadyHandler is
// ready, so the first apply is a consistent snapshot. ApplyObservers are
// told before and after every apply step, with how it went (readiness,
// metrics, health watch it without wrapping it). A ResyncEvent may say the
// data plane restarted (DataplaneRestarted): resyncs queued together keep
// it, and handlers hear it on the loop, in that resync.
//
// Changes that queue up are applied in batches: once the loop found more
// than one event queued, its next apply waits BatchHold (5 ms) after the
// last, as long as each batch so taken holds more than one; a lone change
// goes at once. While a batch is held, pushes do not wake the loop.
//
// The loop allocates nothing per change: changes are queued by value, the
// drained entries go back to the queue, and every change is handed in one
// reused ChangeEvent. ASSUMPTION (api.go, ChangeEvent): no handler keeps
// the event itself past Update (each handler of the agent was read for it).
// The loop publishes its status once a batch.
//
// With a Client, the cluster state comes from etcd through the etcd feed
// (plugins/etcdfeed, etcd's own client): it hands the loop a listing (a
// resync that supersedes the changes queued before it) and then each watch
// response's changes (one push), through a sink that only queues. The
// feed lists again on a lost, compacted or unfollowable watch, resumes
// after a reconnection when etcd kept its history, and skips (logs,
// counts) stored values that do not decode: the controller keeps their
// key's last good value. Its counters are the controller's Status; while
// it cannot follow etcd's watch, Status.NotFollowing says why and the
// controller is not ready. A failed handler or apply schedules a healing
// resync from the cached view with exponential backoff; a periodic resync
// repairs drift.
//
// With Params.PodNode set, the pods listed and watched are that node's only
// (kubestate.PodPrefix): an agent never receives, nor decodes, another
// node's pods. Each listing reads the layout marker (kubestate.LayoutKey),
// reported in Status.Layout. With Params.RequireSynced (the agent) a listing
// that is not a complete reflector output (kubestate.Completeness: no layout
// marker, no sync marker, or one older than what was taken in) is held: the
// handlers keep their state, Status.Held says why, the controller is not
// ready, and etcd is listed again when the sync marker is written; a watched
// wipe is not taken in either. Without it, an absent layout marker is said
// once at info level and another layout at error level.
//
// The package knows the stored models (kubestate) and etcd, nothing about
// the handlers it drives nor about VPP: what to compute and what to program
// is the handlers' and appliers' business.
package controller
