package startgc

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// The collector during the start. From nothing to its first full apply
// the agent builds its whole state (at W(50 000): ~270 MiB allocated, a
// live heap growing to ~135 MiB), and at the runtime's default settings
// each of the ~9 collections that follow the heap's doublings marks the
// live heap again: work done only to free garbage a few milliseconds
// sooner. Until its first full apply the agent turns the collector off
// under a soft memory limit of what the process uses at the start plus
// controller.startupHeapMiB; the first collection — the limit reached,
// the start larger than planned — or the first full apply (done or
// failed: a VPP that is not there or not this agent's must not keep the
// collector off while the agent waits), or the end of Run restores the
// runtime's settings, and the next collection brings the heap back to the
// live state. The allowance is counted from what the
// process uses, not from zero, so that a process holding more than the
// agent (tests, the benchmark) is not made to collect at once.
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

// Hold turns the collector off with a soft memory limit of what the
// process uses now plus allowanceMiB (kept lower when it was lower, and
// within the container's memory limit: ContainerMemoryCap) until release
// is called (once; later calls do nothing) or a collection happens.
// allowanceMiB <= 0 leaves everything as it is.
func Hold(allowanceMiB int) (release func()) {
	if allowanceMiB <= 0 {
		return func() {}
	}
	return holdUnder(allowanceMiB, ContainerMemoryCap())
}

// holdUnder is Hold with the limit kept at most maxLimit bytes.
func holdUnder(allowanceMiB int, maxLimit int64) (release func()) {
	gcHold.mu.Lock()
	if gcHold.holders == 0 {
		gcHold.limit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(gcHold.limit, addMiB(memoryUsed(), allowanceMiB), maxLimit))
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

// memoryUsed is what the soft memory limit is compared with: the Go
// runtime's memory less the heap memory returned to the system.
func memoryUsed() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// addMiB is b plus n MiB, at most math.MaxInt64.
func addMiB(b int64, n int) int64 {
	if m := int64(n); m >= (math.MaxInt64-b)>>20 {
		return math.MaxInt64
	}
	return b + int64(n)<<20
}

// The container's memory limit. The hold lets the heap grow by its
// allowance without collecting; in a container whose memory limit lies
// below that, the kernel would kill the agent before the runtime's soft
// limit made it collect. The hold's limit is therefore kept to a share of
// the cgroup's memory limit.

// cgroupShare is the share of the cgroup's memory limit the hold lets the
// Go runtime's memory reach: the rest is for what the runtime does not
// count (the binary, thread stacks of the kernel, page cache charged to
// the container) and for the collection the limit then starts.
const cgroupShare = 0.75

// ContainerMemoryCap is the most the hold lets the Go runtime's memory
// reach under the process's cgroup: cgroupShare of the lowest memory limit
// of the process's cgroup and of its ancestors (a pod's limit binds its
// containers), cgroup v1 or v2, as automemlimit reads it; math.MaxInt64
// when there is none or it cannot be read.
func ContainerMemoryCap() int64 {
	l, err := memlimit.ApplyRatio(memlimit.FromCgroup, cgroupShare)()
	if err != nil || l == 0 || l >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}
