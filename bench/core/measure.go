package core

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"syscall"
	"time"
)

// CPUTime is the process's user plus system CPU time (getrusage), GC
// workers and every other thread included: steadier than wall time on a
// shared machine (BENCH.md).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		// Getrusage(RUSAGE_SELF) fails only for a bad pointer.
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Mark is the start of a measured section.
type Mark struct {
	cpu     time.Duration
	wall    time.Time
	mallocs uint64
	bytes   uint64
}

// Cost is what a measured section took.
type Cost struct {
	CPU, Wall time.Duration
	Mallocs   uint64
	Bytes     uint64 // allocated
}

// StartMark reads the counters. ReadMemStats stops the world briefly, so
// marks belong around whole sections, never inside a timed loop.
func StartMark() Mark {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Mark{cpu: CPUTime(), wall: time.Now(), mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

// since is the cost from m to now.
func (m Mark) Since() Cost {
	wall := time.Since(m.wall)
	cpu := CPUTime() - m.cpu
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Cost{CPU: cpu, Wall: wall, Mallocs: ms.Mallocs - m.mallocs, Bytes: ms.TotalAlloc - m.bytes}
}

// HeapAfterGC is the live heap after a full collection.
func HeapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Percentile is the nearest-rank p-quantile (0 < p ≤ 1) of xs; 0 for none.
func Percentile[T cmp.Ordered](xs []T, p float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median is the middle value of xs (the mean of the two middle ones for
// an even count); 0 for none.
func Median(xs []float64) float64 {
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

func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func US(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// LiveHeap is the live heap the last collection marked.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
