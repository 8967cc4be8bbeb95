package ksr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

// errDataLost: the marker written after the last sweep is gone.
var errDataLost = errors.New("marker key missing: etcd lost its data")

// term is one leadership term: fresh informers, a queue of changed keys and
// the bytes last written per key. Only the writer goroutine (run) touches
// last and counts.
type term struct {
	r   *Reflector
	log *slog.Logger
	// f is the term's hold on LeaderKey; kv fences every write with it.
	f      *fence
	kv     fencedKV
	w      *kubestate.Writer
	q      *queue
	stores map[kubestate.Resource]cache.Store
	// last is the encoding last written (or found equal) per key.
	last map[kubestate.Key][]byte
	// podAt is the key each pod (by "namespace/name") was last written
	// under: a pod's key holds its node.
	podAt  map[string]kubestate.Key
	counts map[kubestate.Resource]int
}

func newTerm(r *Reflector, f *fence) *term {
	kv := fencedKV{Etcd: r.p.Etcd, f: f}
	return &term{
		r:      r,
		log:    r.log,
		f:      f,
		kv:     kv,
		w:      kubestate.NewWriter(kv, r.log),
		q:      newQueue(),
		stores: make(map[kubestate.Resource]cache.Store),
		last:   make(map[kubestate.Key][]byte),
		podAt:  make(map[string]kubestate.Key),
		counts: make(map[kubestate.Resource]int),
	}
}

// storedAt is the key under which the object of it was last written, or
// would be stored if it was not.
func (t *term) storedAt(it item) kubestate.Key {
	if k, ok := t.podAt[it.key]; ok && it.res == kubestate.ResPod {
		return k
	}
	return storeKey(it.res, it.key)
}

// run starts the informers, waits for their caches and handlers to sync,
// then writes until ctx ends. It returns when the informers have stopped.
func (t *term) run(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(t.r.p.Kube, 0, informers.WithTransform(trim))
	defer factory.Shutdown()
	// A term may end by itself (deposed): its informers stop first.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var synced []cache.InformerSynced
	for _, k := range reflected() {
		inf := k.informer(factory)
		reg, err := inf.AddEventHandler(t.handler(k.res))
		if err != nil { // only for a stopped informer: this one is new
			t.log.Error("informer", "resource", string(k.res), "err", err)
			return
		}
		t.stores[k.res] = inf.GetStore()
		synced = append(synced, inf.HasSynced, reg.HasSynced)
	}
	factory.StartWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	t.log.Info("informer caches synced")
	t.loop(ctx)
}

// handler queues the key of every object added, updated or deleted.
func (t *term) handler(res kubestate.Resource) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			t.log.Error("object without a key", "resource", string(res), "err", err)
			return
		}
		t.q.add(item{res: res, key: key})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// loop marks and sweeps whenever it is not synced (retrying with backoff),
// and otherwise writes queued changes and probes etcd.
func (t *term) loop(ctx context.Context) {
	probe := time.NewTicker(t.r.p.ProbeInterval)
	defer probe.Stop()
	var periodic <-chan time.Time
	if t.r.p.ResyncInterval > 0 {
		tk := time.NewTicker(t.r.p.ResyncInterval)
		defer tk.Stop()
		periodic = tk.C
	}
	synced, fails := false, 0
	for {
		if !synced {
			err := t.resync(ctx)
			if ctx.Err() != nil || t.deposed(err) {
				return
			}
			if err != nil {
				fails++
				t.r.unsynced(err)
				lvl := slog.LevelDebug
				if fails == 1 {
					lvl = slog.LevelWarn
				}
				t.log.Log(ctx, lvl, "mark and sweep failed; retrying", "attempt", fails, "err", err)
				if !backoff.Sleep(ctx, pause(fails, t.r.p.MaxBackoff)) {
					return
				}
				continue
			}
			synced, fails = true, 0
		}
		var err error
		select {
		case <-ctx.Done():
			return
		case <-t.q.ready:
			err = t.flush(ctx)
		case <-probe.C:
			err = t.probe(ctx)
		case <-periodic:
			t.log.Debug("periodic mark and sweep")
			synced = false
		}
		if t.deposed(err) {
			return
		}
		if err != nil && ctx.Err() == nil {
			synced = false
			t.r.unsynced(err)
			t.log.Warn("etcd failed; mark and sweep when it answers", "err", err)
		}
	}
}

// desired is the stored form of the object under it in the informer cache:
// nil when it is absent (deleted) or cannot be stored (logged, counted).
func (t *term) desired(it item) (obj kubestate.Object, val []byte, deleted bool) {
	raw, exists, err := t.stores[it.res].GetByKey(it.key)
	if err != nil || !exists {
		return nil, nil, true
	}
	obj, val, err = encode(it.res, raw)
	if err != nil {
		t.invalid(it, err)
		return nil, nil, false
	}
	return obj, val, false
}

func (t *term) invalid(it item, err error) {
	t.r.m.invalid.WithLabelValues(string(it.res)).Inc()
	t.log.Error("object skipped: cannot be reflected", "resource", string(it.res), "key", it.key, "err", err)
}

// flush writes the queued changes: puts of what differs from what was last
// written, deletes of what was written and is gone or invalid now; then
// releases deleted nodes. Any error is an etcd failure.
func (t *term) flush(ctx context.Context) error {
	items := t.q.take()
	if len(items) == 0 {
		return nil
	}
	type write struct {
		key kubestate.Key
		val []byte
	}
	var (
		ops    []kubestate.Op
		writes []write
		gone   []string
	)
	for _, it := range items {
		obj, val, deleted := t.desired(it)
		if deleted && it.res == kubestate.ResNode {
			gone = append(gone, it.key)
		}
		k := t.storedAt(it)
		if obj != nil && obj.Key() != k {
			from := k
			k = obj.Key()
			if _, had := t.last[from]; had {
				// A pod that got (or changed) its node moves.
				ops = append(ops, kubestate.MoveOp(from, obj))
				writes = append(writes, write{from, nil}, write{k, val})
				t.log.Debug("change", "key", k.String(), "from", from.String())
				continue
			}
		}
		old, had := t.last[k]
		switch {
		case obj != nil && had && bytes.Equal(old, val):
			continue
		case obj != nil:
			ops = append(ops, kubestate.PutOp(obj))
		case had:
			ops = append(ops, kubestate.DeleteOp(k))
		default:
			continue
		}
		writes = append(writes, write{k, val})
		t.log.Debug("change", "key", k.String(), "delete", obj == nil)
	}
	if len(ops) > 0 {
		wctx, cancel := context.WithTimeout(ctx, t.r.p.EtcdTimeout)
		err := t.w.Apply(wctx, ops)
		cancel()
		if err != nil {
			t.r.m.writeErrors.Inc()
			return fmt.Errorf("write %d changes: %w", len(ops), err)
		}
		for _, w := range writes {
			t.remember(w.key, w.val)
		}
		t.r.wrote(t.counts)
	}
	for _, name := range gone {
		if err := t.release(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// remember notes val as written under k (nil: deleted).
func (t *term) remember(k kubestate.Key, val []byte) {
	_, had := t.last[k]
	switch {
	case val == nil && had:
		delete(t.last, k)
		t.counts[k.Resource]--
		if k.Resource == kubestate.ResPod && t.podAt[k.ID()] == k {
			delete(t.podAt, k.ID())
		}
	case val != nil:
		if !had {
			t.counts[k.Resource]++
		}
		t.last[k] = val
		if k.Resource == kubestate.ResPod {
			t.podAt[k.ID()] = k
		}
	}
}

// release frees a deleted node's NodeSync record.
func (t *term) release(ctx context.Context, name string) error {
	if t.r.p.Nodes == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, t.r.p.EtcdTimeout)
	defer cancel()
	if err := t.r.p.Nodes.ReleaseNode(rctx, t.kv, name); err != nil {
		t.r.m.writeErrors.Inc()
		return fmt.Errorf("release node %s: %w", name, err)
	}
	t.r.m.released.Inc()
	t.log.Info("node deleted: NodeSync record released", "node", name)
	return nil
}

// resync marks and sweeps every resource against the informer caches, then
// releases the records of nodes the API no longer has and writes the
// marker. It forgets the queued changes first: the caches hold them.
func (t *term) resync(ctx context.Context) error {
	start := time.Now()
	t.q.take()
	last := make(map[kubestate.Key][]byte, len(t.last))
	podAt := make(map[string]kubestate.Key, len(t.podAt))
	counts := make(map[kubestate.Resource]int)
	var total kubestate.SyncStats
	for _, k := range reflected() {
		var objs []kubestate.Object
		for _, raw := range t.stores[k.res].List() {
			obj, val, err := encode(k.res, raw)
			if err != nil {
				key, _ := cache.MetaNamespaceKeyFunc(raw)
				t.invalid(item{res: k.res, key: key}, err)
				continue
			}
			objs = append(objs, obj)
			last[obj.Key()] = val
			if k := obj.Key(); k.Resource == kubestate.ResPod {
				podAt[k.ID()] = k
			}
		}
		sctx, cancel := context.WithTimeout(ctx, t.r.p.SyncTimeout)
		st, err := t.w.Sync(sctx, k.res, objs)
		cancel()
		if err != nil {
			t.r.m.writeErrors.Inc()
			return fmt.Errorf("sweep %s: %w", k.res, err)
		}
		counts[k.res] = len(objs)
		total.Put += st.Put
		total.Unchanged += st.Unchanged
		total.Deleted += st.Deleted
		t.log.Debug("swept", "resource", string(k.res), "put", st.Put, "unchanged", st.Unchanged, "deleted", st.Deleted)
	}
	t.last, t.podAt, t.counts = last, podAt, counts
	if err := t.releaseOrphans(ctx); err != nil {
		return err
	}
	if err := t.mark(ctx); err != nil {
		return err
	}
	t.r.synced(counts)
	t.log.Info("mark and sweep done", "put", total.Put, "unchanged", total.Unchanged, "deleted", total.Deleted,
		"duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// releaseOrphans releases the NodeSync records of nodes that are neither in
// the cache nor, asked directly, in the API: nodes deleted while no
// reflector was running (or whose release failed). A node that cannot be
// checked or released is logged and counted and left for the next sweep:
// it fails neither the sweep nor the other releases. Only a lost fence and
// a failed listing are returned.
func (t *term) releaseOrphans(ctx context.Context) error {
	if t.r.p.Nodes == nil {
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, t.r.p.EtcdTimeout)
	resp, err := t.r.p.Etcd.Get(gctx, kubestate.ResVppNode.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	cancel()
	if err != nil {
		t.r.m.writeErrors.Inc()
		return fmt.Errorf("list node records: %w", err)
	}
	nodes := t.stores[kubestate.ResNode]
	for _, kv := range resp.Kvs {
		k, err := kubestate.ParseKey(string(kv.Key))
		if err != nil || k.Resource != kubestate.ResVppNode {
			continue
		}
		if _, exists, _ := nodes.GetByKey(k.Name); exists {
			continue
		}
		// The cache may lag behind a node that just joined: ask the API.
		_, err = t.r.p.Kube.CoreV1().Nodes().Get(ctx, k.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			t.r.m.releaseErrors.Inc()
			t.log.Warn("node has a NodeSync record but no Node in the cache, and the API cannot be asked: not released; retried by the next sweep",
				"node", k.Name, "err", err)
			continue
		}
		err = t.release(ctx, k.Name)
		if errors.Is(err, ErrDeposed) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			t.r.m.releaseErrors.Inc()
			t.log.Warn("NodeSync record of a deleted node not released; retried by the next sweep", "node", k.Name, "err", err)
		}
	}
	return nil
}

// mark writes the layout and sync markers (kubestate.MarkerWriter) with the
// next generation.
func (t *term) mark(ctx context.Context) error {
	mctx, cancel := context.WithTimeout(ctx, t.r.p.EtcdTimeout)
	defer cancel()
	if _, err := t.r.marker.Mark(mctx, t.kv); err != nil {
		t.r.m.writeErrors.Inc()
		return fmt.Errorf("write marker: %w", err)
	}
	return nil
}

// probe checks that etcd answers and still holds the marker and this
// term's LeaderKey.
func (t *term) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, t.r.p.EtcdTimeout)
	defer cancel()
	resp, err := t.r.p.Etcd.Get(pctx, MarkerKey)
	if err != nil {
		return fmt.Errorf("etcd probe: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return errDataLost
	}
	// An older marker than the last one written: etcd was restored from
	// an older backup.
	if m, err := kubestate.ParseSyncMarker(resp.Kvs[0].Value); err != nil || t.r.marker.Stale(m) {
		return fmt.Errorf("%w (or put back older)", errDataLost)
	}
	return t.f.check(pctx)
}

// deposed tells whether err means that this replica lost LeaderKey; it
// then logs and counts the end of the term.
func (t *term) deposed(err error) bool {
	if !errors.Is(err, ErrDeposed) {
		return false
	}
	t.r.m.deposed.Inc()
	t.log.Error("no longer the leader in etcd: stopping writes and ending the term", "err", err)
	return true
}

// pause is the wait after the n-th failure in a row: minBackoff doubling
// up to ceiling.
func pause(n int, ceiling time.Duration) time.Duration {
	return backoff.Policy{Initial: minBackoff, Max: ceiling}.Delay(n)
}
