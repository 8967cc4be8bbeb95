package etcdfeed

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestStoreMaxNeverGoesBack(t *testing.T) {
	var a atomic.Int64
	for _, v := range []int64{5, 3, 9, 9, 1} {
		storeMax(&a, v)
	}
	if got := a.Load(); got != 9 {
		t.Errorf("storeMax kept %d, want 9", got)
	}
}

// TestBackoffIsJittered: the retries' waits double from Initial up to Max,
// each drawn from [d, 1.5d], and agents failing together do not all wait
// the same.
func TestBackoffIsJittered(t *testing.T) {
	b := Backoff{Initial: 8 * time.Millisecond, Max: 64 * time.Millisecond}.wait()
	seen := map[time.Duration]bool{}
	for range 100 {
		delay := b.DelayFunc()
		for n := range 6 {
			d, whole := delay(), min(8*time.Millisecond<<n, 64*time.Millisecond)
			if d < whole || d > whole*3/2 {
				t.Fatalf("wait %d = %v, outside [%v, %v]", n+1, d, whole, whole*3/2)
			}
			seen[d] = true
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct waits in 600", len(seen))
	}
	if d := (Backoff{}).wait(); d.Duration != DefaultBackoffInitial || d.Cap != DefaultBackoffMax {
		t.Errorf("defaults %+v", d)
	}
}

// TestGuardCountsStreamFailuresInARow: the guard hands the feed a failure
// once the stream failed maxStreamFailures times with no event or progress
// notification between; a lost connection is not counted, and a response
// that advances the watch starts the count again.
func TestGuardCountsStreamFailuresInARow(t *testing.T) {
	g := newGuard()
	bad := status.Error(codes.Internal, "grpc: failed to unmarshal the received message")
	for range maxStreamFailures - 1 {
		g.failed(bad)
		g.failed(status.Error(codes.Unavailable, "connection lost"))
		g.received(&pb.WatchResponse{Created: true})
	}
	g.received(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 9}}) // a progress notification
	for range maxStreamFailures - 1 {
		g.failed(bad)
	}
	select {
	case err := <-g.failing:
		t.Fatalf("failing after a response that advanced: %v", err)
	default:
	}
	g.failed(bad)
	select {
	case err := <-g.failing:
		if !errors.Is(err, errUnfollowable) || !errors.Is(err, bad) {
			t.Errorf("failing with %v", err)
		}
	default:
		t.Fatal("not failing after maxStreamFailures failures in a row")
	}
	g.reset()
	select {
	case err := <-g.failing:
		t.Fatalf("failing after reset: %v", err)
	default:
	}
}
