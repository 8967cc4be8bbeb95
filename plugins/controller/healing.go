package controller

import (
	"context"
	"time"
)

// Backoff bounds an exponential backoff: the first delay is Initial, each
// next one doubles, up to Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// The default backoff of healing resyncs and of re-listing etcd.
const (
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
)

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	b.Max = max(b.Max, b.Initial)
	return b
}

// backoff walks the delays of a Backoff.
type backoff struct {
	Backoff
	next time.Duration
}

func newBackoff(b Backoff) *backoff { return &backoff{Backoff: b, next: b.Initial} }

// delay returns the next delay and doubles the one after, up to the cap.
func (b *backoff) delay() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.Max)
	return d
}

// reset starts again from the initial delay.
func (b *backoff) reset() { b.next = b.Initial }

// alarm is a timer the loop selects on; its channel is nil while unset.
type alarm struct {
	t  *time.Timer
	on bool
}

func (a *alarm) set(d time.Duration) {
	if a.t == nil {
		a.t = time.NewTimer(d)
	} else {
		a.t.Reset(d)
	}
	a.on = true
}

func (a *alarm) stop() {
	if a.t != nil {
		a.t.Stop()
	}
	a.on = false
}

// C is the channel to select on; nil (never ready) while the alarm is unset.
// The receiver of a tick must call fired.
func (a *alarm) C() <-chan time.Time {
	if !a.on {
		return nil
	}
	return a.t.C
}

func (a *alarm) fired() { a.on = false }

// healer schedules healing resyncs after failures, with backoff.
type healer struct {
	bo    *backoff
	alarm alarm
}

// schedule arms a healing resync unless one is already pending.
func (h *healer) schedule() {
	if !h.alarm.on {
		h.alarm.set(h.bo.delay())
	}
}

// healed is called after a full resync applied without error: the pending
// healing is not needed anymore and the next failure starts a new backoff.
func (h *healer) healed() {
	h.alarm.stop()
	h.bo.reset()
}

// sleep waits for d or until ctx is done; it tells whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
