package pods

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// netlink's and the netns package's helpers keep no goroutines;
		// etcd's client may leave its resolver's for a moment.
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

const node = "node1"

func addrConfig(perNode int) addrplan.Config {
	return addrplan.Config{
		PodSubnetCIDR:                 netip.MustParsePrefix("10.1.0.0/16"),
		PodSubnetOneNodePrefixLen:     perNode,
		VPPHostSubnetCIDR:             netip.MustParsePrefix("172.30.0.0/16"),
		VPPHostSubnetOneNodePrefixLen: 24,
		NodeInterconnectCIDR:          netip.MustParsePrefix("192.168.16.0/24"),
		ServiceCIDR:                   netip.MustParsePrefix("10.96.0.0/12"),
	}
}

// env is one node: the simulated VPP behind a real govpp connection, IPAM
// over embedded etcd, and a Manager with its records in a temporary
// directory.
type env struct {
	t     testing.TB
	vpp   *sim.VPP
	conn  *vpp.Conn
	port  *vpp.Pods
	etcd  *clientv3.Client
	plan  *addrplan.Plan
	alloc *addrplan.Allocator
	dir   string
	m     *Manager
	// loopBusy, when set, adds up the time the loop spends in the
	// manager's Update (benchmarks).
	loopBusy *atomic.Int64
	// addBatches, when set, counts the ADD batches the loop takes in.
	addBatches *atomic.Int64
	// kind is the pod interface kind (default af_packet: newTapEnv makes
	// taps).
	kind vpp.PodLinkKind
}

// needRoot skips, loudly, where the kernel refuses network namespaces.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: these tests make network namespaces and veths: run them as root")
	}
	n, err := testutils.NewNS()
	if err != nil {
		t.Skipf("SKIPPED LOUDLY: the kernel refuses a network namespace: %v", err)
	}
	_ = n.Close()
	_ = testutils.UnmountNS(n)
}

func newEnv(t testing.TB, perNode int) *env { return newEnvOn(t, perNode, false) }

// newEnvOn is newEnv; with socket the simulated VPP is served on a unix
// socket and reached through govpp's socket client, as the agent reaches
// VPP (benchmarks).
func newEnvOn(t testing.TB, perNode int, socket bool) *env {
	t.Helper()
	needRoot(t)
	e := &env{t: t, vpp: sim.New(sim.Options{}), dir: t.TempDir(), kind: vpp.PodLinkAFPacket}
	e.vpp.CreateTable(1)
	cfg := vpp.Config{Adapter: e.vpp, ExtraMessages: vpp.PodMessages(), RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond}
	if socket {
		srv, err := e.vpp.Serve(filepath.Join(t.TempDir(), "api.sock"))
		if err != nil {
			t.Fatalf("serving the simulated VPP: %v", err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		cfg.Adapter, cfg.Socket = nil, srv.Path()
	}
	e.conn = vpp.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	e.conn.Start(ctx)
	t.Cleanup(func() { cancel(); e.conn.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := e.conn.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	e.port = vpp.NewPods(e.conn, nil)
	srv := etcdtest.Start(t)
	e.etcd = srv.Client()
	plan, err := addrplan.NewPlan(addrConfig(perNode), 1)
	if err != nil {
		t.Fatal(err)
	}
	e.plan = plan
	e.alloc = e.newAllocator()
	e.m = e.newManager()
	return e
}

func (e *env) newAllocator() *addrplan.Allocator {
	a, err := addrplan.NewAllocator(context.Background(), addrplan.AllocatorParams{
		Subnet: e.plan.PodSubnet, Store: ipam.NewStore(e.etcd, node, nil),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// newManager is a Manager as an agent (re)started on the node makes it.
func (e *env) newManager() *Manager {
	m, err := New(Params{
		VPP: e.port, Allocator: func() *addrplan.Allocator { return e.alloc }, Plan: func() *addrplan.Plan { return e.plan },
		VRF: 1, Kind: e.kind, StateDir: e.dir,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// netns makes a network namespace for one pod, removed at the test's end.
func (e *env) netns() ns.NetNS {
	e.t.Helper()
	n, err := testutils.NewNS()
	if err != nil {
		e.t.Fatalf("netns: %v", err)
	}
	e.t.Cleanup(func() {
		_ = n.Close()
		_ = testutils.UnmountNS(n)
	})
	return n
}

// uniq is a container ID no other test run uses (veth names derive from
// it: runs in parallel on one machine must not collide).
func uniq(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func (e *env) request(pod string, n ns.NetNS) Request {
	id := uniq("c")
	e.t.Cleanup(func() { _ = deleteHostLink(hostIfName(id)) })
	return Request{ContainerID: id, Netns: n.Path(), IfName: "eth0", Namespace: "default", Pod: pod}
}

// podInterfaces are the simulated VPP's interfaces tagged as pods.
func (e *env) podInterfaces() map[string]sim.Interface {
	out := map[string]sim.Interface{}
	for _, i := range e.vpp.Interfaces() {
		if strings.Contains(i.Tag, "/") {
			out[i.Tag] = i
		}
	}
	return out
}

// assertWired checks everything ADD promises for one pod.
func (e *env) assertWired(req Request, res Result) {
	t := e.t
	t.Helper()
	tag := req.Namespace + "/" + req.Pod
	i, ok := e.podInterfaces()[tag]
	if !ok {
		t.Fatalf("no VPP interface tagged %s: %v", tag, e.vpp.Interfaces())
	}
	d, _ := e.vpp.InterfaceNamed(i.Name)
	if !d.AdminUp || d.VRF != 1 {
		t.Errorf("interface %s: up %v, VRF %d; want up in VRF 1", i.Name, d.AdminUp, d.VRF)
	}
	if src, ok := e.vpp.Unnumbered()[i.Index]; !ok {
		t.Errorf("interface %s is not unnumbered", i.Name)
	} else if g, _ := e.vpp.InterfaceNamed(nameOf(e.vpp, src)); g.Address != netip.PrefixFrom(e.plan.PodGateway, 32) || g.VRF != 1 {
		t.Errorf("interface %s borrows from %s holding %v in VRF %d; want the gateway %s in VRF 1", i.Name, g.Name, g.Address, g.VRF, e.plan.PodGateway)
	}
	var route, neigh bool
	for _, r := range e.vpp.Routes() {
		if r.VRF == 1 && r.Prefix == netip.PrefixFrom(res.IP.Addr(), 32) && r.Via && r.ViaInterface == i.Index {
			route = true
		}
	}
	for _, n := range e.vpp.Neighbours() {
		if n.Interface == i.Index && n.IP == res.IP.Addr() && n.MAC.String() == res.MAC {
			neigh = true
		}
	}
	if !route || !neigh {
		t.Errorf("pod %s: /32 route %v, static neighbour %v; want both", tag, route, neigh)
	}
	if a, ok := e.alloc.Lookup(podOf(req)); !ok || a != res.IP.Addr() {
		t.Errorf("IPAM holds %v (%v) for %s; want %s", a, ok, tag, res.IP.Addr())
	}
	if err := checkPod(req.Netns, podConfig{ifName: req.IfName, ip: res.IP.Addr(), gateway: e.plan.PodGateway}); err != nil {
		t.Errorf("pod side: %v", err)
	}
	// The gateway's ARP entry in the pod is the VPP end's MAC.
	_ = withNetns(req.Netns, func(ns.NetNS) error {
		l, err := netlink.LinkByName(req.IfName)
		if err != nil {
			t.Error(err)
			return nil
		}
		ns, _ := netlink.NeighList(l.Attrs().Index, netlink.FAMILY_V4)
		for _, n := range ns {
			if n.IP.Equal(e.plan.PodGateway.AsSlice()) && n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == d.MAC.String() {
				return nil
			}
		}
		t.Errorf("pod %s: no permanent ARP entry %s -> %s: %v", tag, e.plan.PodGateway, d.MAC, ns)
		return nil
	})
}

// assertGone checks that nothing of a pod is left: VPP, IPAM, record.
func (e *env) assertGone(req Request) {
	t := e.t
	t.Helper()
	tag := req.Namespace + "/" + req.Pod
	if i, ok := e.podInterfaces()[tag]; ok {
		t.Errorf("VPP still has %s for %s", i.Name, tag)
	}
	if a, ok := e.alloc.Lookup(podOf(req)); ok {
		t.Errorf("IPAM still holds %s for %s", a, tag)
	}
	st, err := ipam.NewStore(e.etcd, node, nil).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := st[podOf(req)]; ok {
		t.Errorf("etcd still holds %s for %s", a, tag)
	}
	if _, err := os.Stat(records{dir: e.dir}.file(podOf(req))); err == nil {
		t.Errorf("the record of %s is still there", tag)
	}
	if hostLinkExists(hostIfName(req.ContainerID)) {
		t.Errorf("the veth of %s is still there", tag)
	}
	for _, r := range e.vpp.Routes() {
		if r.Via {
			if _, ok := e.vpp.InterfaceNamed(nameOf(e.vpp, r.ViaInterface)); !ok {
				t.Errorf("a route through a deleted interface is left: %+v", r)
			}
		}
	}
}

func nameOf(v *sim.VPP, idx uint32) string {
	for _, i := range v.Interfaces() {
		if i.Index == idx {
			return i.Name
		}
	}
	return ""
}

func resyncEvent() *controller.ResyncEvent {
	return &controller.ResyncEvent{Kind: controller.ResyncHealing}
}
