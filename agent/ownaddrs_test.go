package agent

import (
	"context"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/agent/ownaddrs"
	"contiv.dev/vpp/agent/readiness"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// applyFunc is an apply step made of a function.
type applyFunc func(context.Context, bool) error

func (f applyFunc) Apply(ctx context.Context, full bool) error { return f(ctx, full) }

// TestFirstStartReadyHasOwnNodePorts: on a node's first start its VPP
// address reaches the service processor only when its NodeSync record
// comes back from etcd, after the first full sync; the agent is not ready
// before the NodePorts on that address are in VPP.
func TestFirstStartReadyHasOwnNodePorts(t *testing.T) {
	srv := etcdtest.Start(t)
	vpp := sim.New(sim.Options{})
	cfg := testConfig(t, srv.Endpoint(), t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, Options{Config: cfg, Dataplane: Simulated(vpp), LoadFile: "../deploy/examples/cluster.yaml", LogOutput: io.Discard})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	// Polled without sleeping: the gap was a few milliseconds.
	deadline := time.Now().Add(30 * time.Second)
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("agent not ready")
		}
	}
	for _, ip := range []string{"192.168.16.1", "192.168.56.101"} {
		np := sim.Packet{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr(ip), Proto: sim.TCP, DstPort: 30080, Ingress: simulatedMainNIC}
		if res := vpp.Translate(np); res.Verdict != sim.Translated {
			t.Errorf("ready, but the NodePort on this node's address %s is not programmed: %+v", ip, res)
		}
	}
}

// TestOwnAddrsReadinessEtcdDown: with etcd down, a node whose record
// already holds the addresses it publishes is ready; a fresh node whose
// record cannot be written is not, and says why.
func TestOwnAddrsReadinessEtcdDown(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	srv.Stop()
	vppIP := netip.MustParsePrefix("192.168.16.1/24")

	// reasons runs the first sync of a node whose record in the snapshot
	// is rec, and returns the readiness reason and the handler.
	reasons := func(rec *kubestate.VppNode) (string, *nodesync.Handler) {
		h, err := nodesync.New(nodesync.Params{Client: cli, NodeName: "node-1", ID: 1,
			WriteTimeout: 50 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		r := &readiness.Tracker{}
		snap := &controller.Snapshot{Objects: map[kubestate.Key]kubestate.Object{rec.Key(): rec}}
		if err := h.Resync(context.Background(), &controller.ResyncEvent{Kind: controller.ResyncStartup, State: snap}); err != nil {
			t.Fatal(err)
		}
		// IPAM publishes, the processor reads the record, the apply runs.
		_ = ownaddrs.PublishTap{Inner: h, Addrs: &r.Addrs}.PublishVppIPs(context.Background(), []netip.Prefix{vppIP})
		thisNode{h: h, addrs: &r.Addrs}.NodeIPs()
		_ = observed{obs: []controller.ApplyObserver{&readiness.Observer{Tracker: r}}, inner: applyFunc(func(context.Context, bool) error { return nil })}.Apply(context.Background(), true)
		waitFor(t, "a failed write", func() bool { return h.WriteStatus().LastError != "" })
		return ownaddrs.Reason(r.Addrs.Missing(), h.WriteStatus()), h
	}

	why, h := reasons(&kubestate.VppNode{Name: "node-1", ID: 1, VppIPs: []string{vppIP.String()}})
	if why != "" || !h.WriteStatus().Pending {
		t.Errorf("restarted node, record up to date, etcd down: reason %q, write status %+v", why, h.WriteStatus())
	}
	why, _ = reasons(&kubestate.VppNode{Name: "node-1", ID: 1})
	for _, want := range []string{"waiting for this node's VPP addresses (192.168.16.1/24) to come back from etcd", "writing the record failed: "} {
		if !strings.Contains(why, want) {
			t.Errorf("fresh node, etcd down: reason %q lacks %q", why, want)
		}
	}
}
