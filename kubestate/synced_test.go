package kubestate

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
)

func TestCompleteness(t *testing.T) {
	marker := []byte(`{"identity":"a","synced":"2026-01-01T00:00:00Z","generation":7}`)
	for _, tc := range []struct {
		name           string
		layout, synced []byte
		why            string // "" : complete
	}{
		{"complete", []byte(LayoutVersion), marker, ""},
		{"no layout marker", nil, marker, "no layout marker"},
		{"another layout", []byte("1"), marker, `layout "1"`},
		{"no sync marker", []byte(LayoutVersion), nil, "no sync marker"},
		{"bad sync marker", []byte(LayoutVersion), []byte("{"), SyncedKey},
	} {
		m, err := Completeness(tc.layout, tc.synced)
		switch {
		case tc.why == "" && (err != nil || m.Generation != 7):
			t.Errorf("%s: %+v, %v", tc.name, m, err)
		case tc.why != "" && (!errors.Is(err, ErrNotComplete) || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s: %v, want ErrNotComplete naming %q", tc.name, err, tc.why)
		}
	}
}

// MarkSynced writes both markers, with a generation above the stored one
// and above prev.
func TestMarkSynced(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx := context.Background()
	read := func() SyncMarker {
		t.Helper()
		resp, err := cli.Txn(ctx).Then(clientv3.OpGet(LayoutKey), clientv3.OpGet(SyncedKey)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		var vals [2][]byte
		for i, r := range resp.Responses {
			if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
				vals[i] = kvs[0].Value
			}
		}
		m, err := Completeness(vals[0], vals[1])
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	g1, err := MarkSynced(ctx, cli, "a", 0)
	if err != nil || read().Generation != g1 || read().Identity != "a" {
		t.Fatalf("first: %d %v %+v", g1, err, read())
	}
	// A writer that does not know the stored generation still goes above it.
	future := time.Now().Add(time.Hour).UnixMilli()
	if _, err := cli.Put(ctx, SyncedKey, `{"generation":`+strconv.FormatInt(future, 10)+`}`); err != nil {
		t.Fatal(err)
	}
	if g2, err := MarkSynced(ctx, cli, "b", 0); err != nil || g2 <= future {
		t.Errorf("after a stored %d: %d %v", future, g2, err)
	}
	if g3, err := MarkSynced(ctx, cli, "c", future+100); err != nil || g3 <= future+100 {
		t.Errorf("above prev %d: %d %v", future+100, g3, err)
	}
}

// A MarkerWriter continues its own lineage; on a marker it did not write,
// or on none (a wiped etcd), it starts a new one; it takes a marker put
// back for a stale one, another writer's newer one not.
func TestMarkerWriterLineages(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx := context.Background()
	w := &MarkerWriter{Identity: "ksr", Now: func() time.Time { return time.UnixMilli(1000) }}
	m1, err := w.Mark(ctx, cli)
	if err != nil || m1.Lineage == "" || m1.Generation != 1000 {
		t.Fatalf("first: %+v %v", m1, err)
	}
	m2, err := w.Mark(ctx, cli)
	if err != nil || m2.Lineage != m1.Lineage || m2.Generation != m1.Generation+1 || storedMarker(t, cli) != m2 {
		t.Fatalf("second: %+v %v, want generation %d of %s", m2, err, m1.Generation+1, m1.Lineage)
	}
	if w.Stale(m2) || !w.Stale(m1) {
		t.Errorf("stale: %v (the last) %v (the one before)", w.Stale(m2), w.Stale(m1))
	}
	// Another writer marks: a new lineage, above in number (for older
	// agents), not stale to the first writer, which then starts another.
	g, err := MarkSynced(ctx, cli, "contivctl load", 0)
	other := storedMarker(t, cli)
	if err != nil || g != other.Generation || g != m2.Generation+1 || other.Lineage == m2.Lineage || w.Stale(other) {
		t.Fatalf("another writer: %+v %v (stale %v)", other, err, w.Stale(other))
	}
	m3, err := w.Mark(ctx, cli)
	if err != nil || m3.Lineage == m2.Lineage || m3.Lineage == other.Lineage || m3.Generation != other.Generation+1 {
		t.Fatalf("after another writer: %+v %v", m3, err)
	}
	if !w.Stale(m2) || !w.Stale(other) {
		t.Errorf("older lineages not stale: %v %v", w.Stale(m2), w.Stale(other))
	}
	// etcd loses its data: the next marker is of a new lineage, whatever
	// the clock says.
	srv.Wipe()
	m4, err := w.Mark(ctx, cli)
	if err != nil || m4.Lineage == m3.Lineage || m4.Generation != m3.Generation+1 {
		t.Fatalf("after a wipe: %+v %v", m4, err)
	}
}

func TestMarkerHistoryCompare(t *testing.T) {
	mk := func(l string, g int64) SyncMarker { return SyncMarker{Lineage: l, Generation: g} }
	var h MarkerHistory
	if h.Compare(mk("", 0)) != 1 {
		t.Error("nothing taken in: every marker is newer")
	}
	h.Take(mk("", 5_000)) // an older reflector's: the clock
	for _, tc := range []struct {
		m    SyncMarker
		want int
	}{
		{mk("", 4_999), -1}, {mk("", 5_000), 0}, {mk("", 5_001), 1},
		{mk("a", 1), 1}, // a new lineage, whatever its number
	} {
		if got := h.Compare(tc.m); got != tc.want {
			t.Errorf("after %v: Compare(%v) = %d, want %d", h.last, tc.m, got, tc.want)
		}
	}
	h.Take(mk("a", 1))
	h.Take(mk("a", 2))
	h.Take(mk("b", 1)) // e.g. after a wipe: generation 1 again
	for _, tc := range []struct {
		m    SyncMarker
		want int
	}{
		{mk("b", 1), 0}, {mk("b", 2), 1}, {mk("b", 0), -1},
		{mk("a", 3), -1}, {mk("", 9_999), -1}, // lineages left: older
		{mk("c", 1), 1},
	} {
		if got := h.Compare(tc.m); got != tc.want {
			t.Errorf("after %v: Compare(%v) = %d, want %d", h.last, tc.m, got, tc.want)
		}
	}
	// The past is bounded: the oldest lineages are forgotten.
	for i := range maxPastLineages + 1 {
		h.Take(mk(strconv.Itoa(i), 1))
	}
	if h.Compare(mk("a", 3)) != 1 || h.Compare(mk("0", 1)) != -1 || len(h.past) != maxPastLineages {
		t.Errorf("bounded past: %d lineages, a %d, 0 %d", len(h.past), h.Compare(mk("a", 3)), h.Compare(mk("0", 1)))
	}
}
