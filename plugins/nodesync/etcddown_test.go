package nodesync

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
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

func snapshot(objs ...kubestate.Object) *controller.ResyncEvent {
	s := &controller.Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}
	for _, o := range objs {
		s.Objects[o.Key()] = o
	}
	return &controller.ResyncEvent{Kind: controller.ResyncHealing, State: s}
}

func k8sNode(name, ip string) *kubestate.Node {
	return &kubestate.Node{Name: name, Addresses: []kubestate.NodeAddress{internalIP(ip)}}
}

// recordVersion is the record's value and its etcd version (how many times
// it was written since created).
func recordVersion(t *testing.T, cli *clientv3.Client, name string) (string, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), kubestate.Key{Resource: kubestate.ResVppNode, Name: name}.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].Version
}

func fastHandler(t *testing.T, cli *clientv3.Client, name string, id uint32) *Handler {
	t.Helper()
	h, err := New(Params{
		Client: cli, NodeName: name, ID: id, StateFile: t.TempDir() + "/id.json",
		ClaimTimeout: time.Second, WriteTimeout: 300 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func flush(t *testing.T, h *Handler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdDownHandlerDoesNotBlock stops etcd, then feeds the handler
// resyncs, changes of its Kubernetes Node and new VPP addresses, in a random
// order: every call returns at once; once etcd is back, the record carries
// the last addresses, written once.
func TestEtcdDownHandlerDoesNotBlock(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	id, err := noderegistry.Claim(t.Context(), noderegistry.Params{Client: cli, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	h := fastHandler(t, cli, "a", id)
	rec := &kubestate.VppNode{Name: "a", ID: id}
	node := k8sNode("a", "10.0.0.1")
	returns(t, "startup resync", func(ctx context.Context) error {
		return h.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: snapshot(rec, node).State})
	})
	returns(t, "publish", func(ctx context.Context) error {
		return h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")})
	})
	flush(t, h)
	before, v0 := recordVersion(t, cli, "a")
	if want := fmt.Sprintf(`{"name":"a","id":%d,"vppIPs":["192.168.16.1/24"],"mgmtIPs":["10.0.0.1"]}`, id); before != want {
		t.Fatalf("record %s, want %s", before, want)
	}

	s.Stop()
	vpp, mgmt := "192.168.16.1/24", "10.0.0.1"
	for i := range 20 {
		switch rng.IntN(3) {
		case 0:
			vpp = fmt.Sprintf("192.168.16.%d/24", 1+rng.IntN(3))
			returns(t, "publish", func(ctx context.Context) error {
				return h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix(vpp)})
			})
		case 1:
			mgmt = fmt.Sprintf("10.0.0.%d", 1+rng.IntN(3))
			returns(t, "update", func(ctx context.Context) error {
				return h.Update(ctx, &controller.ChangeEvent{Key: node.Key(), Revision: int64(100 + i), New: k8sNode("a", mgmt)})
			})
		case 2:
			returns(t, "resync", func(ctx context.Context) error {
				return h.Resync(ctx, snapshot(rec, k8sNode("a", mgmt)))
			})
		}
	}
	// Something is surely left to write: the last value, and a resync's check.
	returns(t, "resync", func(ctx context.Context) error { return h.Resync(ctx, snapshot(rec, k8sNode("a", mgmt))) })
	eventually(t, "a failed write reported", func() bool {
		st := h.WriteStatus()
		return st.Pending && st.LastError != "" && st.Failures > 0
	})
	if !h.Ready() || h.ID() != id {
		t.Fatalf("ready %v id %d", h.Ready(), h.ID())
	}

	s.Restart()
	flush(t, h)
	after, v1 := recordVersion(t, cli, "a")
	want := fmt.Sprintf(`{"name":"a","id":%d,"vppIPs":[%q],"mgmtIPs":[%q]}`, id, vpp, mgmt)
	if after != want {
		t.Fatalf("record %s, want %s", after, want)
	}
	switch {
	case after == before && v1 != v0:
		t.Fatalf("record rewritten with what it held: version %d -> %d", v0, v1)
	case after != before && v1 != v0+1:
		t.Fatalf("record version %d -> %d: want one write", v0, v1)
	}
	if st := h.WriteStatus(); st.Pending || st.LastError != "" || st.LastSuccess.IsZero() {
		t.Fatalf("status after catching up %+v", st)
	}
}

// TestClaimInResyncDoesNotBlock: a handler without an ID claims it on its
// writer; with etcd down the resync returns, the handler is not ready, and
// it gets its ID once etcd is back.
func TestClaimInResyncDoesNotBlock(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	h := fastHandler(t, cli, "a", 0)
	s.Stop()
	returns(t, "startup resync", func(ctx context.Context) error {
		return h.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}})
	})
	if h.Ready() {
		t.Fatal("ready without an ID")
	}
	eventually(t, "the claim's failure reported", func() bool {
		st := h.WriteStatus()
		return st.Claiming && st.LastError != ""
	})
	s.Restart()
	eventually(t, "the ID", func() bool { return h.ID() == 1 && h.Ready() })
	if st := h.WriteStatus(); st.Claiming {
		t.Fatalf("status %+v", st)
	}
}
