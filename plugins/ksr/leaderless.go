package ksr

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// observingLock is the election's lock, noting when a leader was last
// seen: a read of the Lease whose record changed since the last read (a
// holder renewed it, or a new one took it) or a write of this replica that
// succeeded (it took or renewed the lease). client-go calls it from its
// elector goroutine only.
type observingLock struct {
	resourcelock.Interface
	r    *Reflector
	last []byte
}

// Get implements resourcelock.Interface.
func (l *observingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	switch {
	case err != nil:
		l.r.electionFailed(err)
	case rec.HolderIdentity != "" && !bytes.Equal(raw, l.last):
		l.r.leaderSeen()
	}
	if err == nil {
		l.last = raw
	}
	return rec, raw, err
}

// Create implements resourcelock.Interface.
func (l *observingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.wrote(l.Interface.Create(ctx, ler))
}

// Update implements resourcelock.Interface.
func (l *observingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.wrote(l.Interface.Update(ctx, ler))
}

func (l *observingLock) wrote(err error) error {
	if err != nil {
		l.r.electionFailed(err)
	} else {
		l.r.leaderSeen()
	}
	return err
}

// leaderSeen notes that a replica leads now.
func (r *Reflector) leaderSeen() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaderAt = time.Now()
	r.status.ElectionError = ""
}

// electionFailed notes a failed call on the Lease.
func (r *Reflector) electionFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.ElectionError = err.Error()
}

// leaderless is how long no leader has been seen, when that is longer
// than the lease duration and the retries a healthy follower needs to take
// an expired lease over (client-go retries every RetryPeriod, jittered up
// to ×2.2): a failover is no reason to be unready. 0 without election.
func (r *Reflector) leaderless(now time.Time) time.Duration {
	if r.p.Election == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaderAt.IsZero() {
		return 0 // not campaigning yet
	}
	e := r.p.Election
	if d := now.Sub(r.leaderAt); d > e.LeaseDuration+e.RetryPeriod*11/5 {
		return d
	}
	return 0
}

// notReady says why the replica is not ready; empty when it is.
func (r *Reflector) notReady(now time.Time) []string {
	var out []string
	if d := r.leaderless(now); d > 0 {
		s := r.Status()
		why := fmt.Sprintf("no replica has led for %s (longer than the lease duration, %s)", d.Round(time.Second), r.p.Election.LeaseDuration)
		if s.ElectionError != "" {
			why += ": " + s.ElectionError
		}
		out = append(out, why)
	}
	r.mu.Lock()
	if r.status.Leader && !r.status.Synced {
		out = append(out, "leading, but etcd is not in sync yet")
	}
	r.mu.Unlock()
	return out
}
