package chaos

import (
	"context"

	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// The churned services: chaos/churn-K, ClusterIP 10.96.200.K+1 port 80,
// each with one EndpointSlice whose every version is distinct (see
// sliceVersion).
const (
	churnNamespace = "chaos"
	churnServices  = 6
)

// churnObjects are the namespace and services the churned slices belong to.
func churnObjects() []kubestate.Object {
	objs := []kubestate.Object{&kubestate.Namespace{Name: churnNamespace}}
	for k := range churnServices {
		objs = append(objs, &kubestate.Service{
			Namespace:  churnNamespace,
			Name:       fmt.Sprintf("churn-%d", k),
			Type:       "ClusterIP",
			ClusterIPs: []string{churnVIP(k)},
			Ports:      []kubestate.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "http"}},
			Created:    time.Date(2025, 1, 1, 0, 0, k, 0, time.UTC),
		})
	}
	return objs
}

func churnVIP(k int) string { return fmt.Sprintf("10.96.200.%d", k+1) }

func sliceKey(k int) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: churnNamespace, Name: fmt.Sprintf("churn-%d-x", k)}
}

// sliceVersion is version v of service k's slice: nil (deleted) for every
// seventh version, else one to three ready endpoints on different nodes,
// all on target port 10000+v, so that each version renders differently.
func sliceVersion(k, v int) *kubestate.EndpointSlice {
	if v%7 == 6 {
		return nil
	}
	key := sliceKey(k)
	s := &kubestate.EndpointSlice{
		Namespace:   key.Namespace,
		Name:        key.Name,
		ServiceName: fmt.Sprintf("churn-%d", k),
		AddressType: "IPv4",
		Ports:       []kubestate.EndpointPort{{Name: "http", Protocol: "TCP", Port: int32(10000 + v)}},
	}
	for j := range 1 + v%3 {
		node := (k+v+j)%3 + 1
		s.Endpoints = append(s.Endpoints, kubestate.Endpoint{
			Addresses: []string{fmt.Sprintf("10.1.%d.%d", node, 100+(v*3+j)%100)},
			Ready:     true,
			Serving:   true,
			NodeName:  fmt.Sprintf("node-%d", node),
		})
	}
	return s
}

// churner writes new versions of the churned slices, one service after the
// other, through kubestate.Writer, while it is not paused. A failed write
// is retried with the same content until it succeeds, so that the last
// version written is known even when etcd fails a request that it applied.
// It stops after maxWrites writes, on a write failing for retryLimit, or
// when its context ends.
type churner struct {
	kv         *revKV
	w          *kubestate.Writer
	pace       time.Duration
	maxWrites  int
	timeout    time.Duration
	retryLimit time.Duration

	paused atomic.Bool
	// writing is held for each write: pause waits for it.
	writing sync.Mutex

	mu      sync.Mutex
	version [churnServices]int
	last    map[kubestate.Key]*kubestate.EndpointSlice // nil: deleted
	writes  int
	retries int
	lastAt  time.Time
	log     []written
	err     error
}

// written is one write of the churner: the etcd revision it made, when.
type written struct {
	rev int64
	at  time.Time
}

func newChurner(kv clientv3.KV) *churner {
	rkv := &revKV{KV: kv}
	c := &churner{kv: rkv, w: kubestate.NewWriter(rkv, nil), pace: 20 * time.Millisecond, maxWrites: 5000, timeout: time.Second,
		retryLimit: 60 * time.Second, last: make(map[kubestate.Key]*kubestate.EndpointSlice)}
	c.paused.Store(true)
	return c
}

// run writes until ctx ends or the churner is done (see churner).
func (c *churner) run(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		if c.paused.Load() {
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		c.writing.Lock()
		done, err := c.step(ctx, n%churnServices)
		c.writing.Unlock()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		if done {
			return
		}
		sleep(ctx, c.pace)
	}
}

// step writes service k's next version; done when maxWrites is reached.
func (c *churner) step(ctx context.Context, k int) (done bool, err error) {
	c.mu.Lock()
	if c.writes >= c.maxWrites {
		c.mu.Unlock()
		return true, nil
	}
	v := c.version[k] + 1
	c.mu.Unlock()
	s := sliceVersion(k, v)
	op := kubestate.DeleteOp(sliceKey(k))
	if s != nil {
		op = kubestate.PutOp(s)
	}
	deadline := time.Now().Add(c.retryLimit)
	retries := 0
	for {
		wctx, cancel := context.WithTimeout(ctx, c.timeout)
		err = c.w.Apply(wctx, []kubestate.Op{op})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return true, nil // stopped: the write may or may not be in etcd
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("churn: writing %s version %d failed for %v: %w", sliceKey(k), v, c.retryLimit, err)
		}
		retries++
		sleep(ctx, 50*time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version[k] = v
	c.last[sliceKey(k)] = s
	c.writes++
	c.retries += retries
	c.lastAt = time.Now()
	c.log = append(c.log, written{rev: c.kv.last.Load(), at: c.lastAt})
	return false, nil
}

// pause stops the writes and waits for the one in progress.
func (c *churner) pause() {
	c.paused.Store(true)
	c.writing.Lock()
	c.writing.Unlock() //nolint:staticcheck // waits for the write in progress
}

// resume lets the writes go on.
func (c *churner) resume() { c.paused.Store(false) }

// churnStats is what the churner did so far.
type churnStats struct {
	writes, retries int
	lastAt          time.Time
	last            map[kubestate.Key]*kubestate.EndpointSlice
	versions        [churnServices]int
	log             []written
	err             error
}

func (c *churner) stats() churnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return churnStats{writes: c.writes, retries: c.retries, lastAt: c.lastAt, last: maps.Clone(c.last), versions: c.version, log: slices.Clone(c.log), err: c.err}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// revKV notes the revision of the last transaction through it (the
// churner's writes: one at a time).
type revKV struct {
	clientv3.KV
	last atomic.Int64
}

func (k *revKV) Txn(ctx context.Context) clientv3.Txn { return &revTxn{Txn: k.KV.Txn(ctx), kv: k} }

type revTxn struct {
	clientv3.Txn
	kv *revKV
}

func (t *revTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *revTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *revTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *revTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && resp.Header != nil {
		t.kv.last.Store(resp.Header.Revision)
	}
	return resp, err
}
