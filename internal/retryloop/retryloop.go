// Package retryloop runs a handler's background etcd writer: one goroutine
// that does a job when kicked and, while the job fails, retries it with a
// jittered exponential backoff. Kicks coalesce (the job always writes the
// latest wanted state, so one run covers every kick before it); nothing is
// queued per kick. The goroutine starts with the first Kick and ends with
// Close.
package retryloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"contiv.dev/vpp/internal/backoff"
)

// Defaults of Params.
const (
	DefaultMin = 100 * time.Millisecond
	DefaultMax = 10 * time.Second
)

// Params configures a Loop.
type Params struct {
	// Work does the job; required. It is called on the loop's goroutine
	// only, with a context ended by Close. An error wrapping ErrNoRetry is
	// not retried: the loop waits for the next Kick.
	Work func(ctx context.Context) error
	// Min and Max bound the pause between failed runs (defaults DefaultMin
	// and DefaultMax).
	Min, Max time.Duration
}

// ErrNoRetry marks a failure that retrying cannot mend (the next Kick
// brings what might).
var ErrNoRetry = errors.New("not retried until asked again")

// Status is what the loop tells about its runs.
type Status struct {
	// Failures counts the failed runs since the last success.
	Failures int `json:"failures"`
	// LastError is the last failure's text; empty after a success.
	LastError string `json:"lastError,omitempty"`
	// LastErrorAt is when the last failure happened.
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
	// LastSuccess is when a run last succeeded.
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	// Stalled is set when the last run failed with ErrNoRetry: the loop
	// waits for the next Kick.
	Stalled bool `json:"stalled,omitempty"`
}

// Loop is one background worker. Its methods are safe from any goroutine.
type Loop struct {
	p    Params
	kick chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	st      Status
}

// New returns a loop; its goroutine starts with the first Kick.
func New(p Params) *Loop {
	if p.Min <= 0 {
		p.Min = DefaultMin
	}
	if p.Max < p.Min {
		p.Max = max(DefaultMax, p.Min)
	}
	return &Loop{p: p, kick: make(chan struct{}, 1)}
}

// Kick asks for a run; it never blocks. After Close it does nothing.
func (l *Loop) Kick() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.st.Stalled = false // the next run may mend it
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		l.wg.Go(func() { l.run(ctx) })
	}
	// Sent under the lock, so that a run ending now sees the kick waiting
	// and does not call itself stalled.
	select {
	case l.kick <- struct{}{}:
	default:
	}
	l.mu.Unlock()
}

// Close stops the goroutine, cancelling a run in progress, and waits for
// it. It may be called more than once.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed = true
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	l.wg.Wait()
}

// Status returns the loop's status.
func (l *Loop) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// Wait polls done until it reports the loop's work written, and returns
// nil; or returns an error when ctx ends first, or when the loop stalled
// on a failure retrying cannot mend. done is the owner's view of what is
// left to write (the loop does not know it).
func (l *Loop) Wait(ctx context.Context, done func() bool) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if done() {
			return nil
		}
		st := l.Status()
		if st.Stalled {
			return fmt.Errorf("writes pending, %w: %s", ErrNoRetry, st.LastError)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("writes pending (last error: %q): %w", st.LastError, ctx.Err())
		case <-t.C:
		}
	}
}

// Shutdown waits as Wait does, then closes the loop whatever Wait
// returned; the error is Wait's.
func (l *Loop) Shutdown(ctx context.Context, done func() bool) error {
	err := l.Wait(ctx, done)
	l.Close()
	return err
}

func (l *Loop) run(ctx context.Context) {
	fails := 0
	for {
		if fails == 0 {
			select {
			case <-ctx.Done():
				return
			case <-l.kick:
			}
		} else {
			// Kicks during the pause wait for it: the run after it covers them.
			t := time.NewTimer(l.delay(fails))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case <-l.kick:
			default:
			}
		}
		err := l.p.Work(ctx)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		l.mu.Lock()
		if err == nil {
			fails = 0
			l.st = Status{LastSuccess: now}
		} else {
			l.st.Failures++
			l.st.LastError, l.st.LastErrorAt = err.Error(), now
			fails = l.st.Failures
			l.st.Stalled = false
			if errors.Is(err, ErrNoRetry) {
				fails = 0
				// A Kick during the run already asked for the next one.
				l.st.Stalled = len(l.kick) == 0
			}
		}
		l.mu.Unlock()
	}
}

// delay is the jittered pause after the fails-th failure in a row.
func (l *Loop) delay(fails int) time.Duration {
	return backoff.Policy{Initial: l.p.Min, Max: l.p.Max, Jitter: true}.Delay(fails)
}
