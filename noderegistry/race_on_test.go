//go:build race

package noderegistry

// raceEnabled: the race detector slows the embedded etcd too much for the
// largest races.
const raceEnabled = true
