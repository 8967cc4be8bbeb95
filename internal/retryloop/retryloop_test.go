package retryloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRetriesUntilSuccessThenWaitsForAKick(t *testing.T) {
	var runs, failUntil atomic.Int32
	failUntil.Store(3)
	l := New(Params{Min: time.Millisecond, Max: 2 * time.Millisecond, Work: func(context.Context) error {
		if n := runs.Add(1); n <= failUntil.Load() {
			return fmt.Errorf("run %d failed", n)
		}
		return nil
	}})
	defer l.Close()
	if runs.Load() != 0 {
		t.Fatal("ran before a kick")
	}
	l.Kick()
	eventually(t, "a success", func() bool { return !l.Status().LastSuccess.IsZero() })
	if got := runs.Load(); got != 4 {
		t.Fatalf("%d runs, want 3 failures and a success", got)
	}
	if st := l.Status(); st.Failures != 0 || st.LastError != "" {
		t.Fatalf("status after success %+v", st)
	}
	time.Sleep(10 * time.Millisecond) // a run without a kick would show here
	if got := runs.Load(); got != 4 {
		t.Fatalf("%d runs without a kick", got)
	}
	l.Kick()
	eventually(t, "the kicked run", func() bool { return runs.Load() == 5 })
}

func TestNoRetryWaitsForTheNextKick(t *testing.T) {
	var runs atomic.Int32
	l := New(Params{Min: time.Millisecond, Work: func(context.Context) error {
		runs.Add(1)
		return fmt.Errorf("released: %w", ErrNoRetry)
	}})
	defer l.Close()
	l.Kick()
	eventually(t, "a failure", func() bool { return l.Status().Failures == 1 })
	time.Sleep(10 * time.Millisecond)
	if got := runs.Load(); got != 1 {
		t.Fatalf("%d runs, want 1", got)
	}
	if st := l.Status(); !strings.Contains(st.LastError, "released") || !st.Stalled {
		t.Fatalf("status %+v", st)
	}
}

// A Kick during a run that then fails with ErrNoRetry asks for the next
// run: the loop is not stalled while that run goes.
func TestKickDuringANoRetryRunIsNotStalled(t *testing.T) {
	var runs atomic.Int32
	second := make(chan struct{})
	release := make(chan struct{})
	var l *Loop
	l = New(Params{Min: time.Millisecond, Work: func(ctx context.Context) error {
		if runs.Add(1) == 1 {
			l.Kick() // the cluster changed while the run went
			return fmt.Errorf("released: %w", ErrNoRetry)
		}
		close(second)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}})
	defer l.Close()
	l.Kick()
	<-second
	if st := l.Status(); st.Stalled {
		t.Errorf("status %+v while the kicked run goes, want not stalled", st)
	}
	close(release)
	eventually(t, "the second run's success", func() bool { return !l.Status().LastSuccess.IsZero() })
}

func TestCloseCancelsARunAndStopsKicks(t *testing.T) {
	started := make(chan struct{})
	l := New(Params{Work: func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // a write waiting for an unreachable etcd
		return ctx.Err()
	}})
	l.Kick()
	<-started
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the run")
	}
	l.Kick() // no new goroutine: goleak checks
	l.Close()
}

func TestKicksCoalesce(t *testing.T) {
	release := make(chan struct{})
	var runs atomic.Int32
	l := New(Params{Work: func(context.Context) error {
		if runs.Add(1) == 1 {
			<-release
		}
		return nil
	}})
	defer l.Close()
	l.Kick()
	eventually(t, "the first run", func() bool { return runs.Load() == 1 })
	for range 100 {
		l.Kick()
	}
	close(release)
	eventually(t, "the second run", func() bool { return runs.Load() == 2 })
	time.Sleep(10 * time.Millisecond)
	if got := runs.Load(); got != 2 {
		t.Fatalf("%d runs for 100 kicks during one run, want 2", got)
	}
}

// Wait returns once done says so, reports a stall with the failure's text,
// and ends with its context; Shutdown closes the loop whatever Wait says.
func TestWaitAndShutdown(t *testing.T) {
	var written atomic.Bool
	var fail atomic.Bool
	l := New(Params{Min: time.Millisecond, Work: func(context.Context) error {
		if fail.Load() {
			return fmt.Errorf("refused: %w", ErrNoRetry)
		}
		written.Store(true)
		return nil
	}})
	l.Kick()
	if err := l.Wait(context.Background(), written.Load); err != nil {
		t.Fatalf("Wait after a success: %v", err)
	}

	written.Store(false)
	fail.Store(true)
	l.Kick()
	err := l.Wait(context.Background(), written.Load)
	if !errors.Is(err, ErrNoRetry) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Wait on a stalled loop: %v, want ErrNoRetry with the failure", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fail.Store(false)
	l.Kick() // no longer stalled
	if err := l.Shutdown(ctx, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with an ended context: %v, want context.Canceled", err)
	}
	l.Kick() // closed: no goroutine starts again (goleak checks)
}
