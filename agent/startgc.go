package agent

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
)

// The collector during the start. From nothing to its first full apply
// the agent builds its whole state (at W(50 000): ~270 MiB allocated, a
// live heap growing to ~135 MiB), and at the runtime's default settings
// each of the ~9 collections that follow the heap's doublings marks the
// live heap again: work done only to free garbage a few milliseconds
// sooner. Until its first full apply (controller.startupHeapMiB) the agent
// turns the collector off under a soft memory limit; the first collection
// — the limit reached, the start longer than planned — or the first full
// apply, or the end of Run restores the runtime's settings, and the next
// collection brings the heap back to the live state.
//
// The settings are the process's: agents started at once in one process
// (tests, the benchmark) share one hold, taken by the first and released
// by the last.

// gcHold is the process's hold of the collector's settings.
var gcHold struct {
	mu      sync.Mutex
	holders int
	// percent and limit are the settings before the first holder.
	percent int
	limit   int64
}

// holdGC turns the collector off with a soft memory limit of at most
// limitMiB until release is called (once; later calls do nothing) or a
// collection happens. limitMiB <= 0 leaves everything as it is.
func holdGC(limitMiB int) (release func()) {
	if limitMiB <= 0 {
		return func() {}
	}
	limit := int64(math.MaxInt64)
	if limitMiB < math.MaxInt64>>20 {
		limit = int64(limitMiB) << 20
	}
	gcHold.mu.Lock()
	if gcHold.holders == 0 {
		gcHold.limit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(gcHold.limit, limit))
		gcHold.percent = debug.SetGCPercent(-1)
	}
	gcHold.holders++
	gcHold.mu.Unlock()
	release = sync.OnceFunc(func() {
		gcHold.mu.Lock()
		defer gcHold.mu.Unlock()
		if gcHold.holders--; gcHold.holders == 0 {
			debug.SetGCPercent(gcHold.percent)
			debug.SetMemoryLimit(gcHold.limit)
		}
	})
	// A collection frees the sentinel (16 bytes: no tiny allocation,
	// which would share its block): the limit was reached (or another
	// part of the process collected); the start goes on with the
	// runtime's settings.
	runtime.AddCleanup(new([16]byte), func(release func()) { release() }, release)
	return release
}
