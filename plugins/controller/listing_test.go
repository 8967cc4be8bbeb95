package controller

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/bench/workload"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// TestListingOfManyPages: a listing of prefixes of several pages each
// holds every stored object, each as decoding its stored value alone
// gives it, though the pages after the first are received into the
// buffers of pages already decoded (nothing decoded may share them); and a
// write during the listing is not in it (one revision).
func TestListingOfManyPages(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stored := map[kubestate.Key][]byte{}
	ops := make([]clientv3.Op, 0, 128)
	flush := func() {
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for k, o := range workload.New(2500).Objects() { // 3 pages of Services, 3 of EndpointSlices
		raw, err := kubestate.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		stored[k] = raw
		if ops = append(ops, clientv3.OpPut(k.String(), string(raw))); len(ops) == cap(ops) {
			flush()
		}
	}
	flush()
	w := newWatcher(watcherParams{log: slog.New(slog.DiscardHandler), cli: cli, resources: kubestate.Resources, q: newQueue(), st: newStatus()})
	var late kubestate.Key
	w.afterFirstPage = func() {
		for k := range stored {
			if k.Resource == kubestate.ResEndpointSlice {
				late = k
				if _, err := cli.Delete(ctx, k.String()); err != nil {
					t.Error(err)
				}
				delete(stored, k)
				return
			}
		}
	}
	l, err := w.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.snap.Objects[late]; !ok {
		t.Errorf("%s, deleted after the listing's first page, is not in the listing", late)
	}
	delete(l.snap.Objects, late)
	if len(l.snap.Objects) != len(stored) || len(l.bad) != 0 {
		t.Errorf("listed %d objects (%d bad), want %d", len(l.snap.Objects), len(l.bad), len(stored))
	}
	for k, raw := range stored {
		want, err := kubestate.Decode(k, raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.snap.Objects[k]; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s listed as %+v, want %+v", k, got, want)
		}
	}
}
