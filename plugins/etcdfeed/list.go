package etcdfeed

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/internal/etcdrange"
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

// listing is a listing as read, with what the feed checks it by.
type listing struct {
	out *Listing
	// cluster is the etcd cluster the listing was read from.
	cluster uint64
	// layout and synced are the values of kubestate.LayoutKey and
	// kubestate.SyncedKey at the listing's revision (nil: absent).
	layout, synced []byte
}

// list reads every watched resource, and the layout and sync markers, at
// one revision.
func (f *Feed) list(ctx context.Context) (*listing, error) {
	n := f.sizeHint(ctx)
	l := &listing{out: &Listing{
		Objects: make(map[kubestate.Key]kubestate.Object, n),
		Bad:     map[kubestate.Key]bool{},
		Listed:  make([]kubestate.Object, 0, n),
	}}
	f.seenMu.Lock()
	f.seen = seenPut{}
	f.seenMu.Unlock()
	for _, p := range f.prefixes {
		if err := f.listPrefix(ctx, p, l); err != nil {
			return nil, err
		}
	}
	if !f.p.RequireSynced && !slices.Contains(f.p.Resources, kubestate.ResPod) {
		return l, nil
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	resp, err := f.cli.Txn(rctx).Then(
		clientv3.OpGet(kubestate.LayoutKey, clientv3.WithRev(l.out.Revision)),
		clientv3.OpGet(kubestate.SyncedKey, clientv3.WithRev(l.out.Revision)),
	).Commit()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read the layout and sync markers: %w", err)
	}
	l.layout, l.synced = rangeValue(resp, 0), rangeValue(resp, 1)
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			f.see(kv.Key, kv.Value, kv.ModRevision)
		}
	}
	layout := string(l.layout)
	if old := f.st.layout.Swap(&layout); !f.p.RequireSynced && (old == nil || *old != layout) {
		f.logLayout(l.layout)
	}
	return l, nil
}

// sizeHint is the room a listing's map is made with, not to grow it key by
// key: the size of the last listing, or at the first, how many keys the
// watched prefixes hold (etcd counts them, reading no value); 0 when etcd
// does not answer.
func (f *Feed) sizeHint(ctx context.Context) int {
	if f.listed > 0 {
		return f.listed
	}
	ops := make([]clientv3.Op, len(f.prefixes))
	for i, p := range f.prefixes {
		ops[i] = clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithCountOnly())
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := f.cli.Txn(rctx).Then(ops...).Commit()
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
func (f *Feed) logLayout(layout []byte) {
	switch {
	case string(layout) == kubestate.LayoutVersion:
	case layout == nil:
		f.log.Info("etcd holds no layout marker yet: waiting for contiv-ksr's first sweep (docs/etcd-layout.md)",
			"marker", kubestate.LayoutKey, "want", kubestate.LayoutVersion)
	default:
		f.log.Error("etcd is not in this agent's layout: pods an older contiv-ksr stored without their node are not seen; upgrade contiv-ksr, whose first sweep migrates etcd (docs/etcd-layout.md)",
			"marker", kubestate.LayoutKey, "found", string(layout), "want", kubestate.LayoutVersion)
	}
}

// complete tells whether l is a complete reflector output newer than what
// was taken in (nil), or why not (kubestate.ErrNotComplete): markers
// missing, or a marker (or, at the same marker, a revision) older than the
// one taken in (kubestate.MarkerHistory: ordered within a lineage), as in
// an etcd restored from an older backup.
func (f *Feed) complete(l *listing) error {
	m, err := kubestate.Completeness(l.layout, l.synced)
	if err != nil {
		return err
	}
	last, _ := f.markers.Last()
	switch f.markers.Compare(m) {
	case -1:
		return fmt.Errorf("%w: sync marker %s is older than the %s already taken in (etcd restored from an older backup?)",
			kubestate.ErrNotComplete, m, last)
	case 0:
		if l.out.Revision < f.st.watchRevision.Load() {
			return fmt.Errorf("%w: etcd revision %d is older than the %d already taken in, at the same sync marker %s",
				kubestate.ErrNotComplete, l.out.Revision, f.st.watchRevision.Load(), m)
		}
	}
	f.markers.Take(m)
	f.genRev = l.out.Revision
	return nil
}

// hold keeps the last state taken in while etcd holds no complete reflector
// output: it reports why (Status.Held) and waits for the sync marker to be
// written (the reflector's sweep completed), for a reconnection or a
// re-list request. False when ctx ended.
func (f *Feed) hold(ctx context.Context, rev int64, why error, reconnected <-chan struct{}) bool {
	reason := why.Error()
	if old := f.st.held.Swap(&reason); old == nil || *old != reason {
		lvl := slog.LevelInfo
		l := f.st.layout.Load()
		switch {
		case f.tookIn:
			lvl = slog.LevelWarn // it had a complete output: lost or gone back
		case l != nil && *l != "" && *l != kubestate.LayoutVersion:
			lvl = slog.LevelError
		}
		f.log.Log(ctx, lvl, "etcd holds no complete reflector output: keeping the last state taken in until contiv-ksr's sweep completes",
			"reason", reason, "rev", rev)
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := f.watcher.Watch(wctx, kubestate.SyncedKey, clientv3.WithRev(rev+1))
	delay := f.backoff.DelayFunc()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-reconnected:
			return true
		case <-f.relist:
			return true
		case resp, ok := <-wch:
			switch {
			case ok && resp.Err() == nil && len(resp.Events) == 0:
				continue // a progress notification
			case ok && resp.Err() == nil:
				return true
			}
			return backoff.Sleep(ctx, delay())
		}
	}
}

// unhold clears what hold reported.
func (f *Feed) unhold() {
	if old := f.st.held.Swap(nil); old != nil {
		last, _ := f.markers.Last()
		f.log.Info("etcd holds a complete reflector output again", "marker", last.String())
	}
}

// markerAt tells whether the sync marker existed at revision rev, and its
// value then (zero when it does not decode).
func (f *Feed) markerAt(ctx context.Context, rev int64) (bool, kubestate.SyncMarker, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := f.cli.Get(rctx, kubestate.SyncedKey, clientv3.WithRev(rev))
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
func (f *Feed) listPrefix(ctx context.Context, prefix string, l *listing) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan *etcdrange.Page, 1)
	var err error
	go func() {
		defer close(pages)
		err = f.readPages(ctx, prefix, l.out.Revision, pages)
	}()
	for resp := range pages {
		if l.out.Revision == 0 {
			l.out.Revision, l.cluster = resp.GetHeader().GetRevision(), resp.GetHeader().GetClusterId()
			if f.hooks.AfterFirstPage != nil {
				f.hooks.AfterFirstPage()
			}
		}
		newest := -1
		for i, kv := range resp.Kvs {
			if newest < 0 || kv.ModRevision >= resp.Kvs[newest].ModRevision {
				newest = i
			}
			k, o, err := f.decode(kv.Key, kv.Value, kv.ModRevision)
			switch {
			case err != nil && k != (kubestate.Key{}):
				l.out.Bad[k] = true
			case err == nil:
				l.out.Objects[k] = o
				l.out.Listed = append(l.out.Listed, o)
			}
		}
		if newest >= 0 { // a copy: the page's buffer goes back to gRPC's pool
			kv := resp.Kvs[newest]
			f.see(bytes.Clone(kv.Key), bytes.Clone(kv.Value), kv.ModRevision)
		}
		resp.Release() // decoded objects hold nothing of their stored values
	}
	return err // written before pages was closed
}

// readPages reads the keys under prefix at rev (0: the revision of the
// first page), and sends each page on out, until the last or an error.
// A page is etcd's KV.Range, called over the client's connection and
// decoded by etcdrange's generated code: its keys and values are slices of
// one buffer from gRPC's pool, not an allocation each as clientv3's Get
// makes them (docs/PERFORMANCE.md, "etcd listing with a generated
// decoder"); listPrefix releases it once decoded. The first page holds
// listPageSize keys; the next ones more, up to maxListPage, when many
// remain: etcd counts every key from a page's first to the prefix's end to
// answer it (RangeResponse.count), so a listing in pages of p keys costs it
// n²/2p key visits.
func (f *Feed) readPages(ctx context.Context, prefix string, rev int64, out chan<- *etcdrange.Page) error {
	key, end, limit := []byte(prefix), []byte(clientv3.GetPrefixRangeEnd(prefix)), int64(listPageSize)
	var bufs etcdrange.Buffers // the pages' buffers, reused page after page
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		req := &etcdserverpb.RangeRequest{Key: key, RangeEnd: end, Limit: limit, Revision: rev}
		resp, err := etcdrange.Range(rctx, f.cli.ActiveConnection(), req, &bufs, rangeCallOptions...)
		err = clientv3.ContextError(rctx, err)
		cancel()
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		// What the next page needs, read before the page is handed on (and
		// released).
		last := !resp.More || len(resp.Kvs) == 0
		if !last {
			if rev == 0 {
				rev = resp.GetHeader().GetRevision() // a later page's header has etcd's revision then
			}
			key = append(bytes.Clone(resp.Kvs[len(resp.Kvs)-1].Key), 0)
			limit = pageSize(resp.Count - int64(len(resp.Kvs)))
		}
		select {
		case out <- resp:
		case <-ctx.Done():
			return ctx.Err()
		}
		if last {
			return nil
		}
	}
}

// rangeCallOptions are those clientv3 gives its own calls (with the
// default Config: the project's clients set no message size): wait for a
// connection rather than fail at once, and take a page of any size. What
// clientv3 adds to a Get alone, retrying it on another endpoint when one
// fails, the listing does as a whole (Feed.run lists again after a
// backoff).
var rangeCallOptions = []grpc.CallOption{grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(math.MaxInt32)}

// pageSize is the keys asked for in a page when remaining are left.
func pageSize(remaining int64) int64 {
	return min(max(listPageSize, remaining/8), maxListPage)
}

// decode parses a stored key and decodes its value; the key returned
// holds the object's strings, nothing of key (kubestate.DecodeStored). A
// failure is logged with the key, counted, and returned; the key is
// returned when it parsed.
func (f *Feed) decode(key, value []byte, rev int64) (kubestate.Key, kubestate.Object, error) {
	k, o, err := kubestate.DecodeStored(key, value)
	if err == nil || k != (kubestate.Key{}) {
		f.st.decoded.Add(1)
	}
	if err == nil {
		return k, o, nil
	}
	f.st.decodeErrors.Add(1)
	f.log.Error("skipping a stored value that cannot be decoded", "key", string(key), "rev", rev, "size", len(value), "err", err)
	return k, nil, err
}
