package ksr

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"contiv.dev/vpp/kubestate"
)

func TestEtcdOutageEndsWithMarkAndSweep(t *testing.T) {
	a := service("shop", "a", "10.96.0.1", 80)
	b := service("shop", "b", "10.96.0.2", 80)
	f := newFixture(t, a, b, namespace("shop", nil))
	r := f.start(Params{EtcdTimeout: 300 * time.Millisecond})
	r.waitSynced(t, 1)
	f.waitEqual()

	f.etcd.Stop()
	f.remove(a)
	c := service("shop", "c", "10.96.0.3", 80)
	f.create(c)
	eventually(t, func() bool { return !r.r.Status().Synced }, "etcd failure noticed")
	require.False(t, r.r.Ready(), "a leader that cannot write is not ready")
	require.NotEmpty(t, r.r.Status().LastError)
	// More changes while etcd is away are not lost either.
	d := service("shop", "d", "10.96.0.4", 80)
	f.create(d)

	f.etcd.Restart()
	r.waitSynced(t, 2)
	f.waitEqual()
	require.True(t, r.r.Ready())
	require.Empty(t, r.r.Status().LastError)
	require.GreaterOrEqual(t, testutil.ToFloat64(r.r.m.resyncs), 2.0)
	require.NotEmpty(t, f.logs.lines("etcd failed; mark and sweep when it answers"))

	// And it keeps reflecting incrementally.
	f.remove(b)
	f.waitGone(keyOf(t, b))
}

func TestFailedWriteIsCountedAndSwept(t *testing.T) {
	a := service("shop", "a", "10.96.0.1", 80)
	f := newFixture(t, a)
	r := f.start(Params{EtcdTimeout: 300 * time.Millisecond, ProbeInterval: time.Hour})
	r.waitSynced(t, 1)
	f.etcd.Stop()
	b := service("shop", "b", "10.96.0.2", 80)
	f.create(b)
	// Without probes, the failed write alone starts the recovery.
	eventually(t, func() bool { return testutil.ToFloat64(r.r.m.writeErrors) >= 1 }, "write error counted")
	f.etcd.Restart()
	r.waitSynced(t, 2)
	f.waitEqual()
}

func TestWipedEtcdIsRefilled(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80), pod("shop", "p", "node-1", "10.1.1.2"),
		node("node-1", "192.168.56.101", "10.1.1.0/24"), namespace("shop", nil))
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	rev := f.modRev(rawKey(MarkerKey))
	require.NotZero(t, rev)

	// etcd loses its data while nothing changes in the API: only the probe
	// can tell.
	f.etcd.Wipe()
	r.waitSynced(t, 2)
	f.waitEqual()
	require.NotZero(t, f.modRev(rawKey(MarkerKey)))
	// The probe finds the marker gone, a write finds the leader key gone, or
	// the leader key's lease is found gone with the data (whichever comes
	// first): the wipe was noticed, not merely outlived.
	require.True(t, len(f.logs.lines("marker key missing")) > 0 || len(f.logs.lines("no longer the leader in etcd")) > 0 ||
		len(f.logs.lines("the etcd leader lease ended")) > 0)

	resp, err := f.cli.Get(context.Background(), MarkerKey)
	require.NoError(t, err)
	require.Contains(t, string(resp.Kvs[0].Value), `"synced"`)
}

func TestPeriodicSweepRepairsDrift(t *testing.T) {
	a := service("shop", "a", "10.96.0.1", 80)
	f := newFixture(t, a)
	r := f.start(Params{ResyncInterval: 100 * time.Millisecond})
	r.waitSynced(t, 1)
	f.waitEqual()
	// Someone writes behind the reflector's back.
	ctx := context.Background()
	_, err := f.cli.Put(ctx, keyOf(t, a).String(), `{"namespace":"shop","name":"a","clusterIPs":["10.96.9.9"]}`)
	require.NoError(t, err)
	_, err = f.cli.Put(ctx, keyOf(t, service("shop", "b", "", 0)).String(), `{"namespace":"shop","name":"b"}`)
	require.NoError(t, err)
	r.waitSynced(t, 2)
	f.waitEqual()
}

// TestOlderMarkerIsSweptAgain: etcd restored from an older backup holds an
// older sync marker (and older objects): the probe tells it from the
// generation the leader wrote last and sweeps again, with a newer one.
func TestOlderMarkerIsSweptAgain(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	r := f.start(Params{})
	r.waitSynced(t, 1)
	ctx := context.Background()
	marker := func() kubestate.SyncMarker {
		resp, err := f.cli.Get(ctx, MarkerKey)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		m, err := kubestate.ParseSyncMarker(resp.Kvs[0].Value)
		require.NoError(t, err)
		return m
	}
	m := marker()
	gen := m.Generation
	old, err := json.Marshal(kubestate.SyncMarker{Identity: "backup", Generation: gen - 1, Lineage: m.Lineage})
	require.NoError(t, err)
	_, err = f.cli.Put(ctx, MarkerKey, string(old))
	require.NoError(t, err)
	r.waitSynced(t, 2)
	var h kubestate.MarkerHistory
	h.Take(m)
	require.Equal(t, 1, h.Compare(marker()), "a newer marker than the one put back over")
}
