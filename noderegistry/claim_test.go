package noderegistry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func params(cli *clientv3.Client, name string) Params {
	return Params{Client: cli, Name: name}
}

func mustClaim(t *testing.T, p Params) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	id, err := Claim(ctx, p)
	if err != nil {
		t.Fatalf("claim %s: %v", p.Name, err)
	}
	return id
}

// idOwners reads every ID key: ID → node name.
func idOwners(t testing.TB, cli *clientv3.Client) map[uint32]string {
	t.Helper()
	resp, err := cli.Get(context.Background(), IDPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m := map[uint32]string{}
	for _, kv := range resp.Kvs {
		id, ok := parseID(string(kv.Key), IDPrefix)
		if !ok {
			t.Fatalf("bad ID key %q", kv.Key)
		}
		m[id] = string(kv.Value)
	}
	return m
}

// race runs n joiners at once over a few clients and returns name → ID and
// each joiner's time to its ID. With during set, only the first half starts
// at once; when a tenth of all hold an ID, during runs and gets the function
// that starts the second half.
func race(t testing.TB, s *etcdtest.Server, n int, during func(startRest func())) (map[string]uint32, []time.Duration) {
	t.Helper()
	clis := make([]*clientv3.Client, 10)
	for i := range clis {
		clis[i] = s.Client()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		ids    = map[string]uint32{}
		took   []time.Duration
		errs   []error
		wg     sync.WaitGroup
		done   = make(chan struct{}, n)
		first  = make(chan struct{})
		second = make(chan struct{})
	)
	for i := range n {
		name := fmt.Sprintf("node-%03d", i)
		start := first
		if during != nil && i >= n/2 {
			start = second
		}
		wg.Go(func() {
			<-start
			t0 := time.Now()
			id, err := Claim(ctx, Params{Client: clis[i%len(clis)], Name: name})
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				ids[name] = id
				took = append(took, d)
			}
			done <- struct{}{}
		})
	}
	close(first)
	if during != nil {
		for range max(n/10, 1) {
			<-done
		}
		during(func() { close(second) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ids, took
}

// checkDense checks that the IDs are exactly 1..n, one per node, and that
// etcd's ID keys agree.
func checkDense(t *testing.T, cli *clientv3.Client, ids map[string]uint32, n int) {
	t.Helper()
	var got []uint32
	for _, id := range ids {
		got = append(got, id)
	}
	slices.Sort(got)
	for i, id := range got {
		if id != uint32(i+1) {
			t.Fatalf("IDs %v: want exactly 1..%d", got, n)
		}
	}
	if len(got) != n {
		t.Fatalf("%d IDs, want %d", len(got), n)
	}
	owners := idOwners(t, cli)
	for name, id := range ids {
		if owners[id] != name {
			t.Fatalf("ID key %d names %q, want %q", id, owners[id], name)
		}
	}
	if len(owners) != n {
		t.Fatalf("%d ID keys in etcd, want %d", len(owners), n)
	}
}

func TestHundredJoinersGetOneToHundred(t *testing.T) {
	s := etcdtest.Start(t)
	ids, _ := race(t, s, 100, nil)
	checkDense(t, s.Client(), ids, 100)
}

func TestHundredJoinersWithEtcdRestartInTheMiddle(t *testing.T) {
	s := etcdtest.Start(t)
	ids, _ := race(t, s, 100, func(startRest func()) {
		// Half the joiners are racing; etcd goes down under them, the
		// other half starts against the stopped etcd, then etcd is back.
		s.Stop()
		startRest()
		time.Sleep(50 * time.Millisecond)
		s.Restart()
	})
	checkDense(t, s.Client(), ids, 100)
}

func TestRestartedAgentKeepsItsID(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	a := mustClaim(t, params(cli, "a"))
	b := mustClaim(t, params(cli, "b"))
	if a != 1 || b != 2 {
		t.Fatalf("a=%d b=%d, want 1 2", a, b)
	}
	s.Restart()
	if again := mustClaim(t, params(cli, "b")); again != b {
		t.Fatalf("b claimed again: %d, want %d", again, b)
	}
	if c := mustClaim(t, params(cli, "c")); c != 3 {
		t.Fatalf("c=%d, want 3", c)
	}
}

func TestEtcdWipedNodesReclaimFromStateFile(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	dir := t.TempDir()
	withState := func(name string) Params {
		p := params(cli, name)
		p.StateFile = filepath.Join(dir, name+".json")
		p.Logger = testLogger(t)
		return p
	}
	for i, name := range []string{"a", "b", "c"} {
		if id := mustClaim(t, withState(name)); id != uint32(i+1) {
			t.Fatalf("%s=%d, want %d", name, id, i+1)
		}
	}
	st, ok, err := ReadState(filepath.Join(dir, "c.json"))
	if err != nil || !ok || st != (State{Name: "c", ID: 3}) {
		t.Fatalf("state file of c: %+v %v %v", st, ok, err)
	}

	s.Wipe()
	if id := mustClaim(t, withState("c")); id != 3 {
		t.Fatalf("after the wipe c=%d, want its old 3", id)
	}
	// A node that never ran takes the smallest free ID: a's old one.
	if id := mustClaim(t, params(cli, "d")); id != 1 {
		t.Fatalf("d=%d, want 1", id)
	}
	_, err = Claim(t.Context(), withState("a"))
	if !errors.Is(err, ErrIDTaken) || !strings.Contains(err.Error(), "node d") {
		t.Fatalf("a: err = %v, want ErrIDTaken naming node d", err)
	}
	if id := mustClaim(t, withState("b")); id != 2 {
		t.Fatalf("after the wipe b=%d, want its old 2", id)
	}
	if owners := idOwners(t, cli); len(owners) != 3 || owners[1] != "d" {
		t.Fatalf("ID keys %v: a's refused claim must leave nothing behind", owners)
	}
}

func TestStateFileAndEtcdDisagree(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	p := params(cli, "a")
	p.StateFile = filepath.Join(t.TempDir(), "state.json")
	if err := WriteState(p.StateFile, State{Name: "a", ID: 7}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, params(cli, "a")) // etcd records ID 1
	_, err := Claim(t.Context(), p)
	if !errors.Is(err, ErrIDConflict) || !strings.Contains(err.Error(), "etcd records ID 1") {
		t.Fatalf("err = %v, want ErrIDConflict", err)
	}
	// A state file of another node name is ignored.
	if err := WriteState(p.StateFile, State{Name: "old-name", ID: 7}); err != nil {
		t.Fatal(err)
	}
	if id := mustClaim(t, p); id != 1 {
		t.Fatalf("id %d, want 1", id)
	}
	if st, _, _ := ReadState(p.StateFile); st != (State{Name: "a", ID: 1}) {
		t.Fatalf("state file %+v", st)
	}
	// A corrupt state file stops the claim.
	if err := os.WriteFile(p.StateFile, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim(t.Context(), p); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestReleasedIDIsQuarantined(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	mustClaim(t, params(cli, "a"))
	mustClaim(t, params(cli, "b"))
	if err := Release(ctx, cli, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if owners := idOwners(t, cli); len(owners) != 1 || owners[2] != "b" {
		t.Fatalf("after release ID keys %v", owners)
	}
	if id := mustClaim(t, params(cli, "c")); id != 3 {
		t.Fatalf("c=%d: ID 1 is quarantined, want 3", id)
	}
	// Another node whose state file names ID 1 may not take it.
	p := params(cli, "e")
	p.StateFile = filepath.Join(t.TempDir(), "e.json")
	if err := WriteState(p.StateFile, State{Name: "e", ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim(ctx, p); !errors.Is(err, ErrIDTaken) || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("e: err = %v, want ErrIDTaken (quarantined)", err)
	}
	// The released node itself, back within the quarantine, gets its ID back.
	if id := mustClaim(t, params(cli, "a")); id != 1 {
		t.Fatalf("a back: %d, want 1", id)
	}
	if resp, _ := cli.Get(ctx, releasedKey(1)); len(resp.Kvs) != 0 {
		t.Fatal("tombstone left after a took ID 1 back")
	}

	// Released with a short quarantine, ID 1 is free again once etcd
	// expired the tombstone.
	if err := Release(ctx, cli, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	if id := mustClaim(t, params(cli, "d")); id != 4 {
		t.Fatalf("d=%d during the quarantine, want 4", id)
	}
	waitGone(t, cli, releasedKey(1))
	if id := mustClaim(t, params(cli, "f")); id != 1 {
		t.Fatalf("f=%d after the quarantine, want 1", id)
	}
}

// waitGone waits until etcd expired key.
func waitGone(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := cli.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there", key)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestReleaseWithoutQuarantineAndOfUnknownNode(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	if err := Release(ctx, cli, "nobody", time.Minute); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, params(cli, "a"))
	if err := Release(ctx, cli, "a", 0); err != nil {
		t.Fatal(err)
	}
	if id := mustClaim(t, params(cli, "b")); id != 1 {
		t.Fatalf("b=%d, want 1 (no quarantine)", id)
	}
	if err := Release(ctx, cli, "a/b", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestCrashedJoinerLeavesTheQueue(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	// A joiner queued and crashed before claiming.
	l, err := cli.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, joiningKey("crashed"), "crashed", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	// The next joiner is not blocked: it takes the ID after the one the
	// crashed joiner would have taken.
	if id := mustClaim(t, params(cli, "a")); id != 2 {
		t.Fatalf("a=%d, want 2", id)
	}
	waitGone(t, cli, joiningKey("crashed"))
	if id := mustClaim(t, params(cli, "b")); id != 1 {
		t.Fatalf("b=%d, want 1", id)
	}
}

func TestMaxID(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	for _, name := range []string{"a", "b"} {
		p := params(cli, name)
		p.MaxID = 2
		mustClaim(t, p)
	}
	p := params(cli, "c")
	p.MaxID = 2
	if _, err := Claim(t.Context(), p); !errors.Is(err, ErrNoFreeID) {
		t.Fatalf("err = %v, want ErrNoFreeID", err)
	}
	if resp, _ := cli.Get(t.Context(), joiningKey("c")); len(resp.Kvs) != 0 {
		t.Fatal("a refused joiner stayed in the queue")
	}
}

func TestEtcdUnreachable(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	p := params(cli, "a")
	p.AttemptTimeout = 200 * time.Millisecond
	_, err := Claim(ctx, p)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and the deadline", err)
	}
	t.Log(err)
}

func TestBadParams(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	for _, p := range []Params{{Client: cli}, {Client: cli, Name: "a/b"}, {Name: "a"}} {
		if _, err := Claim(t.Context(), p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", p, err)
		}
	}
	p := params(cli, "a")
	p.WantID = 3
	p.StateFile = filepath.Join(t.TempDir(), "s.json")
	if err := WriteState(p.StateFile, State{Name: "a", ID: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim(t.Context(), p); !errors.Is(err, ErrIDConflict) {
		t.Fatalf("err = %v, want ErrIDConflict", err)
	}
}

// BenchmarkClaim100 measures 100 nodes joining at once: every iteration
// starts from an empty NodeSync state; p50 and p99 are the joiners' times
// to their ID.
func BenchmarkClaim100(b *testing.B) {
	s := etcdtest.Start(b)
	cli := s.Client()
	var all []time.Duration
	for range b.N {
		b.StopTimer()
		if _, err := cli.Delete(context.Background(), "/contiv/v1/nodesync/", clientv3.WithPrefix()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_, took := race(b, s, 100, nil)
		all = append(all, took...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}

func TestQueueLeaseExpiredMidClaim(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	// The joiner's queue lease expired (etcd was away longer than its TTL).
	l, err := cli.Grant(t.Context(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(t.Context(), l.ID); err != nil {
		t.Fatal(err)
	}
	c := &claimer{
		cli: cli, name: "a", lease: l.ID, queueTTL: time.Second,
		attemptTimeout: time.Second, maxBackoff: 10 * time.Millisecond, log: testLogger(t),
	}
	id, err := c.run(t.Context())
	if err != nil || id != 1 {
		t.Fatalf("id %d err %v, want 1", id, err)
	}
	if c.lease == l.ID {
		t.Fatal("the expired lease was not replaced")
	}
}
