package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

const (
	// listPageSize is the number of keys the first page of a listing
	// holds; maxListPage the most a later one holds (readPages).
	listPageSize = 1000
	maxListPage  = 4000
	// requestTimeout bounds one Get of a listing.
	requestTimeout = 10 * time.Second
)

// Reasons a watch ends.
var (
	errReconnected     = errors.New("reconnected to etcd")
	errRelistRequested = errors.New("re-list requested")
	errOutputLost      = errors.New("etcd lost the reflector's output: its sync marker was deleted or put back older")
	errHistoryLost     = errors.New("etcd no longer holds the history the watch follows (restored from a backup or wiped)")
)

type watcherParams struct {
	log       *slog.Logger
	cli       *clientv3.Client
	resources []kubestate.Resource
	// podNode, when set, narrows the pods watched to that node's.
	podNode string
	backoff Backoff
	q       *queue
	st      *status
	jitter  time.Duration
	// clusterSize, when set, tells how many nodes the cluster has: the
	// re-listing after an outage spreads with it.
	clusterSize func() int
	// requireSynced holds every listing that is not a complete reflector
	// output (Params.RequireSynced).
	requireSynced bool
	// historyCheck is Params.HistoryCheck (0: never).
	historyCheck time.Duration
}

// watcher lists the watched resources at one revision, queues the listing
// as a resync, then watches from the next revision and queues every change.
// After a reconnection to an etcd that kept its history, each watch resumes
// after the last revision it delivered. When the watch is lost otherwise
// (error, compaction, closed channel, a reconnection to an etcd restored or
// wiped) it lists again: the listing supersedes whatever the lost watch may
// have missed, and the revision it was taken at is where the next watch
// starts, so no change is lost or delivered twice.
//
// Values that cannot be decoded are logged with their key, counted and
// skipped: the controller keeps the key's last good value.
type watcher struct {
	watcherParams
	prefixes []string // of the watched resources
	relist   chan struct{}
	// afterList, when set (tests), runs after a listing is queued and
	// before the watch starts; afterFirstPage after a listing's first page
	// is read; queued, when set (tests), is told the revision of every
	// change queued.
	afterList, afterFirstPage func()
	queued                    func(rev int64)
	// progressed, when set (tests), is told the prefix and revision of
	// every progress notification taken in.
	progressed func(prefix string, rev int64)
	// listed is the number of objects of the last listing; the watcher
	// goroutine's.
	listed int
	// markers has the newest sync marker taken in (listed or watched),
	// known since revision genRev; the watcher goroutine's.
	markers kubestate.MarkerHistory
	genRev  int64
	// seen is the newest put read from etcd since the last listing,
	// written by the goroutine that lists or receives the watch, read by
	// the history check.
	seenMu sync.Mutex
	seen   seenPut
}

// seenPut is a put read from etcd (key and value as read, never changed).
// An etcd that still holds it at its revision kept the history it was read
// from.
type seenPut struct {
	key, value []byte
	rev        int64
}

// see takes in a put read from etcd; it keeps the read slices, copying
// nothing. Of puts at one revision (one transaction) the last read wins:
// the sync marker, read last by a listing, has a value no other etcd holds
// (its sweep's time).
func (w *watcher) see(key, value []byte, rev int64) {
	w.seenMu.Lock()
	if rev >= w.seen.rev {
		w.seen = seenPut{key: key, value: value, rev: rev}
	}
	w.seenMu.Unlock()
}

// lastSeen is the newest put read since the last listing.
func (w *watcher) lastSeen() seenPut {
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	return w.seen
}

func newWatcher(p watcherParams) *watcher {
	w := &watcher{watcherParams: p, relist: make(chan struct{}, 1)}
	for _, r := range p.resources {
		p := r.KeyPrefix()
		if r == kubestate.ResPod && w.podNode != "" {
			p = kubestate.PodPrefix(w.podNode)
		}
		w.prefixes = append(w.prefixes, p)
	}
	return w
}

func (w *watcher) requestRelist() {
	select {
	case w.relist <- struct{}{}:
	default:
	}
}

func (w *watcher) run(ctx context.Context) {
	reconnected := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.monitor(ctx, reconnected) })

	kind := ResyncStartup
	bo := newBackoff(w.backoff)
	for {
		// A reconnection or a request before this listing is covered by it.
		drain(reconnected)
		drain(w.relist)
		l, err := w.list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.delay()
			w.log.Warn("cannot list etcd; keeping the last state", "err", err, "retryIn", d)
			if !backoff.Sleep(ctx, d) {
				return
			}
			continue
		}
		if w.requireSynced {
			if err := w.complete(l); err != nil {
				if !w.hold(ctx, l.snap.Revision, err, reconnected) {
					return
				}
				continue
			}
		}
		w.unhold()
		// Once queued, the listing is the loop's.
		rev, cluster := l.snap.Revision, l.cluster
		w.listed = len(l.snap.Objects)
		w.log.Info("listed etcd", "kind", kind, "rev", rev, "objects", len(l.snap.Objects), "skipped", len(l.bad))
		w.q.pushResync(kind, l)
		if kind == ResyncRelist {
			w.st.relists.Add(1)
		}
		w.st.watchRevision.Store(rev)
		kind = ResyncRelist
		if w.afterList != nil {
			w.afterList()
		}

		next := make(map[string]int64, len(w.prefixes)+1)
		for _, p := range w.prefixes {
			next[p] = rev + 1
		}
		if w.requireSynced {
			next[kubestate.SyncedKey] = rev + 1
		}
		var healthy bool
		for {
			healthy, err = w.watch(ctx, next, reconnected, cluster)
			if ctx.Err() != nil {
				return
			}
			lost := errors.Is(err, errStreamLost)
			if lost {
				// The stream failed: with the connection (etcd or its
				// proxy went away) or alone. Resume once connected; a
				// stream that failed before its watches were created
				// backs off first.
				if !healthy && !backoff.Sleep(ctx, bo.delay()) || !w.connected(ctx) {
					return
				}
				drain(reconnected)
			}
			// Back from an etcd outage: when etcd kept its history, each
			// watch resumes where it stopped and nothing is listed again
			// (a herd of agents re-listing is what an outage must not
			// cause); a compacted revision fails the watch, and then the
			// watcher lists.
			if !lost && !errors.Is(err, errReconnected) || !w.resumable(ctx, cluster, next) {
				break
			}
			w.st.resumes.Add(1)
			w.log.Info("etcd is back with its history; resuming the watch", "from", next)
		}
		if errors.Is(err, errHistoryLost) {
			w.st.historyLost.Add(1)
			w.log.Warn("etcd's history is not the one the watch followed (etcd restored from a backup or wiped); listing it again", "err", err)
		}
		if healthy {
			bo.reset()
			w.log.Info("etcd watch ended; re-listing", "reason", err)
			if (errors.Is(err, errReconnected) || errors.Is(err, errStreamLost) || errors.Is(err, errHistoryLost)) && !backoff.Sleep(ctx, w.relistDelay()) {
				return
			}
			continue
		}
		d := bo.delay()
		w.log.Warn("etcd watch failed; re-listing", "err", err, "retryIn", d)
		if !backoff.Sleep(ctx, d) {
			return
		}
	}
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// list reads every watched resource, and the layout and sync markers, at
// one revision.
func (w *watcher) list(ctx context.Context) (*listing, error) {
	n := w.sizeHint(ctx)
	l := newListing(0, n)
	l.listed = make([]kubestate.Object, 0, n)
	w.seenMu.Lock()
	w.seen = seenPut{}
	w.seenMu.Unlock()
	for _, p := range w.prefixes {
		if err := w.listPrefix(ctx, p, l); err != nil {
			return nil, err
		}
	}
	if !w.requireSynced && !slices.Contains(w.resources, kubestate.ResPod) {
		return l, nil
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	resp, err := w.cli.Txn(rctx).Then(
		clientv3.OpGet(kubestate.LayoutKey, clientv3.WithRev(l.snap.Revision)),
		clientv3.OpGet(kubestate.SyncedKey, clientv3.WithRev(l.snap.Revision)),
	).Commit()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read the layout and sync markers: %w", err)
	}
	l.layout, l.synced = rangeValue(resp, 0), rangeValue(resp, 1)
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			w.see(kv.Key, kv.Value, kv.ModRevision)
		}
	}
	layout := string(l.layout)
	if old := w.st.layout.Swap(&layout); !w.requireSynced && (old == nil || *old != layout) {
		w.logLayout(l.layout)
	}
	return l, nil
}

// sizeHint is the room a listing's map is made with, not to grow it key by
// key: the size of the last listing, or at the first, how many keys the
// watched prefixes hold (etcd counts them, reading no value); 0 when etcd
// does not answer.
func (w *watcher) sizeHint(ctx context.Context) int {
	if w.listed > 0 {
		return w.listed
	}
	ops := make([]clientv3.Op, len(w.prefixes))
	for i, p := range w.prefixes {
		ops[i] = clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithCountOnly())
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := w.cli.Txn(rctx).Then(ops...).Commit()
	if err != nil {
		return 0
	}
	n := 0
	for _, r := range resp.Responses {
		n += int(r.GetResponseRange().Count)
	}
	return n
}

// rangeValue is the value read by the i-th (range) response of a
// transaction, nil when the key is absent.
func rangeValue(resp *clientv3.TxnResponse, i int) []byte {
	if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
		return kvs[0].Value
	}
	return nil
}

// logLayout says, without RequireSynced, what a layout marker other than
// this agent's means: the listing is taken (services keep working), but pods
// an older contiv-ksr stored without their node are not seen. An absent
// marker is what an etcd no reflector has swept yet holds (a fresh install).
func (w *watcher) logLayout(layout []byte) {
	switch {
	case string(layout) == kubestate.LayoutVersion:
	case layout == nil:
		w.log.Info("etcd holds no layout marker yet: waiting for contiv-ksr's first sweep (docs/etcd-layout.md)",
			"marker", kubestate.LayoutKey, "want", kubestate.LayoutVersion)
	default:
		w.log.Error("etcd is not in this agent's layout: pods an older contiv-ksr stored without their node are not seen; upgrade contiv-ksr, whose first sweep migrates etcd (docs/etcd-layout.md)",
			"marker", kubestate.LayoutKey, "found", string(layout), "want", kubestate.LayoutVersion)
	}
}

// complete tells whether l is a complete reflector output newer than what
// was taken in (nil), or why not (kubestate.ErrNotComplete): markers
// missing, or a generation (or, at the same generation, a revision) older
// than the one taken in, as in an etcd restored from an older backup.
func (w *watcher) complete(l *listing) error {
	m, err := kubestate.Completeness(l.layout, l.synced)
	if err != nil {
		return err
	}
	last, _ := w.markers.Last()
	switch w.markers.Compare(m) {
	case -1:
		return fmt.Errorf("%w: sync marker %s is older than the %s already taken in (etcd restored from an older backup?)",
			kubestate.ErrNotComplete, m, last)
	case 0:
		if l.snap.Revision < w.st.watchRevision.Load() {
			return fmt.Errorf("%w: etcd revision %d is older than the %d already taken in, at the same sync marker %s",
				kubestate.ErrNotComplete, l.snap.Revision, w.st.watchRevision.Load(), m)
		}
	}
	w.markers.Take(m)
	w.genRev = l.snap.Revision
	return nil
}

// hold keeps the last state taken in while etcd holds no complete reflector
// output: it reports why (Status.Held, not ready) and waits for the sync
// marker to be written (the reflector's sweep completed), for a
// reconnection or a re-list request. False when ctx ended.
func (w *watcher) hold(ctx context.Context, rev int64, why error, reconnected <-chan struct{}) bool {
	reason := why.Error()
	if old := w.st.held.Swap(&reason); old == nil || *old != reason {
		lvl := slog.LevelInfo
		l := w.st.layout.Load()
		switch {
		case w.st.ready.Load():
			lvl = slog.LevelWarn // it had a complete output: lost or gone back
		case l != nil && *l != "" && *l != kubestate.LayoutVersion:
			lvl = slog.LevelError
		}
		w.log.Log(ctx, lvl, "etcd holds no complete reflector output: keeping the last state taken in until contiv-ksr's sweep completes",
			"reason", reason, "rev", rev)
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := w.cli.Watch(wctx, kubestate.SyncedKey, clientv3.WithRev(rev+1))
	bo := newBackoff(w.backoff)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-reconnected:
			return true
		case <-w.relist:
			return true
		case resp, ok := <-wch:
			switch {
			case ok && resp.Err() == nil && len(resp.Events) == 0:
				continue // a progress notification
			case ok && resp.Err() == nil:
				return true
			}
			return backoff.Sleep(ctx, bo.delay())
		}
	}
}

// unhold clears what hold reported.
func (w *watcher) unhold() {
	if old := w.st.held.Swap(nil); old != nil {
		last, _ := w.markers.Last()
		w.log.Info("etcd holds a complete reflector output again", "marker", last.String())
	}
}

// markerAt tells whether the sync marker existed at revision rev, and its
// value then (zero when it does not decode).
func (w *watcher) markerAt(ctx context.Context, rev int64) (bool, kubestate.SyncMarker, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := w.cli.Get(rctx, kubestate.SyncedKey, clientv3.WithRev(rev))
	if err != nil {
		return false, kubestate.SyncMarker{}, fmt.Errorf("read %s at revision %d: %w", kubestate.SyncedKey, rev, err)
	}
	if len(resp.Kvs) == 0 {
		return false, kubestate.SyncMarker{}, nil
	}
	m, _ := kubestate.ParseSyncMarker(resp.Kvs[0].Value)
	return true, m, nil
}

// listPrefix reads the keys under prefix page by page, at the revision of
// the listing's first page, and decodes them into l. The next page is read
// (by etcd, and received) while this one is decoded.
func (w *watcher) listPrefix(ctx context.Context, prefix string, l *listing) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan *rangeResponse, 1)
	// done hands the pages decoded back to readPages: it receives the
	// next ones into their buffers (kubestate.Decode copies what it keeps).
	done := make(chan *rangeResponse, 2)
	var err error
	go func() {
		defer close(pages)
		err = w.readPages(ctx, prefix, l.snap.Revision, pages, done)
	}()
	for resp := range pages {
		if l.snap.Revision == 0 {
			l.snap.Revision, l.cluster = resp.revision, resp.clusterID
			if w.afterFirstPage != nil {
				w.afterFirstPage()
			}
		}
		// The page's newest put, copied: the page is not kept for it.
		newest := -1
		for i, kv := range resp.kvs {
			if newest < 0 || kv.modRevision >= resp.kvs[newest].modRevision {
				newest = i
			}
			k, o, err := w.decode(kv.key, kv.value, kv.modRevision)
			switch {
			case err != nil && k != (kubestate.Key{}):
				l.bad[k] = true
			case err == nil:
				l.put(k, o)
				l.listed = append(l.listed, o)
			}
		}
		if newest >= 0 {
			kv := resp.kvs[newest]
			w.see(bytes.Clone(kv.key), bytes.Clone(kv.value), kv.modRevision)
		}
		select {
		case done <- resp:
		default:
		}
	}
	return err // written before pages was closed
}

// readPages reads the keys under prefix at rev (0: the revision of the
// first page) and sends each page on out, until the last or an error; it
// receives a page into one that came back on done, when one did.
// The first page holds listPageSize keys; the next ones more, up to
// maxListPage, when many remain: etcd counts every key from a page's first
// to the prefix's end to answer it (RangeResponse.count), so a listing in
// pages of p keys costs it n²/2p key visits.
func (w *watcher) readPages(ctx context.Context, prefix string, rev int64, out chan<- *rangeResponse, done <-chan *rangeResponse) error {
	req := &pb.RangeRequest{Key: []byte(prefix), RangeEnd: []byte(clientv3.GetPrefixRangeEnd(prefix)), Limit: listPageSize, Revision: rev}
	for {
		var resp *rangeResponse
		select {
		case resp = <-done:
		default:
			resp = &rangeResponse{}
		}
		if err := w.readPage(ctx, req, resp); err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		select {
		case out <- resp:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !resp.more || len(resp.kvs) == 0 {
			return nil
		}
		if req.Revision == 0 {
			req.Revision = resp.revision // a later page's header has etcd's revision then
		}
		req.Key = append(bytes.Clone(resp.kvs[len(resp.kvs)-1].key), 0)
		req.Limit = pageSize(resp.count - int64(len(resp.kvs)))
	}
}

// pageSize is the keys asked for in a page when remaining are left.
func pageSize(remaining int64) int64 {
	return min(max(listPageSize, remaining/8), maxListPage)
}

// readPage reads one page of a listing into resp, decoded from the bytes
// received (rangeResponse), on the client's connection (its TLS, auth
// token and interceptors).
func (w *watcher) readPage(ctx context.Context, req *pb.RangeRequest, resp *rangeResponse) error {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	err := w.cli.ActiveConnection().Invoke(rctx, pb.KV_Range_FullMethodName, req, resp,
		grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.ForceCodecV2(theRawCodec))
	if err != nil {
		return clientv3.ContextError(rctx, err)
	}
	return nil
}

// decode parses a stored key and decodes its value; the key returned
// holds the object's strings, nothing of key (kubestate.DecodeStored). A
// failure is logged with the key, counted, and returned; the key is
// returned when it parsed.
func (w *watcher) decode(key, value []byte, rev int64) (kubestate.Key, kubestate.Object, error) {
	k, o, err := kubestate.DecodeStored(key, value)
	if err == nil || k != (kubestate.Key{}) {
		w.st.decoded.Add(1)
	}
	if err == nil {
		return k, o, nil
	}
	w.st.decodeErrors.Add(1)
	w.log.Error("skipping a stored value that cannot be decoded", "key", string(key), "rev", rev, "size", len(value), "err", err)
	return k, nil, err
}

// resumable tells whether, after a reconnection, etcd still holds the
// history the watches were following: the same cluster, a revision no
// older than what they delivered (a restore from a backup or a wiped etcd
// goes back; then only a listing is right), and the newest put the
// watcher read, at its revision. The last check catches an etcd wiped
// while the agent could not reach it and written past the agent's revision
// since: a member started again on empty data with its name and peer
// address has its cluster ID, and its revisions count again from 1.
//
// ASSUMPTION: a wiped etcd does not hold, by chance, the very put the
// watcher read last at its revision (same key, same value); the sync
// marker, rewritten at every sweep, carries the time of its sweep. An
// etcd compacted past that put is listed again: the price of a quiet
// cluster, spread by RelistJitter.
func (w *watcher) resumable(ctx context.Context, cluster uint64, next map[string]int64) bool {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := w.cli.Get(rctx, w.prefixes[0], clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Header.ClusterId != cluster {
		return false
	}
	for _, n := range next {
		if resp.Header.Revision < n-1 {
			return false
		}
	}
	seen := w.lastSeen()
	if seen.rev == 0 {
		return true // nothing read to check it by
	}
	got, err := w.cli.Get(rctx, string(seen.key), clientv3.WithRev(seen.rev))
	if err != nil || len(got.Kvs) == 0 {
		return false
	}
	kv := got.Kvs[0]
	return kv.ModRevision == seen.rev && bytes.Equal(kv.Value, seen.value)
}

// relistDelay spreads the agents' re-listing after etcd comes back: a
// random delay below the jitter, scaled by the cluster's size (one jitter
// per relistNodesPerJitter nodes), so that thousands of agents do not list
// etcd at once.
func (w *watcher) relistDelay() time.Duration {
	if w.jitter <= 0 {
		return 0
	}
	span := w.jitter
	if w.clusterSize != nil {
		span *= time.Duration(max(1, w.clusterSize()/relistNodesPerJitter))
	}
	return rand.N(span)
}

// relistNodesPerJitter is how many nodes share one RelistJitter of the
// spread: 5000 nodes re-list over 10 jitters.
const relistNodesPerJitter = 500

// monitor signals each time the client's connection to etcd comes back
// after it was lost: the watch then may have missed a restore or a wipe
// of etcd, so the watcher lists again.
func (w *watcher) monitor(ctx context.Context, reconnected chan<- struct{}) {
	conn := w.cli.ActiveConnection()
	s := conn.GetState()
	wasReady := s == connectivity.Ready
	w.st.connected.Store(wasReady)
	for conn.WaitForStateChange(ctx, s) {
		s = conn.GetState()
		w.log.Debug("etcd connection", "state", s.String())
		if w.st.connected.Swap(s == connectivity.Ready) != (s == connectivity.Ready) {
			w.log.Info("etcd connection", "connected", s == connectivity.Ready)
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
func (w *watcher) connected(ctx context.Context) bool {
	conn := w.cli.ActiveConnection()
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
