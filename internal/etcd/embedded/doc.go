// Package embedded runs a single-member etcd inside the process
// (go.etcd.io/etcd/server/v3/embed), for the agent's
// etcd.embedded.enabled, the test servers of internal/etcdtest and the
// benchmark. Start returns once the member serves its clients; Close stops
// it and waits for it, cutting open client streams after
// Params.StreamDrain when that is set. It is the only package of the
// product that links etcd's server: programs that only talk to etcd
// import internal/etcd, the client, and stay free of it.
package embedded
