package kubestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SyncedKey is the sync marker: written (after LayoutKey) once a complete
// output of the Kubernetes API is in etcd, by every completed mark and sweep
// of the reflector and by `contivctl load`. Until it is there, and while it
// is older than one already seen, what etcd holds is not a complete output:
// an agent takes no listing without it (docs/etcd-layout.md).
const SyncedKey = Prefix + "ksr/synced"

// SyncMarker is the value of SyncedKey.
type SyncMarker struct {
	// Identity names the writer (the reflector replica, contivctl).
	Identity string `json:"identity,omitempty"`
	// Synced is when the output was completed.
	Synced time.Time `json:"synced"`
	// Generation numbers the complete outputs: each is above every one
	// written before it, also across a loss of etcd's data (see
	// NextGeneration). 0 in markers of older reflectors.
	Generation int64 `json:"generation,omitempty"`
}

// NextGeneration is the generation of the output after one of generation
// prev: the wall clock in milliseconds, or prev+1 when the clock is not
// ahead of prev. Taking the clock keeps generations growing when the writer
// no longer knows prev (etcd lost its data, and the reflector restarted).
func NextGeneration(prev int64, now time.Time) int64 {
	return max(prev+1, now.UnixMilli())
}

// ParseSyncMarker decodes a SyncedKey value.
func ParseSyncMarker(b []byte) (SyncMarker, error) {
	var m SyncMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return SyncMarker{}, fmt.Errorf("%s: %w", SyncedKey, err)
	}
	return m, nil
}

// ErrNotComplete tells that etcd holds no complete output of the API.
var ErrNotComplete = errors.New("etcd holds no complete reflector output")

// Completeness tells whether a listing whose LayoutKey and SyncedKey values
// are layout and synced (nil: absent) is a complete output, and returns its
// marker; the error (ErrNotComplete) says why not.
func Completeness(layout, synced []byte) (SyncMarker, error) {
	switch {
	case layout == nil:
		return SyncMarker{}, fmt.Errorf("%w: no layout marker (%s): no reflector has swept it yet", ErrNotComplete, LayoutKey)
	case string(layout) != LayoutVersion:
		return SyncMarker{}, fmt.Errorf("%w: layout %q (%s), this agent reads layout %s: upgrade contiv-ksr, whose first sweep migrates etcd",
			ErrNotComplete, layout, LayoutKey, LayoutVersion)
	case synced == nil:
		return SyncMarker{}, fmt.Errorf("%w: no sync marker (%s): the reflector's sweep has not completed", ErrNotComplete, SyncedKey)
	}
	m, err := ParseSyncMarker(synced)
	if err != nil {
		return SyncMarker{}, fmt.Errorf("%w: %w", ErrNotComplete, err)
	}
	return m, nil
}

// MarkSynced writes the markers of a complete output: LayoutKey (when it
// differs) and SyncedKey with a generation above prev and above the stored
// marker's. It returns the generation written.
func MarkSynced(ctx context.Context, kv clientv3.KV, identity string, prev int64) (int64, error) {
	resp, err := kv.Txn(ctx).Then(clientv3.OpGet(LayoutKey), clientv3.OpGet(SyncedKey)).Commit()
	if err != nil {
		return 0, fmt.Errorf("read markers: %w", err)
	}
	var ops []clientv3.Op
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || string(kvs[0].Value) != LayoutVersion {
		ops = append(ops, clientv3.OpPut(LayoutKey, LayoutVersion))
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if m, err := ParseSyncMarker(kvs[0].Value); err == nil {
			prev = max(prev, m.Generation)
		}
	}
	now := time.Now().UTC()
	gen := NextGeneration(prev, now)
	b, err := json.Marshal(SyncMarker{Identity: identity, Synced: now, Generation: gen})
	if err != nil {
		return 0, err
	}
	ops = append(ops, clientv3.OpPut(SyncedKey, string(b)))
	if _, err := kv.Txn(ctx).Then(ops...).Commit(); err != nil {
		return 0, fmt.Errorf("write %s: %w", SyncedKey, err)
	}
	return gen, nil
}
