package controller

import (
	"bytes"
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultHistoryCheck is Params.HistoryCheck's default: an agent reads
// one key every 30 s (at 5000 nodes ~170 reads a second, which etcd
// serves from memory).
const DefaultHistoryCheck = 30 * time.Second

// historyCheckTimeout bounds one check: the watch goroutine waits for it,
// and an etcd that does not answer leaves the verdict to the connection's
// own handling (and the next check).
const historyCheckTimeout = 2 * time.Second

func historyCheck(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultHistoryCheck
	case d < 0:
		return 0
	}
	return d
}

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
func (w *watcher) historyLost(ctx context.Context, cluster uint64) string {
	seen := w.lastSeen()
	if seen.rev == 0 {
		return ""
	}
	rctx, cancel := context.WithTimeout(ctx, historyCheckTimeout)
	defer cancel()
	now, err := w.cli.Get(rctx, string(seen.key))
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
	then, err := w.cli.Get(rctx, string(seen.key), clientv3.WithRev(seen.rev))
	switch {
	case err != nil: // rpctypes.ErrCompacted among them: see the ASSUMPTION
		return ""
	case len(then.Kvs) == 0 || then.Kvs[0].ModRevision != seen.rev || !bytes.Equal(then.Kvs[0].Value, seen.value):
		return fmt.Sprintf("%s at revision %d is not the put read there", seen.key, seen.rev)
	}
	return ""
}
