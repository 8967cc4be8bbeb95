package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// churner writes new versions of the churned slices, one service after the
// other, into a sink, while it is not paused. A failed write is retried
// with the same content until it succeeds, so that the last version
// written is known even when etcd fails a request that it applied. It
// stops after maxWrites writes, on a write failing for retryLimit, or when
// its context ends.
type churner struct {
	sink       sink
	pace       time.Duration
	maxWrites  int
	timeout    time.Duration
	retryLimit time.Duration

	paused atomic.Bool
	// writing is held for each write: pause waits for it.
	writing sync.Mutex

	mu      sync.Mutex
	version [churnServices]int
	last    map[int]*discoveryv1.EndpointSlice // by service; nil: deleted
	writes  int
	retries int
	lastAt  time.Time
	log     []written
	err     error
}

// written is one write of the churner: when, and the etcd revision it
// made (0: not known, the write went to the Kubernetes API).
type written struct {
	rev int64
	at  time.Time
}

// newChurner returns a paused churner writing into s, whose slices are at
// version 0.
func newChurner(s sink) *churner {
	c := &churner{sink: s, pace: 20 * time.Millisecond, maxWrites: 5000, timeout: time.Second,
		retryLimit: 60 * time.Second, last: make(map[int]*discoveryv1.EndpointSlice)}
	for k := range churnServices {
		c.last[k] = sliceVersion(k, 0)
	}
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
	prev := c.last[k]
	c.mu.Unlock()
	s := sliceVersion(k, v)
	deadline := time.Now().Add(c.retryLimit)
	retries := 0
	var rev int64
	for {
		wctx, cancel := context.WithTimeout(ctx, c.timeout)
		rev, err = c.sink.write(wctx, prev, s)
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
	c.last[k] = s
	c.writes++
	c.retries += retries
	c.lastAt = time.Now()
	c.log = append(c.log, written{rev: rev, at: c.lastAt})
	return false, nil
}

// pause stops the writes and waits for the one in progress.
func (c *churner) pause() {
	c.paused.Store(true)
	c.writing.Lock()
	//lint:ignore SA2001 the empty section waits for the write in progress
	c.writing.Unlock()
}

// resume lets the writes go on.
func (c *churner) resume() { c.paused.Store(false) }

// churnStats is what the churner did so far.
type churnStats struct {
	writes, retries int
	lastAt          time.Time
	last            map[int]*discoveryv1.EndpointSlice
	versions        [churnServices]int
	log             []written
	err             error
}

func (c *churner) stats() churnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return churnStats{writes: c.writes, retries: c.retries, lastAt: c.lastAt, last: maps.Clone(c.last),
		versions: c.version, log: slices.Clone(c.log), err: c.err}
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
