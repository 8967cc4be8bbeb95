// Package etcd connects the agent, the reflector and contivctl to an etcd
// cluster: NewClient dials the configured endpoints (TLS and user
// supported) and returns etcd's own client, tuned so that every
// connection reconnects within ReconnectMaxDelay and pings its peer. It
// knows nothing about what is stored in etcd (the key layout lives in
// kubestate) and nothing of etcd's server: an embedded member, for the
// agent's etcd.embedded.enabled and for tests, is package
// internal/etcd/embedded, which programs that only talk to etcd (contivctl,
// contiv-ksr) do not link.
package etcd
