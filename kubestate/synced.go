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

// SyncMarker is the value of SyncedKey, JSON {identity, synced,
// generation, lineage}.
type SyncMarker struct {
	// Identity names the writer (the reflector replica, contivctl).
	Identity string `json:"identity,omitempty"`
	// Synced is when the output was completed, by its writer's clock; it
	// orders nothing.
	Synced time.Time `json:"synced"`
	// Generation numbers the complete outputs of one lineage: each is the
	// one before + 1, written on it by a compare-and-swap
	// (MarkerWriter.Mark). 0 in markers of older reflectors.
	Generation int64 `json:"generation,omitempty"`
	// Lineage names the run of markers written each on the one before
	// (MarkerHistory); empty in markers of older reflectors, whose
	// generation was their writer's clock.
	Lineage string `json:"lineage,omitempty"`
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
// writes once (contivctl load): LayoutKey (when it differs) and SyncedKey,
// a marker of a new lineage (MarkerWriter.Mark) whose generation is also
// above prev. It returns the generation written. A writer that marks
// again and again (the reflector) keeps a MarkerWriter.
func MarkSynced(ctx context.Context, kv clientv3.KV, identity string, prev int64) (int64, error) {
	w := MarkerWriter{Identity: identity}
	w.last.Generation = prev
	m, err := w.Mark(ctx, kv)
	return m.Generation, err
}

// String names the marker's output in logs and errors.
func (m SyncMarker) String() string {
	if m.Lineage == "" {
		return fmt.Sprintf("generation %d", m.Generation)
	}
	return fmt.Sprintf("generation %d of lineage %s", m.Generation, m.Lineage)
}
