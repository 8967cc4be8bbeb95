//go:build !race

package nodesync

const raceEnabled = false
