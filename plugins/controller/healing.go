package controller

import (
	"time"

	"contiv.dev/vpp/internal/backoff"
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

// delays walks the delays of a Backoff: internal/backoff's policy,
// without jitter (the loop is alone in pacing its retries).
type delays struct {
	p    backoff.Policy
	prev time.Duration
}

func newBackoff(b Backoff) *delays {
	return &delays{p: backoff.Policy{Initial: b.Initial, Max: b.Max}}
}

// delay returns the next delay: Initial, then twice the previous, up to
// the cap.
func (d *delays) delay() time.Duration {
	d.prev = d.p.After(d.prev)
	return d.prev
}

// reset starts again from the initial delay.
func (d *delays) reset() { d.prev = 0 }

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
	bo    *delays
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
