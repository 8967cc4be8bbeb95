// Package controller is the agent's event loop and its etcd watcher.
//
// One goroutine takes in events in batches. Producers (the etcd watcher,
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
// The watcher lists the watched resources at one revision, page by page
// (the first page's revision), and watches from the next. A listing's
// pages are read on the client's connection and decoded from the bytes
// received (wire.go: no KeyValue is made); the next page is read while one
// is decoded, into the buffer of a page already decoded (nothing decoded
// keeps a slice of a page), into a map made with room for what etcd
// holds, under keys that hold the objects' own strings
// (kubestate.DecodeStored); the listing's resync also hands handlers the
// objects in the order they were listed, and decoded into memory
// (ResyncEvent.Listed); pages grow from 1000 keys to 4000 when many
// remain, as etcd counts every key from a page to the prefix's end to
// answer it (n²/2p key visits for n keys in pages of p). Every resource's
// watch is on one raw gRPC Watch stream of etcd's API (stream.go): the goroutine that receives a response decodes it from
// the bytes gRPC received (wire.go: no etcd protobuf types are made) into
// the models and queues its changes, one hand-off to the loop. On a failed or compacted
// watch it lists again and the handlers resync from the new listing. When
// the stream breaks or the connection to etcd comes back, the watches
// resume where they stopped (progress notifications move each one's
// revision on) if etcd kept their history: the same cluster ID, a revision
// not gone back, and the newest put the watcher read still there at its
// revision (an etcd wiped while out of reach, and written past the agent's
// revision since, keeps its cluster ID); else it lists again. ASSUMPTION
// (watcher.go, resumable): no wiped etcd holds that very put by chance; the
// sync marker carries its sweep's time. A running watch makes the same
// check every Params.HistoryCheck (history.go; default 30 s): behind an
// etcd gRPC proxy the connection outlives an etcd restored or wiped, and
// nothing else would notice. Undecodable values are logged, counted and skipped; the last
// good value of their key is kept. A failed handler or apply schedules a
// healing resync from the cached view with exponential backoff; a periodic
// resync repairs drift. Status reports all of it.
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
