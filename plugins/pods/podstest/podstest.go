// Package podstest runs one node's pod wiring for tests and benchmarks
// outside package pods (the CNI plugin's, the e2e's, the benchmark's): the
// simulated VPP behind a real govpp connection, IPAM over embedded etcd,
// a pods.Manager on a real controller loop, and the CNI socket.
//
// THE SIMULATED VPP FORWARDS NO PACKETS. The pod side is real: veths and
// network namespaces of the machine (tests run as root).
package podstest

import (
	"context"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/pods"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// Params shape a Node.
type Params struct {
	// PodPrefixLen is the node's pod subnet length (default 24).
	PodPrefixLen int
	// ServiceTime is the simulated VPP's time per request (0: none).
	ServiceTime time.Duration
}

// Node is one node's pod wiring, torn down at the test's end.
type Node struct {
	VPP     *sim.VPP
	Conn    *vpp.Conn
	Manager *pods.Manager
	Plan    *addrplan.Plan
	Alloc   *addrplan.Allocator
	// Socket is the CNI socket's path.
	Socket string
}

// Start starts a node.
func Start(tb testing.TB, p Params) *Node {
	tb.Helper()
	if p.PodPrefixLen == 0 {
		p.PodPrefixLen = 24
	}
	n := &Node{VPP: sim.New(sim.Options{ServiceTime: p.ServiceTime})}
	n.VPP.CreateTable(1)
	n.Conn = vpp.New(vpp.Config{Adapter: n.VPP, ExtraMessages: vpp.PodMessages(), RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() { cancel(); wg.Wait(); n.Conn.Close() })
	n.Conn.Start(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := n.Conn.WaitConnected(wctx); err != nil {
		tb.Fatal(err)
	}
	cli := etcdtest.Start(tb).Client()
	plan, err := addrplan.NewPlan(addrplan.Config{
		PodSubnetCIDR:                 netip.MustParsePrefix("10.1.0.0/16"),
		PodSubnetOneNodePrefixLen:     p.PodPrefixLen,
		VPPHostSubnetCIDR:             netip.MustParsePrefix("172.30.0.0/16"),
		VPPHostSubnetOneNodePrefixLen: 24,
		NodeInterconnectCIDR:          netip.MustParsePrefix("192.168.16.0/24"),
		ServiceCIDR:                   netip.MustParsePrefix("10.96.0.0/12"),
	}, 3)
	if err != nil {
		tb.Fatal(err)
	}
	n.Plan = plan
	n.Alloc, err = addrplan.NewAllocator(ctx, addrplan.AllocatorParams{Subnet: plan.PodSubnet, Store: ipam.NewStore(cli, "node", nil)})
	if err != nil {
		tb.Fatal(err)
	}
	n.Manager, err = pods.New(pods.Params{
		VPP: vpp.NewPods(n.Conn, nil), Allocator: func() *addrplan.Allocator { return n.Alloc },
		Plan: func() *addrplan.Plan { return plan }, VRF: 1, Kind: vpp.PodLinkAFPacket, StateDir: tb.TempDir(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctl := controller.New(controller.Params{Handlers: []controller.Handler{n.Manager}, ApplyObservers: []controller.ApplyObserver{n.Manager}, BatchHold: -1})
	n.Manager.SetEvents(ctl)
	wg.Go(func() { _ = ctl.Run(ctx) })
	ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}})
	n.Socket = filepath.Join(tb.TempDir(), "cni.sock")
	srv := pods.NewServer(pods.ServerParams{
		Socket: n.Socket,
		Stale:  n.Manager.Stale,
		Submit: func(ctx context.Context, op pods.Op, req pods.Request) (pods.Result, error) {
			return n.Manager.Submit(ctx, ctl, op, req)
		},
		Status: func() cniapi.Status {
			ready := ctl.Ready() && n.Manager.Ready() && n.Conn.Status().Connected
			st := cniapi.Status{Ready: ready, Kind: string(n.Manager.Kind())}
			if !ready {
				st.Why = "VPP not connected or pods not restored"
			}
			return st
		},
	})
	wg.Go(func() {
		if err := srv.Run(ctx); err != nil {
			tb.Error(err)
		}
	})
	// The socket listens once Run has made it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ready, _ := filepath.Glob(n.Socket); len(ready) == 1 && ctl.Ready() {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatal("the CNI socket did not come up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}
