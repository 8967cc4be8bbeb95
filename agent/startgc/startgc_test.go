package startgc

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings are the collector's percent and soft memory limit now.
func gcSettings() (percent int64, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// TestHoldGC: the collector is off while held, under a limit of what the
// process used at the start plus the allowance (a process using more than
// the allowance is not made to collect at once), the process's settings
// come back when the last holder releases, and a collection ends the hold.
func TestHoldGC(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	if release := Hold(0); true {
		release()
		if p, l := gcSettings(); p != p0 || l != l0 {
			t.Fatalf("Hold(0) changed the settings to %d%%, %d bytes", p, l)
		}
	}
	// The process uses more than the allowance.
	ballast := make([]byte, 96<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	const allowance = 32
	before := memoryUsed()
	first := Hold(allowance)
	after := memoryUsed()
	p, l := gcSettings()
	if lo, hi := uint64(before+(allowance-1)<<20), uint64(after+(allowance+1)<<20); p >= 0 || l < lo || l > hi {
		t.Fatalf("held: %d%%, limit %d bytes; want off, a limit in [%d, %d] (what the process used plus %d MiB)", p, l, lo, hi, allowance)
	}
	second := Hold(allowance)
	first()
	first() // a second call does nothing
	if p, _ := gcSettings(); p >= 0 {
		t.Fatalf("released by one of two holders: collector at %d%%, want still off", p)
	}
	runtime.KeepAlive(ballast)
	second()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("released: %d%%, %d bytes; want %d%%, %d", p, l, p0, l0)
	}

	_ = Hold(4096) // never released but by a collection
	for i := 0; ; i++ {
		runtime.GC()
		if p, l := gcSettings(); p == p0 && l == l0 {
			break
		}
		if i == 1000 {
			t.Fatal("no collection ended the hold")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHoldGCStaysUnderTheContainer: the hold's soft limit is kept below
// the container's memory limit, however large the allowance: above it the
// kernel would kill the agent before the runtime collected.
func TestHoldGCStaysUnderTheContainer(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	maxLimit := memoryUsed() + 64<<20
	release := holdUnder(4096, maxLimit)
	p, l := gcSettings()
	release()
	if p >= 0 || int64(l) != maxLimit {
		t.Fatalf("held under a container cap of %d bytes: %d%%, limit %d; want off, limit %d", maxLimit, p, l, maxLimit)
	}
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("released: %d%%, %d bytes; want %d%%, %d", p, l, p0, l0)
	}
}

// TestContainerMemoryCapIsAShare: whatever cgroup the test runs in, the
// cap is a positive number of bytes, no limit reading as math.MaxInt64.
func TestContainerMemoryCapIsAShare(t *testing.T) {
	if c := ContainerMemoryCap(); c <= 0 {
		t.Fatalf("ContainerMemoryCap() = %d, want > 0 (math.MaxInt64: no limit)", c)
	} else if c != math.MaxInt64 {
		t.Logf("the container's memory limit: %d bytes, the hold's cap %d", int64(float64(c)/cgroupShare), c)
	}
}
