package ksr

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// stallingEtcd holds the first transaction committed after arm until
// resume, then commits it even if its context has ended meanwhile: the
// batch of a leader that was paused (or cut off) between building and
// committing it, landing late.
type stallingEtcd struct {
	Etcd
	armed   atomic.Bool
	stalled chan *stalledTxn
	resume  chan struct{}
}

func newStallingEtcd(e Etcd) *stallingEtcd {
	return &stallingEtcd{Etcd: e, stalled: make(chan *stalledTxn, 1), resume: make(chan struct{})}
}

func (s *stallingEtcd) Txn(ctx context.Context) clientv3.Txn {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Etcd.Txn(ctx)
	}
	return &stalledTxn{s: s, ctx: ctx, done: make(chan struct{})}
}

type stalledTxn struct {
	s         *stallingEtcd
	ctx       context.Context
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
	// resp and err are the real commit's, set when done is closed.
	resp *clientv3.TxnResponse
	err  error
	done chan struct{}
}

func (t *stalledTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.cmps = append(t.cmps, cs...); return t }
func (t *stalledTxn) Then(o ...clientv3.Op) clientv3.Txn { t.then = append(t.then, o...); return t }
func (t *stalledTxn) Else(o ...clientv3.Op) clientv3.Txn { t.els = append(t.els, o...); return t }

func (t *stalledTxn) Commit() (*clientv3.TxnResponse, error) {
	t.s.stalled <- t
	<-t.s.resume
	t.resp, t.err = t.s.Etcd.Txn(context.WithoutCancel(t.ctx)).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
	close(t.done)
	return t.resp, t.err
}

// leaderKeyHolder is the identity in LeaderKey, "" when absent.
func (f *fixture) leaderKeyHolder() (string, clientv3.LeaseID) {
	f.t.Helper()
	resp, err := f.cli.Get(context.Background(), LeaderKey)
	require.NoError(f.t, err)
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	var rec leaderRecord
	require.NoError(f.t, json.Unmarshal(resp.Kvs[0].Value, &rec))
	return rec.Identity, clientv3.LeaseID(resp.Kvs[0].Lease)
}

// TestDeposedLeadersLateBatchIsRefused: the old leader's batch, built while
// it led and committed after another replica took over and wrote, is
// refused by etcd; etcd holds only the new leader's state.
func TestDeposedLeadersLateBatchIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start starts the first replica over e; depose takes its
		// leadership away while its batch is stalled; second starts the
		// other replica.
		start  func(f *fixture, e Etcd) *running
		depose func(t *testing.T, f *fixture, a *running)
		second func(f *fixture) *running
	}{{
		name: "etcd lease revoked",
		start: func(f *fixture, e Etcd) *running {
			return f.start(Params{Identity: "a", Etcd: e, LeaderTTL: 2 * time.Second})
		},
		depose: func(t *testing.T, f *fixture, _ *running) {
			holder, lease := f.leaderKeyHolder()
			require.Equal(t, "a", holder)
			_, err := f.cli.Revoke(context.Background(), lease)
			require.NoError(t, err)
		},
		second: func(f *fixture) *running { return f.start(Params{Identity: "b", LeaderTTL: 2 * time.Second}) },
	}, {
		// The leader is cut off from the Kubernetes API and stuck in its
		// commit: it loses the Lease; its etcd lease, no longer kept
		// alive by an ended term, expires; the other replica takes both.
		name: "Kubernetes Lease handed over",
		start: func(f *fixture, e Etcd) *running {
			return f.start(Params{Identity: "a", Etcd: e, LeaderTTL: 2 * time.Second, Election: testElection(),
				Kube: partitionable{Interface: f.kube, cut: new(atomic.Bool)}})
		},
		depose: func(t *testing.T, _ *fixture, a *running) {
			a.r.p.Kube.(partitionable).cut.Store(true)
		},
		second: func(f *fixture) *running {
			return f.start(Params{Identity: "b", LeaderTTL: 2 * time.Second, Election: testElection()})
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, namespace("shop", nil), service("shop", "a", "10.96.0.1", 80))
			stall := newStallingEtcd(f.cli)
			a := tc.start(f, stall)
			a.waitSynced(t, 1)
			f.waitEqual()

			// A builds a batch putting a new service and stalls before
			// committing it; the service is deleted again meanwhile.
			stall.armed.Store(true)
			ghost := service("shop", "ghost", "10.96.0.9", 80)
			f.create(ghost)
			var txn *stalledTxn
			select {
			case txn = <-stall.stalled:
			case <-time.After(30 * time.Second):
				t.Fatal("no batch stalled")
			}
			require.Len(t, txn.then, 1)
			require.Equal(t, keyOf(t, ghost).String(), string(txn.then[0].KeyBytes()))
			f.remove(ghost)

			tc.depose(t, f, a)
			b := tc.second(f)
			b.waitSynced(t, 1)
			f.waitEqual()
			holder, _ := f.leaderKeyHolder()
			require.Equal(t, "b", holder)

			// A's batch lands now: refused.
			close(stall.resume)
			<-txn.done
			require.NoError(t, txn.err)
			require.Zero(t, f.modRev(keyOf(t, ghost)), "etcd holds the deposed leader's write")
			require.False(t, txn.resp.Succeeded, "the deposed leader's batch was applied")
			eventually(t, func() bool { return testutil.ToFloat64(a.r.m.refused) >= 1 }, "refusal counted")
			eventually(t, func() bool { return !a.r.Status().Leader }, "the old leader stops")
			require.NotEmpty(t, f.logs.lines("no longer the leader in etcd"))
			f.waitEqual()
			holder, _ = f.leaderKeyHolder()
			require.Equal(t, "b", holder)
			require.True(t, b.r.Status().Leader)
		})
	}
}

// TestLeaderKeyIsReleasedAndTakenOver: a stopped reflector revokes its
// lease; the next one takes the key at once and writes.
func TestLeaderKeyIsReleasedAndTakenOver(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	a := f.start(Params{Identity: "a"})
	a.waitSynced(t, 1)
	holder, _ := f.leaderKeyHolder()
	require.Equal(t, "a", holder)
	b := f.start(Params{Identity: "b"})
	eventually(t, func() bool { return len(f.logs.lines("waiting for the etcd leader key", "holder=\"a ")) > 0 }, "b waits for a")
	require.False(t, b.r.Status().Leader)
	a.stop()
	b.waitSynced(t, 1)
	holder, _ = f.leaderKeyHolder()
	require.Equal(t, "b", holder)
	f.create(service("shop", "b", "10.96.0.2", 80))
	f.waitEqual()
}

// TestFencedTxnKeepsCallersComparisons: a caller's failing comparison is
// not taken for a lost fence, with or without Else ops.
func TestFencedTxnKeepsCallersComparisons(t *testing.T) {
	f := newFixture(t)
	r, err := New(Params{Kube: f.kube, Etcd: f.cli, Identity: "a"})
	require.NoError(t, err)
	fc := r.acquire(context.Background())
	require.NotNil(t, fc)
	defer fc.release()
	kv := fencedKV{Etcd: f.cli, f: fc}
	ctx := context.Background()
	absent := clientv3.Compare(clientv3.CreateRevision("/t/x"), "=", 0)
	resp, err := kv.Txn(ctx).If(absent).Then(clientv3.OpPut("/t/x", "1")).Commit()
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	resp, err = kv.Txn(ctx).If(absent).Then(clientv3.OpPut("/t/x", "2")).Commit()
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	resp, err = kv.Txn(ctx).If(absent).Then(clientv3.OpPut("/t/x", "3")).Else(clientv3.OpPut("/t/y", "4")).Commit()
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	require.Len(t, resp.Responses, 1)
	require.NotNil(t, resp.Responses[0].GetResponsePut())
	_, err = kv.Put(ctx, "/t/z", "5")
	require.NoError(t, err)
	got, err := f.cli.Get(ctx, "/t/", clientv3.WithPrefix())
	require.NoError(t, err)
	vals := map[string]string{}
	for _, e := range got.Kvs {
		vals[string(e.Key)] = string(e.Value)
	}
	require.Equal(t, map[string]string{"/t/x": "1", "/t/y": "4", "/t/z": "5"}, vals)

	// Once the key is gone, every kind of write is refused.
	_, err = f.cli.Delete(ctx, LeaderKey)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "/t/z", "6")
	require.ErrorIs(t, err, ErrDeposed)
	_, err = kv.Delete(ctx, "/t/x")
	require.ErrorIs(t, err, ErrDeposed)
	_, err = kv.Txn(ctx).If(absent).Then(clientv3.OpPut("/t/x", "7")).Else(clientv3.OpPut("/t/y", "8")).Commit()
	require.ErrorIs(t, err, ErrDeposed)
	_, err = kv.Do(ctx, clientv3.OpPut("/t/z", "9"))
	require.ErrorIs(t, err, ErrDeposed)
	got, err = f.cli.Get(ctx, "/t/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, got.Kvs, 3)
	require.Equal(t, 4.0, testutil.ToFloat64(r.m.refused))
}

// TestReleaseThatFailsIsNotLoggedAsDone: a term ending while etcd is down
// cannot revoke its lease; it says so (the key expires) instead of
// claiming a release.
func TestReleaseThatFailsIsNotLoggedAsDone(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	a := f.start(Params{Identity: "a", EtcdTimeout: time.Second})
	a.waitSynced(t, 1)
	f.etcd.Stop()
	a.stop()
	require.Empty(t, f.logs.lines("released the etcd leader key"), "a failed revoke was logged as a release")
	require.Len(t, f.logs.lines("could not release the etcd leader key"), 1)
}

// TestOwnStaleLeaderKeyIsTakenAtOnce: LeaderKey names this replica but on a
// lease nobody keeps alive (its earlier term lost etcd for longer than the
// TTL, and a restarted etcd keeps leases for a whole TTL more): the replica
// deletes it and leads at once instead of waiting for it to expire. Another
// replica's key is still waited for.
func TestOwnStaleLeaderKeyIsTakenAtOnce(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	stale := func(identity string) {
		l, err := f.cli.Grant(context.Background(), 3600)
		require.NoError(t, err)
		val, err := json.Marshal(leaderRecord{Identity: identity, Since: time.Now().UTC()})
		require.NoError(t, err)
		_, err = f.cli.Put(context.Background(), LeaderKey, string(val), clientv3.WithLease(l.ID))
		require.NoError(t, err)
	}
	stale("a")
	a := f.start(Params{Identity: "a"})
	a.waitSynced(t, 1)
	holder, _ := f.leaderKeyHolder()
	require.Equal(t, "a", holder)
	require.NotEmpty(t, f.logs.lines("deleted this replica's own etcd leader key"))
	a.stop()

	stale("c")
	b := f.start(Params{Identity: "b"})
	eventually(t, func() bool { return len(f.logs.lines("waiting for the etcd leader key", "holder=\"c ")) > 0 }, "b waits for c")
	require.False(t, b.r.Status().Leader)
	holder, _ = f.leaderKeyHolder()
	require.Equal(t, "c", holder)
}

// revokeBound is a lease client whose Revoke notes how long its context
// lets it wait, and fails as an etcd that does not answer would.
type revokeBound struct {
	clientv3.Lease
	mu     sync.Mutex
	allows []time.Duration
}

func (l *revokeBound) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	dl, ok := ctx.Deadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok {
		l.allows = append(l.allows, -1)
	} else {
		l.allows = append(l.allows, time.Until(dl))
	}
	return nil, context.DeadlineExceeded
}

// TestReleaseDoesNotWaitTheEtcdTimeout: a term's end gives its revoke at
// most revokeTimeout, not the (long) EtcdTimeout: the lease expires anyway.
func TestReleaseDoesNotWaitTheEtcdTimeout(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	lease := &revokeBound{Lease: f.cli}
	a := f.startKV(Params{Identity: "a", EtcdTimeout: time.Minute}, &watchedKV{KV: f.cli, Lease: lease})
	a.waitSynced(t, 1)
	a.stop()
	lease.mu.Lock()
	defer lease.mu.Unlock()
	require.NotEmpty(t, lease.allows)
	for _, d := range lease.allows {
		require.True(t, d > 0 && d <= revokeTimeout, "a revoke may wait %v, want at most %v", d, revokeTimeout)
	}
	require.Len(t, f.logs.lines("could not release the etcd leader key"), 1)
}
