package etcdfeed

import (
	"bytes"
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"
)

// historyCheckTimeout bounds one check: the watch goroutine waits for it,
// and an etcd that does not answer leaves the verdict to the connection's
// own handling (and the next check).
const historyCheckTimeout = 2 * time.Second

// historyLost tells why etcd no longer holds the history of cluster the
// running watch follows, or "" when it does or cannot tell (etcd
// unreachable: the connection's own handling takes over). The witness is
// the newest put read (lastSeen): etcd holds the history when the key
// still has that value at that revision. Read first as it is now (one
// read, enough while the key has not changed since); then at the put's
// revision.
//
// ASSUMPTION: a revision etcd has compacted away is of a history it kept
// at least that long; a wipe is seen by an earlier check, long before the
// new etcd could reach and compact the revision.
func (f *Feed) historyLost(ctx context.Context, cluster uint64) string {
	seen := f.lastSeen()
	if seen.rev == 0 {
		return ""
	}
	rctx, cancel := context.WithTimeout(ctx, historyCheckTimeout)
	defer cancel()
	now, err := f.cli.Get(rctx, string(seen.key))
	if err != nil {
		return ""
	}
	switch {
	case now.Header.ClusterId != cluster:
		return fmt.Sprintf("cluster ID %x, listed from %x", now.Header.ClusterId, cluster)
	case now.Header.Revision < seen.rev:
		return fmt.Sprintf("etcd's revision %d is below %d, of %s read before", now.Header.Revision, seen.rev, seen.key)
	case len(now.Kvs) > 0 && now.Kvs[0].ModRevision == seen.rev:
		if bytes.Equal(now.Kvs[0].Value, seen.value) {
			return ""
		}
		return fmt.Sprintf("%s at revision %d holds another value than the one read", seen.key, seen.rev)
	}
	then, err := f.cli.Get(rctx, string(seen.key), clientv3.WithRev(seen.rev))
	switch {
	case err != nil: // rpctypes.ErrCompacted among them: see the ASSUMPTION
		return ""
	case len(then.Kvs) == 0 || then.Kvs[0].ModRevision != seen.rev || !bytes.Equal(then.Kvs[0].Value, seen.value):
		return fmt.Sprintf("%s at revision %d is not the put read there", seen.key, seen.rev)
	}
	return ""
}

// resumable tells whether etcd still holds the history the watches were
// following: the same cluster, a revision no older than what they
// delivered (a restore from a backup or a wiped etcd goes back; then only
// a listing is right), and the newest put the feed read, at its revision.
// The last check catches an etcd wiped while the agent could not reach it
// and written past the agent's revision since: a member started again on
// empty data with its name and peer address has its cluster ID, and its
// revisions count again from 1.
//
// ASSUMPTION: a wiped etcd does not hold, by chance, the very put the feed
// read last at its revision (same key, same value); the sync marker,
// rewritten at every sweep, carries the time of its sweep. An etcd
// compacted past that put is listed again: the price of a quiet cluster,
// spread by RelistJitter.
func (f *Feed) resumable(ctx context.Context, cluster uint64, next map[string]int64) bool {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := f.cli.Get(rctx, f.prefixes[0], clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Header.ClusterId != cluster {
		return false
	}
	for _, n := range next {
		if resp.Header.Revision < n-1 {
			return false
		}
	}
	seen := f.lastSeen()
	if seen.rev == 0 {
		return true // nothing read to check it by
	}
	got, err := f.cli.Get(rctx, string(seen.key), clientv3.WithRev(seen.rev))
	if err != nil || len(got.Kvs) == 0 {
		return false
	}
	kv := got.Kvs[0]
	return kv.ModRevision == seen.rev && bytes.Equal(kv.Value, seen.value)
}

// monitor signals each time the client's connection to etcd comes back
// after it was lost: the watch then may have missed a restore or a wipe
// of etcd, so the feed checks etcd's history before it resumes.
func (f *Feed) monitor(ctx context.Context, reconnected chan<- struct{}) {
	conn := f.cli.ActiveConnection()
	s := conn.GetState()
	wasReady := s == connectivity.Ready
	f.st.connected.Store(wasReady)
	for conn.WaitForStateChange(ctx, s) {
		s = conn.GetState()
		f.log.Debug("etcd connection", "state", s.String())
		if f.st.connected.Swap(s == connectivity.Ready) != (s == connectivity.Ready) {
			f.log.Info("etcd connection", "connected", s == connectivity.Ready)
		}
		if s != connectivity.Ready {
			continue
		}
		if wasReady {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}
		wasReady = true
	}
}

// connected waits until the client's connection to etcd is up; false when
// ctx ended first.
func (f *Feed) connected(ctx context.Context) bool {
	conn := f.cli.ActiveConnection()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return true
		case connectivity.Idle:
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return false
		}
	}
}
