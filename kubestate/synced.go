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

// MarkSynced writes the markers of a complete output for a writer that
// writes once (contivctl load): LayoutKey (when it differs) and SyncedKey
// with a generation above prev and above the stored marker's. It returns
// the generation written. A writer that marks again and again (the
// reflector) keeps a MarkerWriter.
func MarkSynced(ctx context.Context, kv clientv3.KV, identity string, prev int64) (int64, error) {
	w := MarkerWriter{Identity: identity}
	w.last.Generation = prev
	m, err := w.Mark(ctx, kv)
	return m.Generation, err
}

// String names the marker's output in logs and errors.
func (m SyncMarker) String() string {
	return fmt.Sprintf("generation %d", m.Generation)
}
