package harness

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// cpuTime is the process's user plus system CPU time (getrusage), GC
// workers and every other thread included: steadier than wall time on a
// shared machine (BENCH.md).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		// Getrusage(RUSAGE_SELF) fails only for a bad pointer.
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mark is the start of a measured section.
type mark struct {
	cpu     time.Duration
	wall    time.Time
	mallocs uint64
	bytes   uint64
}

// cost is what a measured section took.
type cost struct {
	cpu, wall time.Duration
	mallocs   uint64
	bytes     uint64 // allocated
}

// startMark reads the counters. ReadMemStats stops the world briefly, so
// marks belong around whole sections, never inside a timed loop.
func startMark() mark {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mark{cpu: cpuTime(), wall: time.Now(), mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

// since is the cost from m to now.
func (m mark) since() cost {
	wall := time.Since(m.wall)
	cpu := cpuTime() - m.cpu
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cost{cpu: cpu, wall: wall, mallocs: ms.Mallocs - m.mallocs, bytes: ms.TotalAlloc - m.bytes}
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of xs; 0 for none.
func percentile[T cmp.Ordered](xs []T, p float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
