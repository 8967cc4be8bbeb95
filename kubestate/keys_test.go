package kubestate

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestPodKeys(t *testing.T) {
	for _, tc := range []struct {
		k    Key
		want string
	}{
		{Key{Resource: ResPod, Node: "n1", Namespace: "shop", Name: "a"}, Prefix + "k8s/pod/n1/shop/a"},
		{Key{Resource: ResPod, Namespace: "shop", Name: "a"}, Prefix + "k8s/pod/_unscheduled/shop/a"},
		{(&Pod{Namespace: "shop", Name: "a", NodeName: "n2"}).Key(), Prefix + "k8s/pod/n2/shop/a"},
		{Key{Resource: ResService, Namespace: "shop", Name: "a"}, Prefix + "k8s/service/shop/a"},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.k, got, tc.want)
		}
		k, err := ParseKey(tc.want)
		if err != nil || k != tc.k {
			t.Errorf("ParseKey(%s) = %+v, %v; want %+v", tc.want, k, err, tc.k)
		}
		if err := checkKey(tc.k); err != nil {
			t.Errorf("%s not writable: %v", tc.k, err)
		}
	}
	if got, want := PodPrefix("n1"), Prefix+"k8s/pod/n1/"; got != want {
		t.Errorf("PodPrefix(n1) = %s, want %s", got, want)
	}
	if _, err := ParseKey(Prefix + "k8s/pod/shop/a"); !errors.Is(err, ErrOldLayout) {
		t.Errorf("layout-1 pod key: %v, want ErrOldLayout", err)
	}
	for _, s := range []string{"k8s/pod/n1/shop/a/b", "k8s/pod/n1//a", "k8s/pod//shop/a", "k8s/pod/"} {
		if k, err := ParseKey(Prefix + s); err == nil || errors.Is(err, ErrOldLayout) {
			t.Errorf("ParseKey(%s) = %+v, %v; want a malformed-key error", s, k, err)
		}
	}
	for _, k := range []Key{
		{Resource: ResPod, Node: UnscheduledNode, Namespace: "shop", Name: "a"},
		{Resource: ResPod, Node: "a/b", Namespace: "shop", Name: "a"},
		{Resource: ResService, Node: "n1", Namespace: "shop", Name: "a"},
	} {
		if err := checkKey(k); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v writable: %v", k, err)
		}
	}
}

// TestSyncMovesPods: a mark and sweep of pods from layout 1, and of a pod
// that got its node, leaves every pod under its node's key only, and marks
// the layout.
func TestSyncMovesPods(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	old := Prefix + "k8s/pod/ns/pod-0001"
	if _, err := cli.Put(ctx, old, `{"namespace":"ns","name":"pod-0001","nodeName":"node-1"}`); err != nil {
		t.Fatal(err)
	}
	pending := &Pod{Namespace: "ns", Name: "pod-0002"}
	if _, err := w.Sync(ctx, ResPod, []Object{pod(1), pending}); err != nil {
		t.Fatal(err)
	}
	scheduled := &Pod{Namespace: "ns", Name: "pod-0002", NodeName: "node-2"}
	st, err := w.Sync(ctx, ResPod, []Object{pod(1), scheduled})
	if err != nil || st != (SyncStats{Put: 1, Unchanged: 1, Deleted: 1}) {
		t.Fatalf("sync after scheduling: %+v, %v", st, err)
	}
	resp, err := cli.Get(ctx, ResPod.KeyPrefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	want := []string{pod(1).Key().String(), scheduled.Key().String()}
	if len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Errorf("pod keys %v, want %v", keys, want)
	}
	if resp, err := cli.Get(ctx, LayoutKey); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != LayoutVersion {
		t.Errorf("layout marker %v, %v; want %s", resp, err, LayoutVersion)
	}
}

// TestApplyMove: a MoveOp deletes the old key and puts the new one in one
// transaction.
func TestApplyMove(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	pending := &Pod{Namespace: "ns", Name: "p"}
	if err := w.Put(ctx, pending); err != nil {
		t.Fatal(err)
	}
	before := revision(t, cli)
	scheduled := &Pod{Namespace: "ns", Name: "p", NodeName: "node-1"}
	if err := w.Apply(ctx, []Op{MoveOp(pending.Key(), scheduled)}); err != nil {
		t.Fatal(err)
	}
	if got := revision(t, cli) - before; got != 1 {
		t.Errorf("the move took %d transactions", got)
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil || len(l.Objects) != 1 || l.Objects[scheduled.Key()] == nil {
		t.Errorf("pods %v, %v; want only %s", l.Objects, err, scheduled.Key())
	}
}

// TestParseKeyAllocatesNothing: the watcher parses the key of every change;
// the parsed key's strings are cut from the one given, and the resources'
// prefixes it tries are constants.
func TestParseKeyAllocatesNothing(t *testing.T) {
	for _, s := range []string{
		ResEndpointSlice.KeyPrefix() + "ns/web-abc",
		ResPod.KeyPrefix() + "node-1/ns/web-1",
		ResVppNode.KeyPrefix() + "node-1",
	} {
		var k Key
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			if k, err = ParseKey(s); err != nil {
				t.Fatal(err)
			}
		})
		if k.String() != s {
			t.Errorf("parsed %q as %+v", s, k)
		}
		if allocs != 0 {
			t.Errorf("%s: %.0f allocations, want none", s, allocs)
		}
	}
}
