package backoff

import (
	"context"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestDelayDoublesUpToMax(t *testing.T) {
	p := Policy{Initial: 100 * ms, Max: time.Second}
	var got []time.Duration
	for n := 0; n <= 6; n++ {
		got = append(got, p.Delay(n))
	}
	want := []time.Duration{100 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("Delay(0..6) = %v, want %v", got, want)
	}
	if d := p.Delay(1 << 30); d != time.Second {
		t.Errorf("Delay after a billion failures = %v, want the cap", d)
	}
	if d := (Policy{Initial: time.Second, Max: ms}).Delay(3); d != time.Second {
		t.Errorf("Max below Initial: %v, want Initial", d)
	}
}

func TestJitterStaysWithinHalfToWhole(t *testing.T) {
	p := Policy{Initial: 8 * ms, Max: 64 * ms, Jitter: true}
	seen := map[time.Duration]bool{}
	for n := 1; n <= 5; n++ {
		whole := min(8*ms<<(n-1), 64*ms)
		for range 200 {
			d := p.Delay(n)
			if d < whole/2 || d > whole {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", n, d, whole/2, whole)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("jitter drew only %d distinct delays in 1000", len(seen))
	}
}

func TestAfterFollowsThePreviousWait(t *testing.T) {
	p := Policy{Initial: 100 * ms, Max: time.Second}
	var d time.Duration
	var got []time.Duration
	for range 6 {
		d = p.After(d)
		got = append(got, d)
	}
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("After chain = %v, want %v", got, want)
	}
	if d := p.After(10 * time.Second); d != time.Second {
		t.Errorf("After a wait longer than Max = %v, want Max", d)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep on an ended context reported a full wait")
	}
	if !Sleep(context.Background(), ms) {
		t.Error("Sleep of 1ms reported an ended context")
	}
}
