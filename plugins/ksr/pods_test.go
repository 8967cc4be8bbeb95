package ksr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// TestPodsUnderTheirNode: pods are stored under their node, unscheduled
// ones under kubestate.UnscheduledNode; a pod that gets its node moves: the
// delete of its old key and the put of the new one are one transaction.
func TestPodsUnderTheirNode(t *testing.T) {
	placed := pod("shop", "web-a", "node-1", "10.1.1.5")
	other := pod("shop", "web-b", "node-2", "10.1.2.5")
	pending := pod("shop", "web-c", "", "")
	f := newFixture(t, placed, other, pending)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	ctx := context.Background()
	for _, want := range []string{
		kubestate.Prefix + "k8s/pod/node-1/shop/web-a",
		kubestate.Prefix + "k8s/pod/node-2/shop/web-b",
		kubestate.Prefix + "k8s/pod/_unscheduled/shop/web-c",
	} {
		resp, err := f.cli.Get(ctx, want)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1, "%s stored", want)
	}

	from := keyOf(t, pending)
	wch := f.cli.Watch(ctx, kubestate.ResPod.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithRev(f.modRev(from)+1))
	scheduled := pod("shop", "web-c", "node-1", "10.1.1.6")
	f.update(scheduled)
	f.waitStored(scheduled)
	require.Zero(t, f.modRev(from), "old key deleted")

	revs := map[string]int64{}
	for len(revs) < 2 {
		resp := <-wch
		require.NoError(t, resp.Err())
		for _, ev := range resp.Events {
			revs[ev.Type.String()+" "+string(ev.Kv.Key)] = ev.Kv.ModRevision
		}
	}
	del, put := revs["DELETE "+from.String()], revs["PUT "+keyOf(t, scheduled).String()]
	require.NotZero(t, del, "events %v", revs)
	require.Equal(t, del, put, "the move is one transaction: %v", revs)
	require.Len(t, revs, 2, "nothing else changed: %v", revs)
}

// TestSweepMigratesLayout1: pod keys of layout 1 (no node segment) left in
// etcd are deleted by the reflector's first mark and sweep, every pod is
// written under its node, and the layout marker is set.
func TestSweepMigratesLayout1(t *testing.T) {
	placed := pod("shop", "web-a", "node-1", "10.1.1.5")
	f := newFixture(t, placed)
	ctx := context.Background()
	old := kubestate.ResPod.KeyPrefix() + "shop/web-a"
	_, err := f.cli.Put(ctx, old, `{"namespace":"shop","name":"web-a","nodeName":"node-1","ips":["10.1.1.5"]}`)
	require.NoError(t, err)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	resp, err := f.cli.Get(ctx, kubestate.ResPod.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, keyOf(t, placed).String(), string(resp.Kvs[0].Key))
	resp, err = f.cli.Get(ctx, kubestate.LayoutKey)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, kubestate.LayoutVersion, string(resp.Kvs[0].Value))
}
