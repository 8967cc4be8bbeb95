// Package etcd connects the agent, the reflector and contivctl to etcd.
//
// With endpoints configured it returns a client for that cluster (TLS
// supported); with none it starts an embedded single-member etcd
// (go.etcd.io/etcd/server/v3/embed) and returns a client for it. Every
// client reconnects within ReconnectMaxDelay and pings its connection. It knows
// nothing about what is stored in etcd: the key layout lives in kubestate.
package etcd
