// Package etcdproxy serves etcd's gRPC proxy (go.etcd.io/etcd/server/v3/
// proxy/grpcproxy, the code behind `etcd grpc-proxy start`) in process, on
// a loopback listener, in front of a client of the members. The benchmark
// runs a tier of them between one etcd and many agents, and the tests here
// run the agent's own watcher, NodeSync and the reflector's fenced writes
// through one, proving what deploy/overlays/large-cluster relies on.
//
// What the proxy does: every watch of the same key range from the same
// revision, from any of its clients, becomes one watch on etcd whose events
// it copies to each client; KV, lease and maintenance requests are passed
// on (serializable ranges may be answered from the proxy's cache).
//
// Behaviour through a proxy, as the tests here show:
//   - Paged listing at a revision, transactions, leases and their
//     keep-alives, and the reflector's fenced writes work unchanged.
//   - Progress notifications requested with the watch (WithProgressNotify,
//     what the agent's watcher asks for) are passed on: the proxy's own
//     watch on etcd asks for them too. A client's explicit progress request
//     (RequestProgress) is not: the proxy drops it. The agent does not use it.
//   - A restarted proxy closes its clients' connections: the agent's
//     watcher sees the reconnection and resumes each watch from its
//     revision, without listing again.
//   - A restarted etcd is hidden from the proxy's clients: the proxy's own
//     watch resumes from its revision and the clients' watches go on. The
//     agent's check that etcd kept its history (after a reconnection) does
//     not run then, so an etcd restored from a backup or wiped behind a
//     proxy tier is only noticed by the agents once the proxies restart:
//     restart them after a restore (docs/large-cluster.md).
//   - A revision compacted away ends the watch with the compaction
//     (ErrCompacted): the agent lists again, as without a proxy.
//
// ASSUMPTION: etcd runs without authentication (as deploy/ sets it up);
// the proxy here forwards no client's token (etcd's grpc-proxy does).
package etcdproxy
