//go:build !race

package noderegistry

const raceEnabled = false
