// Package etcdfeed follows the cluster state the reflector stores in etcd
// and hands it to one consumer (the agent's controller) through a Sink: a
// listing of every watched object at one revision, then the changes after
// it, each key's changes in revision order, none lost or handed twice
// between a listing and the next.
//
// etcd is read with etcd's own client (go.etcd.io/etcd/client/v3): a
// listing pages through each resource's prefix with etcd's KV.Range (key,
// range end, limit and revision: every page at the first page's revision;
// pages grow from 1000 keys to 4000 when many remain, as etcd counts every
// key from a page to the prefix's end to answer it), decoding each page
// while the next is read. The Range calls go over the client's connection
// (its credentials and endpoints) but their responses are decoded by
// internal/etcdrange's generated code, whose keys and values are slices of
// the page's one buffer: clientv3's Get copies each into an allocation of
// its own, which cost the agent's start a third of its CPU at W(50000)
// (docs/PERFORMANCE.md). Each resource is then watched with Watch from the
// listing's next revision, with progress notifications (they move each
// watch's revision on). Stored values are decoded into the models
// (kubestate.DecodeStored); an undecodable value is logged, counted and
// skipped, and its key named in Listing.Bad: the consumer keeps the last
// good value.
//
// When the connection to etcd comes back, or a watch cannot be followed,
// the watches resume where they stopped if etcd kept their history (the
// same cluster ID, a revision not gone back, and the newest put the feed
// read still there at its revision); else, and on a compaction, the feed
// lists again (after RelistJitter's spread when etcd came back) and the
// consumer resyncs from the listing. A watch that cannot be followed — an
// event neither PUT nor DELETE, a response gRPC cannot decode, a stream
// reset again and again (clientv3 would open a new stream and resume
// without end: guard.go counts its failures), a watch etcd cancelled — is
// resumed at most Params.MaxResumes times, with a jittered exponential
// backoff (k8s.io/apimachinery's wait.Backoff), then etcd is listed again;
// meanwhile Status.NotFollowing says "cannot follow etcd: <reason>" and
// Status.WatchFailures counts it. Every Params.HistoryCheck a running
// watch checks that etcd still holds its history (behind an etcd gRPC
// proxy the connection outlives an etcd restored or wiped).
//
// With Params.RequireSynced (the agent) a listing that is not a complete
// reflector output (kubestate.Completeness) is held, not handed on
// (Status.Held says why), and etcd is listed again when the sync marker is
// written; a watched wipe is not handed on either.
//
// The feed never blocks on its sink and writes nothing but through it: the
// sink's Resync and Changes are its only outputs, Status its report.
package etcdfeed
