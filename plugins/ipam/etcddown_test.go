package ipam

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/nodesync"
)

// guard bounds a call that must not wait for etcd: only a bug makes it long.
const guard = 5 * time.Second

// returns runs f on another goroutine with a context without deadline and
// fails the test if it has not returned within guard.
func returns(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(guard):
		t.Fatalf("%s blocked with etcd down", what)
	}
}

// versioned reads this node's allocation records: pod → address and
// version (how many times the key was written since created).
type versioned struct {
	ip      string
	version int64
}

func storedVersions(t *testing.T, cli *clientv3.Client) map[string]versioned {
	t.Helper()
	resp, err := cli.Get(context.Background(), KeyPrefix("a"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]versioned{}
	for _, kv := range resp.Kvs {
		m[strings.TrimPrefix(string(kv.Key), KeyPrefix("a"))] = versioned{string(kv.Value), kv.Version}
	}
	return m
}

func allocations(h *Handler) map[string]string {
	m := map[string]string{}
	for pod, ip := range h.Allocator().Allocations() {
		m[pod.String()] = ip.String()
	}
	return m
}

func values(m map[string]versioned) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.ip
	}
	return out
}

// cluster is the pods of the cluster state, for resync snapshots.
type cluster map[string]bool

func (c cluster) snapshot() *controller.ResyncEvent {
	s := &controller.Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}
	for name := range c {
		p := &kubestate.Pod{Namespace: "default", Name: name, NodeName: "a"}
		s.Objects[p.Key()] = p
	}
	return &controller.ResyncEvent{Kind: controller.ResyncHealing, State: s}
}

func podChange(name string, present bool) *controller.ChangeEvent {
	ev := &controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResPod, Node: "a", Namespace: "default", Name: name}}
	if present {
		ev.New = &kubestate.Pod{Namespace: "default", Name: name, NodeName: "a"}
	}
	return ev
}

type fixture struct {
	s   *etcdtest.Server
	cli *clientv3.Client
	ns  *nodesync.Handler
	h   *Handler
}

// newFixture runs NodeSync's and IPAM's handlers without a controller (the
// test calls them as the loop would), with a fast background writer.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := etcdtest.Start(t)
	cli := s.Client()
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	id, err := noderegistry.Claim(t.Context(), noderegistry.Params{Client: cli, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := nodesync.New(nodesync.Params{
		Client: cli, NodeName: "a", ID: id, ClaimTimeout: time.Second,
		WriteTimeout: 300 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	h, err := New(Params{
		Config: config(), NodeName: "a", NodeIDs: ns, Client: cli, Publisher: ns, Grace: time.Nanosecond,
		WriteTimeout: 300 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return &fixture{s: s, cli: cli, ns: ns, h: h}
}

func (f *fixture) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.ns.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdDownHandlersDoNotBlock stops etcd, then runs a random mix of pod
// creations (with their allocations), deletions and resyncs: every call
// returns at once, allocations stay idempotent per pod, and once etcd is
// back it holds exactly the allocations, each record written at most once
// since etcd stopped (none when unchanged).
func TestEtcdDownHandlersDoNotBlock(t *testing.T) {
	f := newFixture(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	pods := cluster{}
	allocate := func(ctx context.Context, name string) error {
		pods[name] = true
		if err := f.h.Update(ctx, podChange(name, true)); err != nil {
			return err
		}
		al := f.h.Allocator()
		pod := addrplan.PodID{Namespace: "default", Name: name}
		ip, err := al.Allocate(ctx, pod)
		if err != nil {
			return err
		}
		if again, err := al.Allocate(ctx, pod); err != nil || again != ip {
			return fmt.Errorf("pod %s: %s then %s (%v): not idempotent", name, ip, again, err)
		}
		return nil
	}
	returns(t, "startup resync", func(ctx context.Context) error { return f.ns.Resync(ctx, pods.snapshot()) })
	returns(t, "startup resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	eventually(t, "allocations loaded", func() bool { return f.h.Allocator() != nil })
	for i := range 5 {
		returns(t, "allocate", func(ctx context.Context) error { return allocate(ctx, fmt.Sprintf("p%d", i)) })
	}
	f.flush(t)
	before := storedVersions(t, f.cli)
	if !maps.Equal(values(before), allocations(f.h)) {
		t.Fatalf("stored %v, want %v", before, allocations(f.h))
	}

	f.s.Stop()
	for range 40 {
		name := fmt.Sprintf("p%d", rng.IntN(10))
		switch rng.IntN(3) {
		case 0:
			returns(t, "allocate", func(ctx context.Context) error { return allocate(ctx, name) })
		case 1:
			delete(pods, name)
			returns(t, "delete", func(ctx context.Context) error { return f.h.Update(ctx, podChange(name, false)) })
		case 2:
			returns(t, "resync", func(ctx context.Context) error {
				if err := f.ns.Resync(ctx, pods.snapshot()); err != nil {
					return err
				}
				return f.h.Resync(ctx, pods.snapshot())
			})
		}
	}
	returns(t, "allocate", func(ctx context.Context) error { return allocate(ctx, "last") })
	returns(t, "resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	want := allocations(f.h)
	held := map[string]bool{}
	for pod := range want {
		held[strings.TrimPrefix(pod, "default/")] = true
	}
	if !maps.Equal(held, map[string]bool(pods)) {
		t.Fatalf("allocations %v, pods %v", want, pods)
	}
	eventually(t, "a failed write reported", func() bool {
		st := f.h.WriteStatus()
		return st.Pending > 0 && st.LastError != "" && st.Failures > 0
	})

	f.s.Restart()
	f.flush(t)
	after := storedVersions(t, f.cli)
	if got := values(after); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want the allocations %v", got, want)
	}
	for pod, a := range after {
		b, had := before[pod]
		switch {
		case !had && a.version != 1:
			t.Errorf("%s: new record at version %d, want 1", pod, a.version)
		case had && b.ip == a.ip && a.version != b.version:
			t.Errorf("%s: unchanged record rewritten: version %d -> %d", pod, b.version, a.version)
		case had && b.ip != a.ip && a.version != b.version+1:
			t.Errorf("%s: changed record at version %d -> %d, want one write", pod, b.version, a.version)
		}
	}
	if st := f.h.WriteStatus(); st.Pending != 0 || st.LastError != "" || !st.Loaded || st.Checking {
		t.Fatalf("status after catching up %+v", st)
	}
	rec, err := f.cli.Get(t.Context(), kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}.String())
	if err != nil || len(rec.Kvs) != 1 || !strings.Contains(string(rec.Kvs[0].Value), `"vppIPs":["192.168.16.1/24"]`) {
		t.Fatalf("node record %v %v", rec, err)
	}
}

// TestEtcdWipedRecordsRestored: etcd comes back empty; the resync that
// follows the controller's re-list writes every allocation again.
func TestEtcdWipedRecordsRestored(t *testing.T) {
	f := newFixture(t)
	pods := cluster{"p1": true, "p2": true}
	returns(t, "resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	eventually(t, "allocations loaded", func() bool { return f.h.Allocator() != nil })
	for name := range pods {
		if _, err := f.h.Allocator().Allocate(t.Context(), addrplan.PodID{Namespace: "default", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	f.flush(t)
	f.s.Wipe()
	returns(t, "resync", func(ctx context.Context) error { return f.h.Resync(ctx, pods.snapshot()) })
	f.flush(t)
	if got, want := values(storedVersions(t, f.cli)), allocations(f.h); len(want) != 2 || !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// TestLoadWaitsForEtcd: a resync while the allocations cannot be loaded
// succeeds (the plan is all the data plane needs), and the allocator
// appears once etcd answers.
func TestLoadWaitsForEtcd(t *testing.T) {
	f := newFixture(t)
	f.s.Stop()
	returns(t, "startup resync", func(ctx context.Context) error { return f.h.Resync(ctx, cluster{}.snapshot()) })
	if !f.h.Ready() || f.h.Plan() == nil || f.h.Allocator() != nil {
		t.Fatalf("ready %v plan %v allocator %v", f.h.Ready(), f.h.Plan(), f.h.Allocator())
	}
	eventually(t, "the failed load reported", func() bool {
		st := f.h.WriteStatus()
		return !st.Loaded && st.LastError != ""
	})
	f.s.Restart()
	eventually(t, "allocations loaded", func() bool { return f.h.Allocator() != nil && f.h.WriteStatus().Loaded })
}

// TestLoopDoesNotWaitForEtcd runs NodeSync and IPAM in a real controller:
// with etcd stopped, a healing resync (as after a VPP restart) completes,
// a pod gets an address, and its record lands once etcd is back.
func TestLoopDoesNotWaitForEtcd(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	h, ctl, _ := startAgentCtl(t, cli, t.TempDir())
	putPod(t, cli, "late", "a") // reflected; its sandbox comes while etcd is down
	eventually(t, "the pod in the cluster state", func() bool {
		h.mu.RLock()
		defer h.mu.RUnlock()
		return h.live[addrplan.PodID{Namespace: "default", Name: "late"}]
	})
	resyncs := ctl.Status().Resyncs
	s.Stop()
	ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncHealing})
	deadline := time.Now().Add(guard)
	for ctl.Status().Resyncs == resyncs {
		if time.Now().After(deadline) {
			t.Fatal("the healing resync did not complete with etcd down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var ip netip.Addr
	returns(t, "allocate", func(ctx context.Context) (err error) {
		ip, err = h.Allocator().Allocate(ctx, addrplan.PodID{Namespace: "default", Name: "late"})
		return err
	})
	s.Restart()
	eventually(t, "the pod's record", func() bool { return stored(t, cli)["default/late"] == ip.String() })
}
