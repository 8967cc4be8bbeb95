package noderegistry

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/internal/etcdtest"
)

// guard bounds a wait that only a bug makes long.
const guard = 10 * time.Second

// TestSameFreeIDSameRevisionOneWins forces two joiners past the queue onto
// the same free ID, both deciding on a view read at the same etcd revision:
// the claim transaction's comparisons must let exactly one win and send the
// other, on its fresh view, to the next free ID.
func TestSameFreeIDSameRevisionOneWins(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	type decision struct {
		id  uint32
		rev int64
	}
	var (
		mu        sync.Mutex
		decisions = map[string][]decision{}
		arrived   = make(chan string, 2)
		release   = map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	)
	mk := func(name string) *claimer {
		return &claimer{
			cli: cli, name: name, queueTTL: time.Second, attemptTimeout: 5 * time.Second,
			maxBackoff: 10 * time.Millisecond, log: testLogger(t),
			hooks: claimHooks{noQueue: true, beforeCommit: func(id uint32, rev int64) {
				mu.Lock()
				decisions[name] = append(decisions[name], decision{id, rev})
				first := len(decisions[name]) == 1
				mu.Unlock()
				if first { // hold the first transaction until the test lets it go
					arrived <- name
					<-release[name]
				}
			}},
		}
	}
	type result struct {
		id  uint32
		err error
	}
	results := map[string]chan result{"a": make(chan result, 1), "b": make(chan result, 1)}
	for _, name := range []string{"a", "b"} {
		c := mk(name)
		go func() {
			id, err := c.run(t.Context())
			results[name] <- result{id, err}
		}()
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(guard):
			t.Fatal("the claimants never reached their transactions")
		}
	}
	mu.Lock()
	da, db := decisions["a"][0], decisions["b"][0]
	mu.Unlock()
	if da != db || da.id != 1 {
		t.Fatalf("decisions a %+v b %+v: want both on ID 1 at one revision", da, db)
	}
	wait := func(name string) result {
		t.Helper()
		select {
		case r := <-results[name]:
			if r.err != nil {
				t.Fatalf("%s: %v", name, r.err)
			}
			return r
		case <-time.After(guard):
			t.Fatalf("%s never finished", name)
			return result{}
		}
	}
	close(release["a"])
	ra := wait("a")
	close(release["b"]) // b commits on the view a's claim made stale
	rb := wait("b")
	if ra.id != 1 || rb.id != 2 {
		t.Fatalf("a got %d, b got %d: want 1 and 2", ra.id, rb.id)
	}
	mu.Lock()
	nb := len(decisions["b"])
	mu.Unlock()
	if nb != 2 {
		t.Fatalf("b decided %d times, want 2 (lost once, then won)", nb)
	}
	if got, want := idOwners(t, cli), map[uint32]string{1: "a", 2: "b"}; !maps.Equal(got, want) {
		t.Fatalf("ID keys %v, want %v", got, want)
	}
}

// TestManyJoinersWithoutQueueGetDistinctIDs lets K joiners skip the queue,
// so that all of them chase the lowest free ID: the comparisons alone keep
// the IDs distinct.
func TestManyJoinersWithoutQueueGetDistinctIDs(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	const k = 20
	ids := make([]uint32, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range k {
		c := &claimer{
			cli: cli, name: fmt.Sprintf("n%02d", i), queueTTL: time.Second, attemptTimeout: 5 * time.Second,
			maxBackoff: 20 * time.Millisecond, log: testLogger(t), hooks: claimHooks{noQueue: true},
		}
		wg.Go(func() {
			<-start
			ids[i], errs[i] = c.run(t.Context())
		})
	}
	close(start)
	wg.Wait()
	seen := map[uint32]bool{}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[id] || id < 1 || id > k {
			t.Fatalf("IDs %v: want 1..%d, each once", ids, k)
		}
		seen[id] = true
	}
}

// TestThousandJoiners races 1000 joiners through the queue (200 with
// -short or the race detector, which makes the embedded etcd too slow for
// 1000 in the race's minute): every one gets an ID, all distinct, exactly
// 1..K.
func TestThousandJoiners(t *testing.T) {
	k := 1000
	if testing.Short() || raceEnabled {
		k = 200
	}
	s := etcdtest.Start(t)
	t0 := time.Now()
	ids, _ := race(t, s, k, nil)
	t.Logf("%d joiners: %v", k, time.Since(t0))
	checkDense(t, s.Client(), ids, k)
}
