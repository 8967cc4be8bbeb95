// Package backoff is the one exponential backoff policy of the agent, the
// reflector and their helpers: how long to wait after a failure before
// trying again.
//
// A Policy doubles its delay from Initial up to Max. Loops that count their
// failures ask Delay(n); loops that remember the last wait ask After(prev).
// With Jitter, Delay spreads each delay over [d/2, d] so that many agents
// failing together (an etcd restart) do not retry in step.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff: Initial, then twice the previous delay,
// at most Max (Max below Initial means Initial).
type Policy struct {
	Initial, Max time.Duration
	// Jitter draws each Delay uniformly from [d/2, d].
	Jitter bool
}

// maxShift bounds the doubling so that Initial<<shift cannot overflow for
// any Initial below about two hours.
const maxShift = 20

// Delay is the wait after the n-th failure in a row (n < 1 counts as 1):
// Initial·2^(n-1), at most Max, jittered when the policy says so.
func (p Policy) Delay(n int) time.Duration {
	d := min(p.Initial<<min(max(n-1, 0), maxShift), p.ceiling())
	if p.Jitter && d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// After is the wait that follows a wait of prev (0: the first wait):
// twice prev, at least Initial, at most Max. It never jitters.
func (p Policy) After(prev time.Duration) time.Duration {
	return min(max(2*prev, p.Initial), p.ceiling())
}

func (p Policy) ceiling() time.Duration { return max(p.Max, p.Initial) }

// Sleep waits d, or less if ctx ends first; false if ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
