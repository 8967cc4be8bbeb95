// Package offlinetest holds what the tests of the offline render and of
// its users share: the example cluster (deploy/examples/cluster.yaml) and a
// node's default configuration. It imports nothing of the offline render,
// so that package's own tests may use it too.
package offlinetest
