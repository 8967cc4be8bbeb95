package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"contiv.dev/vpp/kubestate"
)

// errStreamLost ends a watch whose gRPC stream failed (etcd or a proxy in
// front of it went away, or ended the stream): the watcher resumes it once
// connected again, if etcd kept its history.
var errStreamLost = errors.New("etcd watch stream lost")

// watch queues the changes after each prefix's revision in next until the
// watch is lost or ctx is done. healthy tells that the watch worked (every
// prefix's watch was created; it ended for a reason that is no failure of
// its own).
//
// The watches of every prefix share one gRPC Watch stream of etcd's API,
// opened on the client's connection (its TLS, its auth token, its
// interceptors): the goroutine that receives a response decodes its events
// and queues them for the loop, one hand-off per response. clientv3's
// Watch would pass each response through three goroutines of its own
// before; what it did for the watcher is done here: watch IDs (the
// watches are created one at a time, each answered before the next is
// asked for, as etcd and its gRPC proxy answer them), cancel and
// compaction responses (they end the watch: a compacted revision is listed
// again), and a broken stream (it ends the watch with errStreamLost; run
// resumes it from next). Fragmented responses are not asked for: etcd
// sends each response whole (clientv3's default too).
//
// One watch per resource keeps the agent from receiving keys under the
// prefix that are not cluster state, such as every node's pod IP
// allocations.
//
// Every historyCheck it checks that etcd still holds the history of cluster
// it follows (historyLost), and ends with errHistoryLost when not.
func (w *watcher) watch(ctx context.Context, next map[string]int64, reconnected <-chan struct{}, cluster uint64) (healthy bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	t := &takeIn{w: w, next: next, ended: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { t.end(t.stream(wctx)) })
	var check <-chan time.Time
	if w.historyCheck > 0 {
		tick := time.NewTicker(w.historyCheck)
		defer tick.Stop()
		check = tick.C
	}
	for {
		select {
		case <-ctx.Done():
			t.end(ctx.Err())
		case <-reconnected:
			t.end(errReconnected)
		case <-w.relist:
			t.end(errRelistRequested)
		case <-check:
			why := w.historyLost(ctx, cluster)
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
	return t.healthy, t.err
}

// takeIn is one watch's taking in of the responses of its stream.
type takeIn struct {
	w *watcher
	// next is each prefix's next revision to watch from; the receiving
	// goroutine's until the watch ended.
	next map[string]int64
	// changes is the changes of one response, reused.
	changes []change

	mu sync.Mutex
	// healthy tells that every watch was created; err is why the watch
	// ended, set once; ended is closed then.
	healthy bool
	err     error
	ended   chan struct{}
}

// end ends the watch for err unless it has ended already.
func (t *takeIn) end(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
		close(t.ended)
	}
}

// stream opens the Watch stream, creates a watch per prefix and takes in
// its responses until one ends the watch or the stream fails; it returns
// why. The stream ends with ctx.
func (t *takeIn) stream(ctx context.Context) error {
	w := t.w
	// The call options clientv3 gives its own watch streams (wait for the
	// connection, receive responses of any size), and the codec that
	// decodes a response straight from the bytes received.
	ws, err := pb.NewWatchClient(w.cli.ActiveConnection()).Watch(ctx,
		grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.ForceCodecV2(theRawCodec))
	if err != nil {
		return fmt.Errorf("%w: open: %w", errStreamLost, err)
	}
	prefixes := slices.Sorted(maps.Keys(t.next))
	ids := make(map[int64]string, len(prefixes))
	create := func(p string) error {
		req := &pb.WatchCreateRequest{Key: []byte(p), StartRevision: t.next[p], ProgressNotify: true}
		if p != kubestate.SyncedKey {
			req.RangeEnd = []byte(clientv3.GetPrefixRangeEnd(p))
		}
		if err := ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: req}}); err != nil {
			return fmt.Errorf("%w: create the watch of %s: %w", errStreamLost, p, err)
		}
		return nil
	}
	if err := create(prefixes[0]); err != nil {
		return err
	}
	resp := &watchResponse{}
	for {
		if err := ws.RecvMsg(resp); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: %w", errStreamLost, err)
		}
		if resp.created {
			// The answer to the one create in flight.
			if len(ids) == len(prefixes) {
				return fmt.Errorf("%w: etcd answered a watch creation not asked for (watch ID %d)", errStreamLost, resp.watchID)
			}
			p := prefixes[len(ids)]
			if resp.canceled || resp.watchID == clientv3.InvalidWatchID {
				return t.canceled(p, resp)
			}
			ids[resp.watchID] = p
			if len(ids) < len(prefixes) {
				if err := create(prefixes[len(ids)]); err != nil {
					return err
				}
			} else {
				t.mu.Lock()
				t.healthy = true
				t.mu.Unlock()
			}
			if len(resp.events) == 0 {
				continue
			}
		}
		if resp.watchID == clientv3.InvalidWatchID && resp.progress() {
			// A progress notification for every watch of the stream
			// (etcd sends one only when all are up to date).
			for _, p := range ids {
				t.next[p] = max(t.next[p], resp.revision+1)
				t.progressed(p, resp.revision)
			}
			continue
		}
		p, ok := ids[resp.watchID]
		if !ok {
			continue // of no watch of ours
		}
		if resp.canceled {
			return t.canceled(p, resp)
		}
		if err := t.response(ctx, p, resp); err != nil {
			return err
		}
	}
}

// canceled is why etcd cancelled the watch of p (a compacted revision is
// rpctypes.ErrCompacted).
func (t *takeIn) canceled(p string, resp *watchResponse) error {
	what := fmt.Sprintf("watch of %s from revision %d", p, t.next[p])
	switch {
	case resp.compactRevision != 0:
		return fmt.Errorf("%s: %w (compacted at %d)", what, rpctypes.ErrCompacted, resp.compactRevision)
	case resp.cancelReason != "":
		return fmt.Errorf("%s: cancelled by etcd: %s", what, resp.cancelReason)
	}
	return fmt.Errorf("%s: cancelled by etcd", what)
}

func (t *takeIn) progressed(prefix string, rev int64) {
	if t.w.progressed != nil {
		t.w.progressed(prefix, rev)
	}
}

// response takes in one response of the watch of prefix: its events are
// decoded here and queued for the loop at once. A non-nil error ends the
// watch (nothing of the response is taken in then).
func (t *takeIn) response(ctx context.Context, prefix string, resp *watchResponse) error {
	w := t.w
	if resp.progress() {
		t.next[prefix] = max(t.next[prefix], resp.revision+1)
		t.progressed(prefix, resp.revision)
		return nil
	}
	if lost, err := w.outputLost(ctx, prefix, resp.events); lost || err != nil {
		return cmp.Or(err, errOutputLost)
	}
	t.changes = t.changes[:0]
	var watched int64 // the revision of the last watched event
	var seen *watchEvent
	for i := range resp.events {
		ev := &resp.events[i]
		if !ev.del {
			seen = ev // events come in revision order: the last put is the newest
		}
		if w.watched(ev.key) {
			watched = ev.modRevision
			if ch, ok := w.take(ev); ok {
				t.changes = append(t.changes, ch)
			}
		}
	}
	if n := len(resp.events); n > 0 { // in revision order: the last is the newest
		t.next[prefix] = max(t.next[prefix], resp.events[n-1].modRevision+1)
	}
	if seen != nil {
		w.see(seen.key, seen.value, seen.modRevision)
	}
	if len(t.changes) > 0 {
		w.q.pushChanges(t.changes)
		clear(t.changes) // the queue holds them now
	}
	if watched != 0 {
		storeMax(&w.st.watchRevision, watched)
	}
	return nil
}

// watched tells whether key belongs to a watched resource.
func (w *watcher) watched(key []byte) bool {
	for _, p := range w.prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// take decodes one watched event into the change to queue; false when
// there is none (undecodable: the controller keeps the last good value).
func (w *watcher) take(ev *watchEvent) (change, bool) {
	if w.queued != nil {
		w.queued(ev.modRevision)
	}
	if ev.del {
		key := string(ev.key) // one copy, which the parsed key's strings share
		k, err := kubestate.ParseKey(key)
		if err != nil {
			// Its put was skipped (and counted) already.
			w.log.Debug("skipping a delete of a malformed key", "key", key, "rev", ev.modRevision)
			return change{}, false
		}
		return change{key: k, rev: ev.modRevision}, true
	}
	k, o, err := w.decode(ev.key, ev.value, ev.modRevision)
	if err != nil {
		return change{}, false
	}
	return change{key: k, rev: ev.modRevision, obj: o}, true
}

// outputLost tells, with RequireSynced, whether events watched under
// prefix show that etcd lost the reflector's output: the sync marker was
// deleted or put back with an older generation, or did not exist any more
// when watched keys were deleted (a wipe of every key at once). Then none of
// them is taken in: the watcher lists again and holds. A put of the marker
// raises the generation taken in.
func (w *watcher) outputLost(ctx context.Context, prefix string, evs []watchEvent) (bool, error) {
	if !w.requireSynced {
		return false, nil
	}
	var deleted int64
	for _, ev := range evs {
		switch {
		case prefix != kubestate.SyncedKey && ev.del:
			deleted = max(deleted, ev.modRevision)
		case prefix != kubestate.SyncedKey:
		case ev.del:
			return true, nil
		default:
			m, err := kubestate.ParseSyncMarker(ev.value)
			if err == nil && w.markers.Compare(m) < 0 {
				return true, nil // an older output put back
			}
			if err == nil {
				w.markers.Take(m)
				w.genRev = ev.modRevision
			}
		}
	}
	if deleted == 0 {
		return false, nil
	}
	ok, m, err := w.markerAt(ctx, deleted)
	switch {
	case err != nil:
		return false, err
	case !ok:
		return true, nil
	}
	// An older marker at that revision than one known at or before it
	// was put back.
	return w.markers.Compare(m) < 0 && w.genRev <= deleted, nil
}
