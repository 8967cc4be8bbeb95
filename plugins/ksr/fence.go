package ksr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

// LeaderKey is held by the replica whose writes etcd takes. A term creates
// it (only when it is absent) on an etcd lease of Params.LeaderTTL that it
// keeps alive, and revokes the lease when it ends. Every write of the term
// is an etcd transaction that first compares the key's mod revision with
// the one the term created: once the key is gone (revoked, expired, etcd
// wiped) or another replica's, a late batch of a deposed leader is refused.
// Value: JSON {identity, since}.
const LeaderKey = kubestate.Prefix + "ksr/leader"

// ErrDeposed is the error of a write refused because this replica no longer
// holds LeaderKey; the term that made it ends at once.
var ErrDeposed = errors.New("deposed: the etcd leader key is no longer this replica's")

// Etcd is what the reflector needs of etcd: keys and leases (a
// *clientv3.Client).
type Etcd interface {
	clientv3.KV
	clientv3.Lease
}

// leaderRecord is the value of LeaderKey.
type leaderRecord struct {
	Identity string    `json:"identity,omitempty"`
	Since    time.Time `json:"since"`
}

// holderOf names the holder recorded in a LeaderKey value.
func holderOf(kvs []*mvccpb.KeyValue) string {
	if len(kvs) == 0 {
		return "nobody"
	}
	var rec leaderRecord
	if json.Unmarshal(kvs[0].Value, &rec) != nil || rec.Identity == "" {
		return fmt.Sprintf("another replica (revision %d)", kvs[0].ModRevision)
	}
	return fmt.Sprintf("%s (revision %d)", rec.Identity, kvs[0].ModRevision)
}

// fence is one term's hold on LeaderKey.
type fence struct {
	r     *Reflector
	lease clientv3.LeaseID
	// rev is the mod revision LeaderKey got when this term created it.
	rev int64

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// acquire creates LeaderKey for this replica, waiting (with backoff) while
// another holds it or etcd does not answer. It returns nil when ctx ends.
func (r *Reflector) acquire(ctx context.Context) *fence {
	val, err := json.Marshal(leaderRecord{Identity: r.p.Identity, Since: time.Now().UTC()})
	if err != nil {
		r.log.Error("etcd leader key", "err", err)
		return nil
	}
	ttl := int64((r.p.LeaderTTL + time.Second - 1) / time.Second)
	waitingFor := ""
	for fails := 1; ; fails++ {
		f, holder, err := r.tryAcquire(ctx, ttl, string(val))
		switch {
		case f != nil:
			r.log.Info("holding the etcd leader key", "key", LeaderKey, "revision", f.rev)
			return f
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.log.Log(ctx, levelOf(fails), "cannot take the etcd leader key; retrying", "attempt", fails, "err", err)
		case holder == ownStaleKey:
			r.log.Info("deleted this replica's own etcd leader key of an earlier term", "key", LeaderKey)
			fails = 0 // take it at once
			continue
		case holder != waitingFor:
			waitingFor = holder
			r.log.Info("waiting for the etcd leader key to be released or to expire", "key", LeaderKey, "holder", holder)
		}
		if !backoff.Sleep(ctx, pause(fails, r.p.MaxBackoff)) {
			return nil
		}
	}
}

// tryAcquire tries once: a new lease, and LeaderKey created on it if absent.
// Without the key it returns who holds it.
func (r *Reflector) tryAcquire(ctx context.Context, ttl int64, val string) (*fence, string, error) {
	ectx, cancel := context.WithTimeout(ctx, r.p.EtcdTimeout)
	defer cancel()
	l, err := r.p.Etcd.Grant(ectx, ttl)
	if err != nil {
		return nil, "", fmt.Errorf("lease: %w", err)
	}
	resp, err := r.p.Etcd.Txn(ectx).
		If(clientv3.Compare(clientv3.CreateRevision(LeaderKey), "=", 0)).
		Then(clientv3.OpPut(LeaderKey, val, clientv3.WithLease(l.ID))).
		Else(clientv3.OpGet(LeaderKey)).
		Commit()
	if err == nil && resp.Succeeded {
		return &fence{r: r, lease: l.ID, rev: resp.Header.Revision}, "", nil
	}
	_ = r.revoke(l.ID)
	if err != nil {
		return nil, "", fmt.Errorf("create %s: %w", LeaderKey, err)
	}
	kvs := rangeKVs(resp, 0)
	if r.ownKey(kvs) {
		// This replica's key of an earlier term, whose lease it no longer
		// keeps alive (etcd was away longer than the TTL, or the release
		// failed): nobody writes under it, and etcd, restarted, may keep it
		// for a whole TTL more. Delete it unless it changed meanwhile.
		del, err := r.p.Etcd.Txn(ectx).
			If(clientv3.Compare(clientv3.ModRevision(LeaderKey), "=", kvs[0].ModRevision)).
			Then(clientv3.OpDelete(LeaderKey)).
			Commit()
		if err != nil {
			return nil, "", fmt.Errorf("delete this replica's stale %s: %w", LeaderKey, err)
		}
		if del.Succeeded {
			return nil, ownStaleKey, nil
		}
	}
	return nil, holderOf(kvs), nil
}

// ownStaleKey is tryAcquire's holder when it deleted this replica's own
// key of an earlier term: the next try may take the key at once.
const ownStaleKey = "this replica's earlier term"

// ownKey tells whether kvs (LeaderKey) names this replica. ASSUMPTION:
// identities are unique among the replicas (the pod name), and acquire
// runs only once this replica's previous term stopped writing.
func (r *Reflector) ownKey(kvs []*mvccpb.KeyValue) bool {
	if len(kvs) == 0 {
		return false
	}
	var rec leaderRecord
	return json.Unmarshal(kvs[0].Value, &rec) == nil && rec.Identity != "" && rec.Identity == r.p.Identity
}

// keepAlive keeps the fence's lease alive until release, and calls lost
// when etcd ends it first (expired or revoked: the key is gone).
func (f *fence) keepAlive(ctx context.Context, lost func()) error {
	ctx, f.stop = context.WithCancel(ctx)
	ch, err := f.r.p.Etcd.KeepAlive(ctx, f.lease)
	if err != nil {
		f.stop()
		return fmt.Errorf("keep the etcd leader lease alive: %w", err)
	}
	f.wg.Go(func() {
		for range ch {
		}
		if ctx.Err() == nil {
			lost()
		}
	})
	return nil
}

// release stops the keepalive and revokes the lease, deleting LeaderKey
// unless it has expired already. It logs what happened: a revoke that
// failed (etcd down) leaves the key to expire after Params.LeaderTTL.
func (f *fence) release() {
	if f.stop != nil {
		f.stop()
	}
	f.wg.Wait()
	err := f.r.revoke(f.lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		f.r.log.Info("the etcd leader key had expired already", "key", LeaderKey, "revision", f.rev)
		return
	case err != nil:
		f.r.log.Warn("could not release the etcd leader key: the next leader waits until it expires",
			"key", LeaderKey, "revision", f.rev, "expiresWithin", f.r.p.LeaderTTL, "err", err)
		return
	}
	f.r.log.Info("released the etcd leader key", "key", LeaderKey, "revision", f.rev)
}

// revokeTimeout bounds a revoke: a lease that cannot be revoked expires
// anyway, and a term's end must not wait for an etcd that does not answer.
const revokeTimeout = 2 * time.Second

// revoke revokes a lease, best effort (it expires anyway), within
// revokeTimeout (or EtcdTimeout if shorter).
func (r *Reflector) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), min(revokeTimeout, r.p.EtcdTimeout))
	defer cancel()
	if _, err := r.p.Etcd.Revoke(ctx, id); err != nil {
		r.log.Debug("revoke etcd lease", "lease", int64(id), "err", err)
		return err
	}
	return nil
}

// held is the comparison every write of the term carries.
func (f *fence) held() clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(LeaderKey), "=", f.rev)
}

// refused is the error of a transaction refused by the fence; kvs is what
// LeaderKey holds now.
func (f *fence) refused(kvs []*mvccpb.KeyValue) error {
	f.r.m.refused.Inc()
	return fmt.Errorf("%w: %s holds %s, this term created it at revision %d", ErrDeposed, holderOf(kvs), LeaderKey, f.rev)
}

// check reads LeaderKey: ErrDeposed unless it is still this term's.
func (f *fence) check(ctx context.Context) error {
	resp, err := f.r.p.Etcd.Get(ctx, LeaderKey)
	if err != nil {
		return fmt.Errorf("etcd probe: %w", err)
	}
	if len(resp.Kvs) == 1 && resp.Kvs[0].ModRevision == f.rev {
		return nil
	}
	return fmt.Errorf("%w: %s holds %s, this term created it at revision %d", ErrDeposed, holderOf(resp.Kvs), LeaderKey, f.rev)
}

// fencedKV is the term's view of etcd: reads go straight to etcd; every
// write (Put, Delete, Txn, a write Do) is a transaction conditional on the
// fence, refused with ErrDeposed once the fence no longer holds.
type fencedKV struct {
	Etcd
	f *fence
}

// Put implements clientv3.KV.
func (kv fencedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	resp, err := kv.Txn(ctx).Then(clientv3.OpPut(key, val, opts...)).Commit()
	if err != nil {
		return nil, err
	}
	return (*clientv3.PutResponse)(resp.Responses[0].GetResponsePut()), nil
}

// Delete implements clientv3.KV.
func (kv fencedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	resp, err := kv.Txn(ctx).Then(clientv3.OpDelete(key, opts...)).Commit()
	if err != nil {
		return nil, err
	}
	return (*clientv3.DeleteResponse)(resp.Responses[0].GetResponseDeleteRange()), nil
}

// Do implements clientv3.KV.
func (kv fencedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	switch {
	case op.IsGet():
		return kv.Etcd.Do(ctx, op)
	case op.IsPut():
		resp, err := kv.Txn(ctx).Then(op).Commit()
		if err != nil {
			return clientv3.OpResponse{}, err
		}
		return (*clientv3.PutResponse)(resp.Responses[0].GetResponsePut()).OpResponse(), nil
	case op.IsDelete():
		resp, err := kv.Txn(ctx).Then(op).Commit()
		if err != nil {
			return clientv3.OpResponse{}, err
		}
		return (*clientv3.DeleteResponse)(resp.Responses[0].GetResponseDeleteRange()).OpResponse(), nil
	}
	return clientv3.OpResponse{}, fmt.Errorf("ksr: fenced etcd: unsupported operation")
}

// Txn implements clientv3.KV.
func (kv fencedKV) Txn(ctx context.Context) clientv3.Txn { return &fencedTxn{kv: kv, ctx: ctx} }

// fencedTxn is a transaction run only while the fence holds.
type fencedTxn struct {
	kv        fencedKV
	ctx       context.Context
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *fencedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *fencedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = append(t.then, ops...)
	return t
}

func (t *fencedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.els = append(t.els, ops...)
	return t
}

// Commit runs the transaction behind the fence's comparison. Without Else
// ops the caller's comparisons join the fence's in one flat transaction
// (as many ops as the caller's, so a batch of kubestate.MaxTxnOps still
// fits etcd's limit), and a failure reads LeaderKey to tell which failed;
// with Else ops the caller's transaction is nested in the fenced one, so
// that no Else write escapes the fence.
func (t *fencedTxn) Commit() (*clientv3.TxnResponse, error) {
	f := t.kv.f
	get := clientv3.OpGet(LeaderKey)
	if len(t.els) == 0 {
		resp, err := t.kv.Etcd.Txn(t.ctx).If(append([]clientv3.Cmp{f.held()}, t.cmps...)...).Then(t.then...).Else(get).Commit()
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return resp, nil
		}
		if kvs := rangeKVs(resp, 0); len(kvs) != 1 || kvs[0].ModRevision != f.rev {
			return nil, f.refused(kvs)
		}
		resp.Responses = nil // the caller's comparison failed; it had no Else
		return resp, nil
	}
	resp, err := t.kv.Etcd.Txn(t.ctx).If(f.held()).Then(clientv3.OpTxn(t.cmps, t.then, t.els)).Else(get).Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, f.refused(rangeKVs(resp, 0))
	}
	inner := (*clientv3.TxnResponse)(resp.Responses[0].GetResponseTxn())
	inner.Header = resp.Header
	return inner, nil
}

// rangeKVs is the key-values of the i-th response of a transaction, if it
// is a range.
func rangeKVs(resp *clientv3.TxnResponse, i int) []*mvccpb.KeyValue {
	if i >= len(resp.Responses) {
		return nil
	}
	if r := resp.Responses[i].GetResponseRange(); r != nil {
		return r.Kvs
	}
	return nil
}

// levelOf logs the first of a run of failures as a warning, the others at
// debug level.
func levelOf(n int) slog.Level {
	if n == 1 {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}
