package kubestate

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MarkerWriter writes the sync markers of one writer's complete outputs
// (the reflector keeps one across its terms) and tells a stored marker
// older than what it wrote. Its methods are safe from any goroutine.
type MarkerWriter struct {
	// Identity names the writer in its markers.
	Identity string
	// Now is the clock the markers are stamped with (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// last is the marker this writer wrote last (zero: none).
	last SyncMarker
}

func (w *MarkerWriter) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Mark writes the markers of a complete output: LayoutKey (when it
// differs) and SyncedKey with a generation above the stored marker's and
// above the one this writer wrote last. It returns the marker written.
func (w *MarkerWriter) Mark(ctx context.Context, kv clientv3.KV) (SyncMarker, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	resp, err := kv.Txn(ctx).Then(clientv3.OpGet(LayoutKey), clientv3.OpGet(SyncedKey)).Commit()
	if err != nil {
		return SyncMarker{}, fmt.Errorf("read markers: %w", err)
	}
	var ops []clientv3.Op
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || string(kvs[0].Value) != LayoutVersion {
		ops = append(ops, clientv3.OpPut(LayoutKey, LayoutVersion))
	}
	prev := w.last.Generation
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if m, err := ParseSyncMarker(kvs[0].Value); err == nil {
			prev = max(prev, m.Generation)
		}
	}
	now := w.now().UTC()
	next := SyncMarker{Identity: w.Identity, Synced: now, Generation: NextGeneration(prev, now)}
	b, err := json.Marshal(next)
	if err != nil {
		return SyncMarker{}, err
	}
	ops = append(ops, clientv3.OpPut(SyncedKey, string(b)))
	if _, err := kv.Txn(ctx).Then(ops...).Commit(); err != nil {
		return SyncMarker{}, fmt.Errorf("write %s: %w", SyncedKey, err)
	}
	w.last = next
	return next, nil
}

// Stale tells whether m, read from SyncedKey, is older than the marker
// this writer wrote last: etcd was restored from an older backup, or an
// older marker was put back.
func (w *MarkerWriter) Stale(m SyncMarker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return m.Generation < w.last.Generation
}
