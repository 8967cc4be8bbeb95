// Package nodesync measures K agents claiming node IDs at once against
// one embedded etcd (figures nodesync and nodesync-many). It is for
// whoever changes noderegistry's claim. Every round's IDs must be
// distinct and in 1…K; its results are the keys nodesync and
// nodesync_many of bench/results.json.
package nodesync
