package kubestate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxTxnOps is the largest number of operations the Writer puts in one etcd
// transaction (etcd's default --max-txn-ops).
const MaxTxnOps = 128

// maxTxnBytes bounds the keys and values of one transaction, below etcd's
// default request limit of 1.5 MiB. A single larger operation (at most
// MaxValueSize plus its key) goes alone.
const maxTxnBytes = 1 << 20

// Op is one write: a put of Object, or a delete of Key when Object is nil.
// A put with From set also deletes From, in the same transaction.
type Op struct {
	Key    Key
	Object Object
	// From, when set, is the object's previous key: a pod that got or
	// changed its node.
	From *Key
}

// PutOp is the put of o under its key.
func PutOp(o Object) Op { return Op{Key: o.Key(), Object: o} }

// DeleteOp is the delete of k.
func DeleteOp(k Key) Op { return Op{Key: k} }

// MoveOp is the delete of from and the put of o under its key, in one
// transaction: readers never see the object under both keys or under none.
func MoveOp(from Key, o Object) Op { return Op{Key: o.Key(), Object: o, From: &from} }

// SyncStats counts what a Sync or PutChanged did.
type SyncStats struct {
	// Put counts keys written because they were missing or different.
	Put int
	// Unchanged counts keys whose stored bytes already were the desired ones.
	Unchanged int
	// Deleted counts stale keys removed.
	Deleted int
}

// Writer puts and deletes compact models in etcd, in batched transactions.
// It is what the reflector and `contivctl load` write through. A Writer is
// safe for concurrent use; Sync assumes no one else writes the resource
// while it runs.
type Writer struct {
	kv  clientv3.KV
	log *slog.Logger
}

// NewWriter returns a Writer over kv (a *clientv3.Client, or a namespaced
// KV). A nil log discards the writer's debug lines.
func NewWriter(kv clientv3.KV, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{kv: kv, log: log}
}

// Put stores o under its key.
func (w *Writer) Put(ctx context.Context, o Object) error {
	return w.Apply(ctx, []Op{PutOp(o)})
}

// Delete removes k; deleting an absent key is not an error.
func (w *Writer) Delete(ctx context.Context, k Key) error {
	return w.Apply(ctx, []Op{DeleteOp(k)})
}

// Apply writes ops in transactions of at most MaxTxnOps operations; the
// delete and the put of a MoveOp share one. Of several ops on one key the
// last wins. An invalid op (bad key, value too large) is left out with an
// ErrInvalid or ErrTooLarge error and the others are written; the first
// failed transaction stops the rest. Batches are not atomic together: after
// a failure, earlier batches stay written.
func (w *Writer) Apply(ctx context.Context, ops []Op) error {
	var errs []error
	raw := make([]rawOp, 0, len(ops))
	last := make(map[Key]int, len(ops))
	for i, op := range ops {
		last[op.Key] = i
	}
	for i, op := range ops {
		if last[op.Key] != i {
			continue
		}
		r, err := toRaw(op)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if op.From != nil && *op.From != op.Key {
			if err := checkKey(*op.From); err != nil {
				errs = append(errs, err)
				continue
			}
			raw = append(raw, rawOp{key: op.From.String(), del: true, withNext: true})
		}
		raw = append(raw, r)
	}
	if _, err := w.commit(ctx, raw); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Sync makes the stored objects of resource res equal desired (mark and
// sweep): it lists the resource's prefix, puts what is missing or differs,
// and deletes every other key under the prefix, unparsable ones included.
// Keys whose stored bytes already equal the encoding are not rewritten, so
// their mod revision stays. Invalid objects (another resource, a duplicate
// key, too large) are reported and left out; the rest is still synced.
func (w *Writer) Sync(ctx context.Context, res Resource, desired []Object) (SyncStats, error) {
	if _, err := New(res); err != nil {
		return SyncStats{}, fmt.Errorf("sync: %w", err)
	}
	return w.sync(ctx, res, desired, true)
}

// PutChanged puts the objects whose stored bytes differ from their encoding
// (or that are missing) and deletes nothing. Invalid objects are reported
// and left out.
func (w *Writer) PutChanged(ctx context.Context, objs []Object) (SyncStats, error) {
	var (
		total SyncStats
		errs  []error
	)
	byRes := make(map[Resource][]Object)
	for _, o := range objs {
		r := o.Key().Resource
		if _, err := New(r); err != nil {
			errs = append(errs, fmt.Errorf("put %s: %w", o.Key(), ErrInvalid))
			continue
		}
		byRes[r] = append(byRes[r], o)
	}
	for _, r := range Resources {
		if len(byRes[r]) == 0 {
			continue
		}
		st, err := w.sync(ctx, r, byRes[r], false)
		total.Put += st.Put
		total.Unchanged += st.Unchanged
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

func (w *Writer) sync(ctx context.Context, res Resource, desired []Object, prune bool) (SyncStats, error) {
	var (
		st   SyncStats
		errs []error
	)
	want := make(map[string][]byte, len(desired))
	order := make([]string, 0, len(desired))
	for _, o := range desired {
		k := o.Key()
		if k.Resource != res {
			errs = append(errs, fmt.Errorf("sync %s: %s is not a %s: %w", res, k, res, ErrInvalid))
			continue
		}
		r, err := toRaw(PutOp(o))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := want[r.key]; dup {
			errs = append(errs, fmt.Errorf("sync %s: duplicate %s: %w", res, k, ErrInvalid))
			continue
		}
		want[r.key] = r.val
		order = append(order, r.key)
	}
	stored := make(map[string][]byte)
	if _, err := listPrefix(ctx, w.kv, res.KeyPrefix(), 0, func(k string, v []byte) {
		if _, ok := want[k]; ok || prune {
			stored[k] = v
		}
	}); err != nil {
		return st, errors.Join(append(errs, fmt.Errorf("sync %s: %w", res, err))...)
	}
	var ops []rawOp
	for _, k := range order {
		if old, ok := stored[k]; ok && bytes.Equal(old, want[k]) {
			st.Unchanged++
			continue
		}
		ops = append(ops, rawOp{key: k, val: want[k]})
	}
	if prune {
		var stale []string
		for k := range stored {
			if _, ok := want[k]; !ok {
				stale = append(stale, k)
			}
		}
		slices.Sort(stale)
		for _, k := range stale {
			ops = append(ops, rawOp{key: k, del: true})
		}
	}
	if res == ResPod {
		// Pods written: the tree is in this layout.
		resp, err := w.kv.Get(ctx, LayoutKey)
		if err != nil {
			return st, errors.Join(append(errs, fmt.Errorf("sync %s: %w", res, err))...)
		}
		if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != LayoutVersion {
			ops = append(ops, rawOp{key: LayoutKey, val: []byte(LayoutVersion)})
		}
	}
	done, err := w.commit(ctx, ops)
	for _, op := range done {
		switch {
		case op.key == LayoutKey:
		case op.del:
			st.Deleted++
		default:
			st.Put++
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("sync %s: %w", res, err))
	}
	w.log.Debug("synced", "resource", string(res), "put", st.Put, "unchanged", st.Unchanged, "deleted", st.Deleted)
	return st, errors.Join(errs...)
}

// rawOp is one write on an etcd key.
type rawOp struct {
	key string
	val []byte
	del bool
	// withNext keeps the op in the transaction of the next one.
	withNext bool
}

func (o rawOp) size() int { return len(o.key) + len(o.val) }

// toRaw checks and encodes op.
func toRaw(op Op) (rawOp, error) {
	if err := checkKey(op.Key); err != nil {
		return rawOp{}, err
	}
	if op.Object == nil {
		return rawOp{key: op.Key.String(), del: true}, nil
	}
	if got := op.Object.Key(); got != op.Key {
		return rawOp{}, fmt.Errorf("put %s: object is %s: %w", op.Key, got, ErrInvalid)
	}
	b, err := Encode(op.Object)
	if err != nil {
		return rawOp{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(b) > MaxValueSize {
		return rawOp{}, fmt.Errorf("put %s: %d bytes: %w", op.Key, len(b), ErrTooLarge)
	}
	return rawOp{key: op.Key.String(), val: b}, nil
}

// checkKey tells whether k can be written: a known resource, a name and,
// for namespaced resources only, a namespace; for pods only, a node (empty
// for an unscheduled pod, never UnscheduledNode itself); no '/' in any.
func checkKey(k Key) error {
	if _, err := New(k.Resource); err != nil {
		return fmt.Errorf("key %+v: %w", k, ErrInvalid)
	}
	switch {
	case k.Name == "" || strings.Contains(k.Name, "/"):
		return fmt.Errorf("key %s: bad name %q: %w", k, k.Name, ErrInvalid)
	case k.Resource.Namespaced() && (k.Namespace == "" || strings.Contains(k.Namespace, "/")):
		return fmt.Errorf("key %s: bad namespace %q: %w", k, k.Namespace, ErrInvalid)
	case !k.Resource.Namespaced() && k.Namespace != "":
		return fmt.Errorf("key %s: %s is cluster-scoped, namespace %q: %w", k, k.Resource, k.Namespace, ErrInvalid)
	case k.Resource != ResPod && k.Node != "":
		return fmt.Errorf("key %s: only pods are keyed by node, node %q: %w", k, k.Node, ErrInvalid)
	case strings.Contains(k.Node, "/") || k.Node == UnscheduledNode:
		return fmt.Errorf("key %s: bad node %q: %w", k, k.Node, ErrInvalid)
	}
	return nil
}

// batches splits ops into transactions of at most MaxTxnOps operations and
// about maxTxnBytes bytes, never between an op marked withNext and the next.
func batches(ops []rawOp) [][]rawOp {
	var (
		out   [][]rawOp
		start int
		size  int
	)
	for i, op := range ops {
		if i > start && (i-start == MaxTxnOps || size+op.size() > maxTxnBytes) {
			cut := i
			if ops[i-1].withNext && i-1 > start {
				cut = i - 1
			}
			out = append(out, ops[start:cut])
			start, size = cut, 0
			for _, o := range ops[cut:i] {
				size += o.size()
			}
		}
		size += op.size()
	}
	if start < len(ops) {
		out = append(out, ops[start:])
	}
	return out
}

// commit writes ops batch by batch and returns the ops written.
func (w *Writer) commit(ctx context.Context, ops []rawOp) ([]rawOp, error) {
	written := 0
	for i, b := range batches(ops) {
		txn := make([]clientv3.Op, len(b))
		for j, op := range b {
			if op.del {
				txn[j] = clientv3.OpDelete(op.key)
			} else {
				txn[j] = clientv3.OpPut(op.key, string(op.val))
			}
		}
		if _, err := w.kv.Txn(ctx).Then(txn...).Commit(); err != nil {
			return ops[:written], fmt.Errorf("etcd txn %d (%d ops): %w", i+1, len(b), err)
		}
		written += len(b)
		for _, op := range b {
			if op.del {
				w.log.Debug("deleted", "key", op.key)
			} else {
				w.log.Debug("put", "key", op.key, "bytes", len(op.val))
			}
		}
	}
	return ops[:written], nil
}
