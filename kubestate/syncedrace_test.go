package kubestate

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
)

// racingKV is a real etcd KV that runs race once, right after the first
// transaction that reads the sync marker and writes nothing: another
// writer's whole marking then falls between this writer's read and its
// write, deterministically.
type racingKV struct {
	clientv3.KV
	race func()
	once sync.Once
}

func (kv *racingKV) Txn(ctx context.Context) clientv3.Txn {
	return &racingTxn{Txn: kv.KV.Txn(ctx), kv: kv}
}

type racingTxn struct {
	clientv3.Txn
	kv            *racingKV
	reads, writes bool
}

func (t *racingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *racingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		switch {
		case !op.IsGet():
			t.writes = true
		case string(op.KeyBytes()) == SyncedKey:
			t.reads = true
		}
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *racingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *racingTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if t.reads && !t.writes {
		t.kv.once.Do(t.kv.race)
	}
	return resp, err
}

// storedMarker reads SyncedKey.
func storedMarker(t *testing.T, kv clientv3.KV) SyncMarker {
	t.Helper()
	resp, err := kv.Get(context.Background(), SyncedKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read %s: %v %v", SyncedKey, resp, err)
	}
	m, err := ParseSyncMarker(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMarkNeverGoesBack (issue 37, defect 4): two writers, the reflector
// and `contivctl load`, mark complete outputs at once; the one that read
// the markers first writes last. The marker stored in the end is never
// older than the other's, to a reader (an agent) that took that one in,
// whichever writer's clock is behind.
func TestMarkNeverGoesBack(t *testing.T) {
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	for _, tc := range []struct {
		name string
		// first reads first and writes last; second marks between.
		firstIsReflector bool
		firstClock       func() time.Time
	}{
		{"the reflector reads first, its clock behind", true, behind},
		{"contivctl load reads first, its clock behind", false, behind},
		{"the reflector reads first, its clock right", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := etcdtest.Start(t).Client()
			ctx := context.Background()
			reflector := &MarkerWriter{Identity: "contiv-ksr"}
			load := &MarkerWriter{Identity: "contivctl load"}
			first, second := load, reflector
			if tc.firstIsReflector {
				first, second = reflector, load
			}
			first.Now = tc.firstClock
			// The reflector swept once already: the agent took that in.
			var agent MarkerHistory
			m0, err := reflector.Mark(ctx, cli)
			if err != nil {
				t.Fatal(err)
			}
			agent.Take(m0)

			var between SyncMarker
			kv := &racingKV{KV: cli, race: func() {
				var err error
				if between, err = second.Mark(ctx, cli); err != nil {
					t.Error(err)
				}
			}}
			last, err := first.Mark(ctx, kv)
			if err != nil {
				t.Fatal(err)
			}
			if between.Identity == "" {
				t.Fatal("the second writer did not mark in between")
			}
			// The agent takes the markers in as it watches them.
			if agent.Compare(between) < 0 {
				t.Fatalf("the marker written in between (%v) is older than the first (%v)", between, m0)
			}
			agent.Take(between)
			stored := storedMarker(t, cli)
			if agent.Compare(stored) < 0 {
				t.Errorf("stored %v by %s is older than %v by %s, written before it: the marker went back",
					stored, stored.Identity, between, between.Identity)
			}
			if stored != last {
				t.Errorf("stored %v, the last writer returned %v", stored, last)
			}
			// The writer that wrote last does not take its own marker
			// for an older one (its probe would sweep for nothing).
			if first.Stale(stored) || second.Stale(stored) {
				t.Errorf("a writer takes the stored marker %v for an older one: %v %v", stored, first.Stale(stored), second.Stale(stored))
			}
		})
	}
}
