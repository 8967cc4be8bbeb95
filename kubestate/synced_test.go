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

func TestNextGenerationGrows(t *testing.T) {
	now := time.UnixMilli(5_000)
	for _, tc := range []struct{ prev, want int64 }{
		{0, 5_000},     // the clock
		{4_999, 5_000}, // the clock, ahead
		{5_000, 5_001}, // the clock behind: prev + 1
		{9_000, 9_001},
	} {
		if got := NextGeneration(tc.prev, now); got != tc.want {
			t.Errorf("NextGeneration(%d) = %d, want %d", tc.prev, got, tc.want)
		}
	}
}

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
