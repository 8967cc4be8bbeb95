package addrplan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is a Store holding its records in memory; fail makes the next
// call fail.
type memStore struct {
	mu   sync.Mutex
	recs map[PodID]string
	fail error
}

func newMemStore() *memStore { return &memStore{recs: map[PodID]string{}} }

func (s *memStore) List(context.Context) (map[PodID]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.recs), s.takeFail()
}

func (s *memStore) Put(_ context.Context, pod PodID, ip netip.Addr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.takeFail(); err != nil {
		return err
	}
	s.recs[pod] = ip.String()
	return nil
}

func (s *memStore) Delete(_ context.Context, pod PodID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.takeFail(); err != nil {
		return err
	}
	delete(s.recs, pod)
	return nil
}

func (s *memStore) takeFail() error {
	err := s.fail
	s.fail = nil
	return err
}

func newAlloc(t *testing.T, subnet string, st Store) *Allocator {
	t.Helper()
	a, err := NewAllocator(t.Context(), AllocatorParams{Subnet: pfx(subnet), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllocateIdempotentAndPersisted(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	a := newAlloc(t, "10.1.1.0/24", st)
	pa, pb := PodID{"ns", "a"}, PodID{"ns", "b"}
	ipA, err := a.Allocate(ctx, pa)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Allocate(ctx, pa)
	if err != nil || again != ipA {
		t.Fatalf("second Allocate %s %v, want %s", again, err, ipA)
	}
	ipB, _ := a.Allocate(ctx, pb)
	if ipA != addr("10.1.1.2") || ipB != addr("10.1.1.3") {
		t.Fatalf("got %s %s, want 10.1.1.2 10.1.1.3", ipA, ipB)
	}
	// A restart loads every pod's address and continues after the highest.
	b := newAlloc(t, "10.1.1.0/24", st)
	if got := b.Allocations(); len(got) != 2 || got[pa] != ipA || got[pb] != ipB {
		t.Fatalf("after restart %v", got)
	}
	ipC, _ := b.Allocate(ctx, PodID{"ns", "c"})
	if ipC != addr("10.1.1.4") {
		t.Fatalf("after restart got %s, want 10.1.1.4", ipC)
	}
}

func TestExhaustionAndRoundRobin(t *testing.T) {
	ctx := t.Context()
	a := newAlloc(t, "10.1.1.8/29", newMemStore())
	var got []string
	for i := range 4 {
		ip, err := a.Allocate(ctx, PodID{"ns", fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip.String())
	}
	if strings.Join(got, " ") != "10.1.1.10 10.1.1.11 10.1.1.12 10.1.1.13" {
		t.Fatalf("a /29 gave %v; want .10 to .13 (.8 network, .9 gateway, .14 NAT loopback, .15 broadcast)", got)
	}
	_, err := a.Allocate(ctx, PodID{"ns", "x"})
	if !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "10.1.1.8/29") {
		t.Fatalf("err = %v, want ErrExhausted naming the subnet", err)
	}
	if err := a.Release(ctx, PodID{"ns", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, PodID{"ns", "0"}); err != nil {
		t.Fatal(err)
	}
	// The search goes on from the last address handed out and wraps.
	ip, _ := a.Allocate(ctx, PodID{"ns", "y"})
	if ip != addr("10.1.1.10") {
		t.Fatalf("after wrap got %s, want 10.1.1.10", ip)
	}
	ip, _ = a.Allocate(ctx, PodID{"ns", "z"})
	if ip != addr("10.1.1.11") {
		t.Fatalf("got %s, want 10.1.1.11", ip)
	}
}

func TestStoreFailureKeepsStateConsistent(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	a := newAlloc(t, "10.1.1.0/24", st)
	boom := errors.New("etcd down")
	st.fail = boom
	if _, err := a.Allocate(ctx, PodID{"ns", "a"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(a.Allocations()) != 0 {
		t.Fatal("a failed allocation was kept")
	}
	ip, _ := a.Allocate(ctx, PodID{"ns", "a"})
	st.fail = boom
	if err := a.Release(ctx, PodID{"ns", "a"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if got, ok := a.Lookup(PodID{"ns", "a"}); !ok || got != ip {
		t.Fatal("an allocation whose release failed was dropped")
	}
	// Sync retries the release.
	if err := a.Sync(ctx, func(PodID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if len(a.Allocations()) != 0 || len(st.recs) != 0 {
		t.Fatalf("after sync: %v %v", a.Allocations(), st.recs)
	}
}

func TestSyncReleasesGonePodsAndRepairsStore(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1000, 0)
	st := newMemStore()
	st.recs[PodID{"ns", "bad"}] = "not-an-ip"
	st.recs[PodID{"ns", "outside"}] = "10.2.0.7"
	st.recs[PodID{"ns", "gateway"}] = "10.1.1.1"
	st.recs[PodID{"ns", "a"}] = "10.1.1.5"
	st.recs[PodID{"ns", "dup"}] = "10.1.1.5" // sorts after "a": left out
	a, err := NewAllocator(ctx, AllocatorParams{
		Subnet: pfx("10.1.1.0/24"), Store: st, Grace: time.Minute, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Allocations(); len(got) != 1 || got[PodID{"ns", "a"}] != addr("10.1.1.5") {
		t.Fatalf("loaded %v, want only ns/a", got)
	}
	fresh, _ := a.Allocate(ctx, PodID{"ns", "fresh"})
	if fresh != addr("10.1.1.6") {
		t.Fatalf("got %s, want 10.1.1.6", fresh)
	}
	delete(st.recs, PodID{"ns", "a"}) // lost behind the allocator's back
	now = now.Add(30 * time.Second)
	live := func(p PodID) bool { return p == PodID{"ns", "a"} }
	if err := a.Sync(ctx, live); err != nil {
		t.Fatal(err)
	}
	want := map[PodID]string{{"ns", "a"}: "10.1.1.5", {"ns", "fresh"}: "10.1.1.6"}
	if !maps.Equal(st.recs, want) {
		t.Fatalf("store after sync %v, want %v (fresh pod within grace kept)", st.recs, want)
	}
	now = now.Add(time.Minute)
	if err := a.Sync(ctx, live); err != nil {
		t.Fatal(err)
	}
	delete(want, PodID{"ns", "fresh"})
	if !maps.Equal(st.recs, want) || len(a.Allocations()) != 1 {
		t.Fatalf("store after grace %v, want %v", st.recs, want)
	}
}

func TestAllocatorBadParams(t *testing.T) {
	for _, p := range []AllocatorParams{
		{Subnet: pfx("10.1.1.0/30"), Store: newMemStore()},
		{Subnet: pfx("10.1.1.1/24"), Store: newMemStore()},
		{Subnet: pfx("10.1.1.0/24")},
	} {
		if _, err := NewAllocator(t.Context(), p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

func TestConcurrentAllocate(t *testing.T) {
	ctx := t.Context()
	a := newAlloc(t, "10.1.1.0/24", newMemStore())
	var wg sync.WaitGroup
	ips := make([]netip.Addr, 200)
	for i := range ips {
		wg.Go(func() {
			ips[i], _ = a.Allocate(ctx, PodID{"ns", fmt.Sprint(i % 100)})
		})
	}
	wg.Wait()
	seen := map[netip.Addr]int{}
	for i, ip := range ips {
		if j, ok := seen[ip]; ok && j%100 != i%100 {
			t.Fatalf("pods %d and %d share %s", j, i, ip)
		}
		seen[ip] = i
	}
	if len(seen) != 100 {
		t.Fatalf("%d distinct addresses for 100 pods", len(seen))
	}
}

// listFails is a store whose List always fails: Prune must not need it.
type listFails struct{ *memStore }

func (listFails) List(context.Context) (map[PodID]string, error) {
	return nil, errors.New("list: unreachable")
}

func TestPruneReleasesGonePodsWithoutListing(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1000, 0)
	st := newMemStore()
	a, err := NewAllocator(ctx, AllocatorParams{
		Subnet: pfx("10.1.1.0/24"), Store: st, Grace: time.Minute, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	a.store = listFails{st}
	for _, p := range []string{"gone", "live", "young"} {
		if _, err := a.Allocate(ctx, PodID{"ns", p}); err != nil {
			t.Fatal(err)
		}
		if p == "live" {
			now = now.Add(2 * time.Minute)
		}
	}
	if err := a.Prune(ctx, func(p PodID) bool { return p.Name == "live" }); err != nil {
		t.Fatal(err)
	}
	want := map[PodID]string{{"ns", "live"}: "10.1.1.3", {"ns", "young"}: "10.1.1.4"}
	if !maps.Equal(st.recs, want) || len(a.Allocations()) != 2 {
		t.Fatalf("store %v, allocations %v: want %v", st.recs, a.Allocations(), want)
	}
}
