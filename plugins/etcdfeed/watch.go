package etcdfeed

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// watch hands the sink the changes after each prefix's revision in next
// until the watch ends, and tells why. healthy tells that the watch worked
// (every prefix's watch was created).
//
// Each prefix is watched with clientv3's Watch, from its revision in next,
// with progress notifications (they move its revision on); the watches
// share one gRPC stream (one context). One watch per resource keeps the
// agent from receiving keys under the prefix that are not cluster state,
// such as every node's pod IP allocations. A goroutine per watch takes in
// its responses, one at a time over all of them (takeIn's lock). A
// response that cannot be taken in (an event neither PUT nor DELETE), a
// watch etcd or the client ended (other than for compaction), and a stream
// that keeps failing (guard) end it with errUnfollowable.
//
// Every historyCheck it checks that etcd still holds the history of cluster
// it follows (historyLost), and ends with errHistoryLost when not.
func (f *Feed) watch(ctx context.Context, next map[string]int64, reconnected <-chan struct{}, cluster uint64) (healthy bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	t := &takeIn{f: f, next: next, ended: make(chan struct{})}
	f.guard.reset()
	watches := make(map[string]clientv3.WatchChan, len(next))
	for p, rev := range next {
		opts := []clientv3.OpOption{clientv3.WithRev(rev), clientv3.WithProgressNotify(), clientv3.WithCreatedNotify()}
		if p != kubestate.SyncedKey {
			opts = append(opts, clientv3.WithPrefix())
		}
		watches[p] = f.watcher.Watch(wctx, p, opts...)
	}
	var wg sync.WaitGroup
	for p, wch := range watches {
		wg.Go(func() { t.follow(wctx, p, wch) })
	}
	var check <-chan time.Time
	if f.p.HistoryCheck > 0 {
		tick := time.NewTicker(f.p.HistoryCheck)
		defer tick.Stop()
		check = tick.C
	}
	for {
		select {
		case <-ctx.Done():
			t.end(ctx.Err())
		case <-reconnected:
			t.end(errReconnected)
		case <-f.relist:
			t.end(errRelistRequested)
		case err := <-f.guard.failing:
			t.end(err)
		case <-check:
			why := f.historyLost(ctx, cluster)
			if why == "" {
				continue
			}
			t.end(fmt.Errorf("%w: %s", errHistoryLost, why))
		case <-t.ended:
		}
		break
	}
	cancel()
	wg.Wait()
	return t.healthy.Load(), t.err
}

// takeIn is one watch's taking in of its responses.
type takeIn struct {
	f *Feed
	// created counts the prefixes whose watch etcd created; healthy is
	// set once all were.
	created atomic.Int32
	healthy atomic.Bool

	mu sync.Mutex
	// next is each prefix's next revision to watch from.
	next map[string]int64
	// changes is the changes of one response, reused.
	changes []Change
	// err is why the watch ended, set once; ended is closed then.
	err   error
	ended chan struct{}
}

// end ends the watch for err unless it has ended already.
func (t *takeIn) end(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLocked(err)
}

func (t *takeIn) endLocked(err error) {
	if t.err == nil {
		t.err = err
		close(t.ended)
	}
}

// follow takes in the responses of the watch of prefix until it ends.
func (t *takeIn) follow(ctx context.Context, prefix string, wch clientv3.WatchChan) {
	for resp := range wch {
		if ctx.Err() != nil {
			continue // clientv3 closes wch once it saw ctx end
		}
		t.mu.Lock()
		if t.err == nil {
			if err := t.response(ctx, prefix, &resp); err != nil {
				t.endLocked(err)
			}
		}
		t.mu.Unlock()
	}
	if ctx.Err() == nil {
		t.end(fmt.Errorf("%w: the watch of %s was closed", errUnfollowable, prefix))
	}
}

// response takes in one response of the watch of prefix: its events are
// decoded here and handed to the sink at once. A non-nil error ends the
// watch (nothing of the response is taken in then).
func (t *takeIn) response(ctx context.Context, prefix string, resp *clientv3.WatchResponse) error {
	f := t.f
	if err := resp.Err(); err != nil {
		what := fmt.Sprintf("watch of %s from revision %d", prefix, t.next[prefix])
		if resp.CompactRevision != 0 {
			return fmt.Errorf("%s: %w (compacted at %d)", what, rpctypes.ErrCompacted, resp.CompactRevision)
		}
		return fmt.Errorf("%w: %s: %w", errUnfollowable, what, err)
	}
	if resp.Created {
		if int(t.created.Add(1)) == len(t.next) {
			t.healthy.Store(true)
		}
		if len(resp.Events) == 0 {
			return nil
		}
	}
	if resp.IsProgressNotify() {
		t.next[prefix] = max(t.next[prefix], resp.Header.Revision+1)
		if f.hooks.Progressed != nil {
			f.hooks.Progressed(prefix, resp.Header.Revision)
		}
		f.followed()
		return nil
	}
	for _, ev := range resp.Events {
		if ev.Type != mvccpb.PUT && ev.Type != mvccpb.DELETE {
			return fmt.Errorf("%w: the watch of %s from revision %d: event of %q at revision %d has type %d, neither PUT nor DELETE",
				errUnfollowable, prefix, t.next[prefix], ev.Kv.GetKey(), ev.Kv.GetModRevision(), ev.Type)
		}
	}
	if lost, err := f.outputLost(ctx, prefix, resp.Events); lost || err != nil {
		return cmp.Or(err, errOutputLost)
	}
	t.changes = t.changes[:0]
	var watched int64 // the revision of the last watched event
	var seen *mvccpb.KeyValue
	for _, ev := range resp.Events {
		if ev.Type == mvccpb.PUT {
			seen = ev.Kv // events come in revision order: the last put is the newest
		}
		if f.watched(ev.Kv.Key) {
			watched = ev.Kv.ModRevision
			if ch, ok := f.take(ev); ok {
				t.changes = append(t.changes, ch)
			}
		}
	}
	if n := len(resp.Events); n > 0 { // in revision order: the last is the newest
		t.next[prefix] = max(t.next[prefix], resp.Events[n-1].Kv.ModRevision+1)
	}
	if seen != nil {
		f.see(seen.Key, seen.Value, seen.ModRevision)
	}
	if len(t.changes) > 0 {
		f.sink.Changes(t.changes)
		clear(t.changes) // the sink holds them now
	}
	if watched != 0 {
		storeMax(&f.st.watchRevision, watched)
	}
	f.followed()
	return nil
}

// followed notes that the watch advanced: what kept it from following
// etcd (Status.NotFollowing) is over.
func (f *Feed) followed() {
	if f.st.notFollowing.Load() != nil {
		f.following()
	}
}

// watched tells whether key belongs to a watched resource.
func (f *Feed) watched(key []byte) bool {
	for _, p := range f.prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// take decodes one watched event into the change to hand on; false when
// there is none (undecodable: the consumer keeps the last good value).
func (f *Feed) take(ev *clientv3.Event) (Change, bool) {
	kv := ev.Kv
	if f.hooks.Queued != nil {
		f.hooks.Queued(kv.ModRevision)
	}
	if ev.Type == mvccpb.DELETE {
		key := string(kv.Key) // one copy, which the parsed key's strings share
		k, err := kubestate.ParseKey(key)
		if err != nil {
			// Its put was skipped (and counted) already.
			f.log.Debug("skipping a delete of a malformed key", "key", key, "rev", kv.ModRevision)
			return Change{}, false
		}
		return Change{Key: k, Rev: kv.ModRevision}, true
	}
	k, o, err := f.decode(kv.Key, kv.Value, kv.ModRevision)
	if err != nil {
		return Change{}, false
	}
	return Change{Key: k, Rev: kv.ModRevision, Obj: o}, true
}

// outputLost tells, with RequireSynced, whether events watched under
// prefix show that etcd lost the reflector's output: the sync marker was
// deleted or put back older (kubestate.MarkerHistory), or did not exist any more
// when watched keys were deleted (a wipe of every key at once). Then none of
// them is taken in: the feed lists again and holds. A put of the marker
// is taken in.
func (f *Feed) outputLost(ctx context.Context, prefix string, evs []*clientv3.Event) (bool, error) {
	if !f.p.RequireSynced {
		return false, nil
	}
	var deleted int64
	for _, ev := range evs {
		del := ev.Type == mvccpb.DELETE
		switch {
		case prefix != kubestate.SyncedKey && del:
			deleted = max(deleted, ev.Kv.ModRevision)
		case prefix != kubestate.SyncedKey:
		case del:
			return true, nil
		default:
			m, err := kubestate.ParseSyncMarker(ev.Kv.Value)
			if err == nil && f.markers.Compare(m) < 0 {
				return true, nil // an older output put back
			}
			if err == nil {
				f.markers.Take(m)
				f.genRev = ev.Kv.ModRevision
			}
		}
	}
	if deleted == 0 {
		return false, nil
	}
	ok, m, err := f.markerAt(ctx, deleted)
	switch {
	case err != nil:
		return false, err
	case !ok:
		return true, nil
	}
	// An older marker at that revision than one known at or before it
	// was put back.
	return f.markers.Compare(m) < 0 && f.genRev <= deleted, nil
}

// storeMax raises a to v unless it is already higher: the per-resource
// watches deliver their revisions independently.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}
