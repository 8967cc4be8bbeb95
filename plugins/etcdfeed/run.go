package etcdfeed

import (
	"context"
	"errors"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

// ErrRunTwice is returned by a second call of Run.
var ErrRunTwice = errors.New("etcdfeed: Run called twice")

// Run feeds the sink until ctx ends, and returns once every goroutine it
// started has ended. It may be called once.
func (f *Feed) Run(ctx context.Context) error {
	if f.running {
		return ErrRunTwice
	}
	f.running = true
	f.guard = newGuard()
	f.watcher = clientv3.NewWatchFromWatchClient(&guardedClient{WatchClient: pb.NewWatchClient(f.cli.ActiveConnection()), g: f.guard}, f.cli)
	defer func() { _ = f.watcher.Close() }()
	reconnected := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { f.monitor(ctx, reconnected) })
	f.run(ctx, reconnected)
	return nil
}

func (f *Feed) run(ctx context.Context, reconnected chan struct{}) {
	startup := true
	delay := f.backoff.DelayFunc()
	for {
		// A reconnection or a request before this listing is covered by it.
		drain(reconnected)
		drain(f.relist)
		l, err := f.list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := delay()
			f.log.Warn("cannot list etcd; keeping the last state", "err", err, "retryIn", d)
			if !backoff.Sleep(ctx, d) {
				return
			}
			continue
		}
		if f.p.RequireSynced {
			if err := f.complete(l); err != nil {
				if !f.hold(ctx, l.out.Revision, err, reconnected) {
					return
				}
				continue
			}
		}
		f.unhold()
		rev, cluster := l.out.Revision, l.cluster
		f.listed = len(l.out.Objects)
		f.log.Info("listed etcd", "startup", startup, "rev", rev, "objects", len(l.out.Objects), "skipped", len(l.out.Bad))
		f.st.watchRevision.Store(rev)
		f.sink.Resync(l.out, startup) // the sink's from here
		f.tookIn = true
		if !startup {
			f.st.relists.Add(1)
		}
		startup = false
		f.following()
		if f.hooks.AfterList != nil {
			f.hooks.AfterList()
		}

		next := make(map[string]int64, len(f.prefixes)+1)
		for _, p := range f.prefixes {
			next[p] = rev + 1
		}
		if f.p.RequireSynced {
			next[kubestate.SyncedKey] = rev + 1
		}
		var (
			healthy  bool
			failures int // watches since the listing that could not be followed
		)
		for {
			healthy, err = f.watch(ctx, next, reconnected, cluster)
			if ctx.Err() != nil {
				return
			}
			unfollowable := errors.Is(err, errUnfollowable)
			if unfollowable {
				failures++
				f.st.watchFailures.Add(1)
				f.notFollowing(err)
				if failures > f.p.MaxResumes {
					break
				}
				d := delay()
				f.log.Warn("cannot follow etcd's watch; resuming it from its revision", "err", err, "attempt", failures, "of", f.p.MaxResumes, "retryIn", d)
				if !backoff.Sleep(ctx, d) || !f.connected(ctx) {
					return
				}
				drain(reconnected)
			}
			// Back from an etcd outage (or a watch that failed): when
			// etcd kept its history, each watch resumes where it stopped
			// and nothing is listed again (a herd of agents re-listing is
			// what an outage must not cause); a compacted revision fails
			// the watch, and then the feed lists.
			if !unfollowable && !errors.Is(err, errReconnected) || !f.resumable(ctx, cluster, next) {
				break
			}
			f.st.resumes.Add(1)
			f.log.Info("etcd is back with its history; resuming the watch", "from", next)
		}
		if errors.Is(err, errHistoryLost) {
			f.st.historyLost.Add(1)
			f.log.Warn("etcd's history is not the one the watch followed (etcd restored from a backup or wiped); listing it again", "err", err)
		}
		if errors.Is(err, errUnfollowable) {
			d := delay()
			f.log.Error("cannot follow etcd's watch; listing etcd again", "err", err, "failures", failures, "maxResumes", f.p.MaxResumes, "retryIn", d)
			if !backoff.Sleep(ctx, d) {
				return
			}
			continue
		}
		if healthy {
			delay = f.backoff.DelayFunc()
			f.log.Info("etcd watch ended; re-listing", "reason", err)
			if (errors.Is(err, errReconnected) || errors.Is(err, errHistoryLost)) && !backoff.Sleep(ctx, f.relistDelay()) {
				return
			}
			continue
		}
		d := delay()
		f.log.Warn("etcd watch failed; re-listing", "err", err, "retryIn", d)
		if !backoff.Sleep(ctx, d) {
			return
		}
	}
}

// notFollowing reports that the feed cannot follow etcd, and why
// (Status.NotFollowing).
func (f *Feed) notFollowing(err error) {
	why := "cannot follow etcd: " + strings.TrimPrefix(err.Error(), errUnfollowable.Error()+": ")
	f.st.notFollowing.Store(&why)
}

// following clears what notFollowing reported: a listing was taken in, or
// the watch advanced.
func (f *Feed) following() {
	if old := f.st.notFollowing.Swap(nil); old != nil {
		f.log.Info("following etcd again", "was", *old)
	}
}
