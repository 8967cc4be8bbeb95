package agent

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// TestEmptiedEtcdRemovesNothing: the contiv etcd loses every key under a
// running agent (every key deleted at once, or etcd restarted empty): the
// agent removes nothing
// from VPP, says it is not ready and why; once the reflector has written
// the cluster again (its sweep completes with the sync marker) it is ready,
// and VPP was not written at all: every mapping the API still has stayed,
// NodePorts included, while this node's record was claimed again.
func TestEmptiedEtcdRemovesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, srv *etcdtest.Server, cli *clientv3.Client)
	}{
		{"every key deleted", func(t *testing.T, _ *etcdtest.Server, cli *clientv3.Client) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := cli.Delete(ctx, kubestate.Prefix, clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
		}},
		{"restarted empty", func(_ *testing.T, srv *etcdtest.Server, _ *clientv3.Client) { srv.Wipe() }},
	} {
		t.Run(tc.name, func(t *testing.T) { emptiedEtcdRemovesNothing(t, tc.lose) })
	}
}

func emptiedEtcdRemovesNothing(t *testing.T, lose func(*testing.T, *etcdtest.Server, *clientv3.Client)) {
	srv := etcdtest.Start(t)
	h := newHarness(t, srv.Endpoint(), testConfig(t, srv.Endpoint(), t.TempDir()))
	defer h.close()
	f, err := os.Open("../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubestate.LoadYAML(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ops []kubestate.Op
	for _, o := range objs {
		ops = append(ops, kubestate.PutOp(o))
	}
	h.apply(ops)
	h.waitQuiet()
	before, writes := h.lines(), h.vpp.Writes()

	lose(t, srv, h.cli)
	for deadline := time.Now().Add(settleLimit); h.agent.Ready(); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatal("still ready on an emptied etcd")
		}
	}
	why := strings.Join(h.agent.notReady(), "; ")
	if !strings.Contains(why, "no complete reflector output") {
		t.Errorf("not ready because %q; want it to say etcd holds no complete reflector output", why)
	}
	if v := statusView(h.agent); !v.FirstSyncApplied || v.Controller.Ready {
		t.Errorf("status while holding: first full sync applied %v, controller ready %v; want true, false", v.FirstSyncApplied, v.Controller.Ready)
	}

	// The reflector's sweep writes the cluster again, the sync marker last.
	h.apply(ops)
	h.markSynced()
	h.waitQuiet()
	if !h.agent.Ready() {
		t.Fatalf("not ready after the sweep: %v", h.agent.notReady())
	}
	if got := h.lines(); !slices.Equal(got, before) {
		t.Errorf("VPP after the sweep differs:\n%s\nbefore:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	if n := h.vpp.Writes() - writes; n != 0 {
		t.Errorf("%d VPP writes across the loss and the sweep, want none", n)
	}
}
