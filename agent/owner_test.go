package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp"
)

// local0Tag is the tag of the simulated VPP's local0.
func (h *harness) local0Tag() string {
	for _, i := range h.vpp.Interfaces() {
		if i.Index == 0 {
			return i.Tag
		}
	}
	return ""
}

// markOwner tags the simulated VPP's local0 over its socket, as another
// agent would.
func (h *harness) markOwner(tag string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // bounds a hung test only (a loaded machine reconnects slowly)
	defer cancel()
	c := vpp.New(vpp.Config{Socket: h.srv.Path(), HealthInterval: time.Minute})
	c.Start(ctx)
	defer c.Close()
	// A VPP restarted a moment ago may still be replacing its socket.
	for {
		err := c.WaitConnected(ctx)
		if err == nil {
			if err = c.MarkOwner(ctx, tag); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			h.t.Fatalf("marking VPP as another agent's: %v", err)
		}
		time.Sleep(pollEvery)
	}
}

// startRefused starts an agent configured by cfg against the harness's
// VPP (the harness's agent stopped) and checks that it programs nothing,
// keeps owner's mark on VPP and is not ready, naming owner; then stops it.
func (h *harness) startRefused(t *testing.T, cfg contivconf.Config, owner string) {
	t.Helper()
	mark := h.local0Tag()
	h.vpp.ResetCalls()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &tailBuffer{max: 16 << 10}
	a, err := New(ctx, Options{Config: cfg, Dataplane: SimulatedOverSocket(h.vpp), LogOutput: logs})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	want := "VPP is managed by another agent (" + owner + ")"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(strings.Join(a.notReady(), "; "), want); {
		if time.Now().After(deadline) || a.Ready() {
			t.Fatalf("ready %v, not ready for another reason: %v; want %q\nlog tail:\n%s", a.Ready(), a.notReady(), want, logs)
		}
		time.Sleep(pollEvery)
	}
	time.Sleep(300 * time.Millisecond) // what a wrong agent would write meanwhile
	if w := h.vpp.Writes(); w != 0 || h.local0Tag() != mark || a.Ready() {
		t.Errorf("against %s's VPP: %d writes, local0 %q, ready %v; want 0 writes, the mark %q, not ready", owner, w, h.local0Tag(), a.Ready(), mark)
	}
}

// TestOneVPPOneOwner: the agent marks the VPP it programs with its cluster
// name and node name; against a VPP another agent marked it programs
// nothing and is not ready, naming the other owner; vpp.takeOver makes it
// take VPP over.
func TestOneVPPOneOwner(t *testing.T) {
	srv := etcdtest.Start(t)
	h := newHarness(t, srv.Endpoint(), testConfig(t, srv.Endpoint(), t.TempDir()))
	defer h.close()
	mine := "contiv:kubernetes/node-1"
	if got := h.local0Tag(); got != mine {
		t.Fatalf("local0 tagged %q after the first programming, want %q", got, mine)
	}

	// Another agent's VPP (restarted: empty), marked by it.
	h.stopAgent()
	h.vpp.Restart()
	h.markOwner(vpp.OwnerTag("other-cluster", "node-9"))
	h.startRefused(t, h.cfg, "other-cluster/node-9")

	// Told to take over: it programs VPP and marks it as its own.
	h.cfg.VPP.TakeOver = true
	h.startAgent()
	if got := h.local0Tag(); got != mine {
		t.Errorf("local0 tagged %q after taking over, want %q", got, mine)
	}
	if h.vpp.Writes() == 0 {
		t.Error("nothing programmed after taking over")
	}
}

// clusterID is the ID of the etcd cluster cli reaches.
func clusterID(t *testing.T, cli *clientv3.Client) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "cluster-id")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.ClusterId
}

// markSyncedAt writes a complete reflector output's markers into cli's etcd.
func markSyncedAt(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kubestate.MarkSynced(ctx, cli, "test", 0); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerSurvivesNewEtcd (issue 37, defect 5): an agent restarted against
// a new etcd (another cluster ID: a restore, a re-created etcd) still owns
// the VPP it marked, without vpp.takeOver. The mark held etcd's cluster ID,
// so the agent took its own VPP for another agent's.
func TestOwnerSurvivesNewEtcd(t *testing.T) {
	old := etcdtest.StartCluster(t, etcdtest.ClusterParams{Members: 1})
	dir := t.TempDir()
	h := newHarness(t, old.Endpoint(0), testConfig(t, old.Endpoint(0), dir))
	defer h.close()
	mine := h.local0Tag()

	h.stopAgent()
	fresh := etcdtest.Start(t)
	if a, b := clusterID(t, old.Client()), clusterID(t, fresh.Client()); a == b {
		t.Fatalf("both etcds have cluster ID %x: the test needs a new one", a)
	}
	markSyncedAt(t, fresh.Client())
	h.cfg.Etcd.Endpoints = []string{fresh.Endpoint()}
	h.startAgent() // ready: VPP is its own (a refused agent never is)
	if got := h.local0Tag(); got != mine {
		t.Errorf("after the new etcd: local0 %q; want %q kept", got, mine)
	}
}

// TestOwnerTellsClustersApart (issue 37, defect 5): two clusters whose etcds
// are configured alike (one cluster ID) and whose agents have one node
// name are told apart by their cluster names: the second cluster's agent
// refuses the first's VPP.
func TestOwnerTellsClustersApart(t *testing.T) {
	first, second := etcdtest.Start(t), etcdtest.Start(t)
	if a, b := clusterID(t, first.Client()), clusterID(t, second.Client()); a != b {
		t.Fatalf("etcd cluster IDs %x and %x: the test needs two alike", a, b)
	}
	cfg := testConfig(t, first.Endpoint(), t.TempDir())
	cfg.ClusterName = "alpha"
	h := newHarness(t, first.Endpoint(), cfg)
	defer h.close()
	h.stopAgent()

	markSyncedAt(t, second.Client())
	other := testConfig(t, second.Endpoint(), t.TempDir())
	other.ClusterName = "beta"
	other.VPP.Socket = h.srv.Path()
	h.startRefused(t, other, "alpha/node-1")
}

// TestOwnerLegacyMark: a mark written before clusterName ("contiv@" + etcd
// cluster ID + "/" + node) with this node's name is this agent's own,
// rewritten in the new form without vpp.takeOver; one with another node's
// name is another agent's.
func TestOwnerLegacyMark(t *testing.T) {
	srv := etcdtest.Start(t)
	h := newHarness(t, srv.Endpoint(), testConfig(t, srv.Endpoint(), t.TempDir()))
	defer h.close()
	mine := h.local0Tag()

	h.stopAgent()
	h.markOwner("contiv@3f2a9c0e11d4b7a5/node-9")
	h.startRefused(t, h.cfg, "3f2a9c0e11d4b7a5/node-9")

	h.markOwner("contiv@3f2a9c0e11d4b7a5/node-1")
	h.startAgent() // ready: VPP is its own (a refused agent never is)
	if got := h.local0Tag(); got != mine {
		t.Errorf("local0 tagged %q after the upgrade, want %q", got, mine)
	}
}

// TestOwnerRecheckedAtFullResync (issue 37, defect 6): two agents on one
// VPP that both found it unmarked both marked it, the last mark winning.
// The agent whose mark was overwritten finds the other's at its next full
// resync: it stops writing, is not ready naming the other, and says so
// once. (The simulated VPP serves one socket client at a time, as a new
// client ends the last one's connection, which would make the agent read
// the mark again anyway: the other agent's mark goes through this agent's
// own connection, the same request the other agent makes.)
func TestOwnerRecheckedAtFullResync(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), t.TempDir())
	cfg.Controller.ResyncInterval = contivconf.Duration(200 * time.Millisecond)
	h := newHarness(t, srv.Endpoint(), cfg) // node-1: found VPP unmarked, marked it
	defer h.close()
	h.logs.mu.Lock()
	h.logs.max = 8 << 20 // every line: the test counts one
	h.logs.mu.Unlock()
	a := h.agent
	connects := a.conn.Status().Connects

	// node-2 found VPP unmarked too, before node-1's mark, and marks it
	// now: its mark wins.
	other := vpp.OwnerTag("kubernetes", "node-2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.conn.MarkOwner(ctx, other); err != nil {
		t.Fatal(err)
	}
	want := "VPP is managed by another agent (kubernetes/node-2)"
	for deadline := time.Now().Add(settleLimit); !strings.Contains(strings.Join(a.notReady(), "; "), want); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatalf("node-1 still programs node-2's VPP after full resyncs: not ready %v; want %q\nlog tail:\n%s", a.notReady(), want, h.logs)
		}
	}
	if a.Ready() || a.conn.Status().Connects != connects {
		t.Errorf("ready %v, connects %d (was %d); want not ready on the same connection", a.Ready(), a.conn.Status().Connects, connects)
	}

	// node-1 writes nothing more: a change it would program reaches VPP
	// not at all.
	h.vpp.ResetCalls()
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
	rev := h.kv.rev()
	for deadline := time.Now().Add(settleLimit); a.ctl.Status().Revision < rev; time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatalf("node-1 did not take in revision %d", rev)
		}
	}
	errs := a.ctl.Status().Errors
	for deadline := time.Now().Add(settleLimit); a.ctl.Status().Errors <= errs+1; time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatal("node-1 made no apply after the change")
		}
	}
	if w := h.vpp.Writes(); w != 0 || h.local0Tag() != other {
		t.Errorf("node-1 on node-2's VPP: %d writes, local0 %q; want none and node-2's mark", w, h.local0Tag())
	}
	if n := strings.Count(h.logs.String(), "another agent marked VPP as its own since this agent did"); n != 1 {
		t.Errorf("node-1 said %d times that it stopped; want once\nlog tail:\n%s", n, h.logs)
	}
}
