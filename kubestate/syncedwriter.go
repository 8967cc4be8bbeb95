package kubestate

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxMarkAttempts bounds the compare-and-swaps of one Mark: each failed one
// means another writer wrote the marker between this one's read and write.
const maxMarkAttempts = 16

// MarkerWriter writes the sync markers of one writer's complete outputs
// (the reflector keeps one across its terms) and tells a stored marker
// older than what it wrote and overwrote. Its methods are safe from any
// goroutine.
//
// The order of markers is etcd's, never a clock's: every write is a
// compare-and-swap on the stored marker's mod revision, so a marker is
// written only on the one it was computed from. It continues the stored
// marker's lineage (generation + 1) when that is the marker this writer
// wrote last; otherwise (none stored: a fresh or wiped etcd; another
// writer's; one put back) it starts a new lineage, a random name a reader
// has never seen (MarkerHistory).
type MarkerWriter struct {
	// Identity names the writer in its markers.
	Identity string
	// Now is the clock the markers are stamped with (nil: time.Now). It
	// orders nothing: see Mark.
	Now func() time.Time

	mu sync.Mutex
	// last is the marker this writer wrote last (zero: none).
	last SyncMarker
	// seen has the markers this writer wrote and overwrote.
	seen MarkerHistory
}

func (w *MarkerWriter) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Mark writes the markers of a complete output, in one transaction that
// compares the stored marker's mod revision with the one read: LayoutKey
// (when it differs) and SyncedKey, the marker after the stored one. When
// another writer's marker came between the read and the write, it reads
// again. It returns the marker written.
//
// The generation of a marker is the stored one's + 1 (within a lineage the
// readers' order), or, in an etcd that holds no marker, above the one this
// writer wrote last and at least the clock in milliseconds: only so that
// agents older than lineages, which compare generations as numbers across
// a loss of etcd's data, still take it in. A reader of lineages never
// compares generations of two lineages.
func (w *MarkerWriter) Mark(ctx context.Context, kv clientv3.KV) (SyncMarker, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range maxMarkAttempts {
		resp, err := kv.Txn(ctx).Then(clientv3.OpGet(LayoutKey), clientv3.OpGet(SyncedKey)).Commit()
		if err != nil {
			return SyncMarker{}, fmt.Errorf("read markers: %w", err)
		}
		var ops []clientv3.Op
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || string(kvs[0].Value) != LayoutVersion {
			ops = append(ops, clientv3.OpPut(LayoutKey, LayoutVersion))
		}
		var (
			stored *SyncMarker
			rev    int64 // the stored marker's mod revision; 0: absent
		)
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			rev = kvs[0].ModRevision
			if m, err := ParseSyncMarker(kvs[0].Value); err == nil {
				stored = &m
			}
		}
		next := w.next(stored)
		b, err := json.Marshal(next)
		if err != nil {
			return SyncMarker{}, err
		}
		ops = append(ops, clientv3.OpPut(SyncedKey, string(b)))
		put, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(SyncedKey), "=", rev)).Then(ops...).Commit()
		if err != nil {
			return SyncMarker{}, fmt.Errorf("write %s: %w", SyncedKey, err)
		}
		if !put.Succeeded {
			continue // another writer's marker came in between
		}
		if stored != nil {
			w.seen.Take(*stored)
		}
		w.seen.Take(next)
		w.last = next
		return next, nil
	}
	return SyncMarker{}, fmt.Errorf("write %s: other writers wrote it %d times between this writer's read and write", SyncedKey, maxMarkAttempts)
}

// next is the marker after stored (nil: none, or one that does not decode).
func (w *MarkerWriter) next(stored *SyncMarker) SyncMarker {
	now := w.now().UTC()
	m := SyncMarker{Identity: w.Identity, Synced: now}
	switch {
	case stored != nil && w.last.Lineage != "" && stored.Lineage == w.last.Lineage && stored.Generation == w.last.Generation:
		m.Lineage, m.Generation = stored.Lineage, stored.Generation+1
		return m
	case stored != nil:
		m.Generation = max(stored.Generation, w.last.Generation) + 1
	default:
		m.Generation = max(w.last.Generation+1, now.UnixMilli())
	}
	// A new lineage's name: 128 random bits or more (crypto/rand.Text),
	// that no reader has seen.
	m.Lineage = rand.Text()
	return m
}

// Stale tells whether m, read from SyncedKey, is older than the marker
// this writer wrote last (MarkerHistory.Compare over what it wrote and
// overwrote): etcd was restored from an older backup, or an older marker
// was put back. Another writer's newer marker is not stale.
func (w *MarkerWriter) Stale(m SyncMarker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen.Compare(m) < 0
}
