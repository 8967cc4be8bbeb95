package ipam

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/nodesync"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func config() addrplan.Config {
	return addrplan.Config{
		PodSubnetCIDR:                 netip.MustParsePrefix("10.1.0.0/16"),
		PodSubnetOneNodePrefixLen:     24,
		VPPHostSubnetCIDR:             netip.MustParsePrefix("172.30.0.0/16"),
		VPPHostSubnetOneNodePrefixLen: 24,
		NodeInterconnectCIDR:          netip.MustParsePrefix("192.168.16.0/24"),
		ServiceCIDR:                   netip.MustParsePrefix("10.96.0.0/12"),
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// startAgent runs NodeSync and IPAM in a real controller watching etcd,
// until the test ends or stop is called.
func startAgent(t *testing.T, cli *clientv3.Client, stateDir string) (h *Handler, stop func()) {
	t.Helper()
	h, _, stop = startAgentCtl(t, cli, stateDir)
	return h, stop
}

// startAgentCtl is startAgent, with the controller; opts adjust IPAM's
// parameters.
func startAgentCtl(t *testing.T, cli *clientv3.Client, stateDir string, opts ...func(*Params)) (h *Handler, ctl *controller.Controller, stop func()) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	ns, err := nodesync.New(nodesync.Params{Client: cli, NodeName: "a", StateFile: filepath.Join(stateDir, "a.json"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Config: config(), NodeName: "a", NodeIDs: ns, Client: cli, Publisher: ns, Grace: time.Nanosecond, Logger: log}
	for _, o := range opts {
		o(&p)
	}
	h, err = New(p)
	if err != nil {
		t.Fatal(err)
	}
	ctl = controller.New(controller.Params{Client: cli, Handlers: []controller.Handler{ns, h}, Logger: log})
	ns.SetEvents(ctl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctl.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	eventually(t, "controller ready", ctl.Ready)
	eventually(t, "allocations loaded", func() bool { return h.Allocator() != nil })
	return h, ctl, stop
}

func putPod(t *testing.T, cli *clientv3.Client, name, node string) {
	t.Helper()
	p := &kubestate.Pod{Namespace: "default", Name: name, NodeName: node}
	val, err := kubestate.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), p.Key().String(), string(val)); err != nil {
		t.Fatal(err)
	}
}

func stored(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	resp, err := cli.Get(context.Background(), KeyPrefix("a"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range resp.Kvs {
		m[strings.TrimPrefix(string(kv.Key), KeyPrefix("a"))] = string(kv.Value)
	}
	return m
}

func TestPlanPublishAllocateRestartRelease(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	state := t.TempDir()
	// Another node holds ID 1: this one gets 2.
	other, err := nodesync.New(nodesync.Params{Client: cli, NodeName: "first"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if err := other.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other node's ID", func() bool { return other.ID() == 1 })

	h, stop := startAgent(t, cli, state)
	p := h.Plan()
	if p.NodeID != 2 || p.PodSubnet != netip.MustParsePrefix("10.1.2.0/24") {
		t.Fatalf("plan %+v", p)
	}
	eventually(t, "node IP published", func() bool {
		resp, _ := cli.Get(ctx, kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}.String())
		return len(resp.Kvs) == 1 && strings.Contains(string(resp.Kvs[0].Value), `"vppIPs":["192.168.16.2/24"]`)
	})

	// Three pods get addresses; two of them are in the cluster state.
	alloc := h.Allocator()
	want := map[string]string{}
	for _, pod := range []string{"p1", "p2", "p3"} {
		ip, err := alloc.Allocate(ctx, addrplan.PodID{Namespace: "default", Name: pod})
		if err != nil {
			t.Fatal(err)
		}
		want["default/"+pod] = ip.String()
	}
	eventually(t, "allocations stored", func() bool { return maps.Equal(stored(t, cli), want) })
	putPod(t, cli, "p1", "a")
	putPod(t, cli, "p2", "a")
	putPod(t, cli, "elsewhere", "b")

	// A restarted agent keeps every live pod's address; p3 never appeared
	// in the cluster state and is released.
	time.Sleep(time.Millisecond) // past the grace
	stop()
	h2, _ := startAgent(t, cli, state)
	delete(want, "default/p3")
	got := map[string]string{}
	for pod, ip := range h2.Allocator().Allocations() {
		got[pod.String()] = ip.String()
	}
	if !maps.Equal(got, want) {
		t.Fatalf("after restart %v, want %v", got, want)
	}
	eventually(t, "p3's record deleted", func() bool { return maps.Equal(stored(t, cli), want) })

	// A deleted pod's address is released.
	if _, err := cli.Delete(ctx, kubestate.Key{Resource: kubestate.ResPod, Node: "a", Namespace: "default", Name: "p1"}.String()); err != nil {
		t.Fatal(err)
	}
	delete(want, "default/p1")
	eventually(t, "p1 released", func() bool {
		_, held := h2.Allocator().Lookup(addrplan.PodID{Namespace: "default", Name: "p1"})
		return !held && maps.Equal(stored(t, cli), want)
	})
}

// TestPublishIPv6NodeIP: the node's IPv6 VPP address reaches its NodeSync
// record beside the IPv4 one, IPv4 first.
func TestPublishIPv6NodeIP(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	startAgentCtl(t, cli, t.TempDir(), func(p *Params) { p.NodeIP6 = netip.MustParsePrefix("2001:db8:16::1/64") })
	eventually(t, "both node IPs published", func() bool {
		resp, _ := cli.Get(t.Context(), kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}.String())
		return len(resp.Kvs) == 1 && strings.Contains(string(resp.Kvs[0].Value), `"vppIPs":["192.168.16.1/24","2001:db8:16::1/64"]`)
	})
}

// publishes records what PublishVppIPs was given.
type publishes [][]netip.Prefix

func (p *publishes) PublishVppIPs(_ context.Context, ips []netip.Prefix) error {
	*p = append(*p, slices.Clone(ips))
	return nil
}

// TestVppIPsPublished: the IPv4 address (configured, else the plan's)
// comes first, the IPv6 one follows when configured.
func TestVppIPsPublished(t *testing.T) {
	pfx := netip.MustParsePrefix
	for _, tc := range []struct {
		ip4, ip6 netip.Prefix
		want     []netip.Prefix
	}{
		{want: []netip.Prefix{pfx("192.168.16.3/24")}},
		{ip4: pfx("10.50.0.3/24"), want: []netip.Prefix{pfx("10.50.0.3/24")}},
		{ip6: pfx("2001:db8::3/64"), want: []netip.Prefix{pfx("192.168.16.3/24"), pfx("2001:db8::3/64")}},
		{ip4: pfx("10.50.0.3/24"), ip6: pfx("2001:db8::3/64"), want: []netip.Prefix{pfx("10.50.0.3/24"), pfx("2001:db8::3/64")}},
	} {
		var got publishes
		h, err := New(Params{Config: config(), NodeName: "a", NodeIDs: fixedID(3), Publisher: &got, NodeIP: tc.ip4, NodeIP6: tc.ip6})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Resync(t.Context(), &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !slices.Equal(got[0], tc.want) {
			t.Errorf("NodeIP %v NodeIP6 %v: published %v, want %v", tc.ip4, tc.ip6, got, tc.want)
		}
	}
	if _, err := New(Params{Config: config(), NodeName: "a", NodeIDs: fixedID(3), NodeIP6: pfx("10.50.0.3/24")}); err == nil {
		t.Error("an IPv4 NodeIP6 is accepted")
	}
}

type fixedID uint32

func (f fixedID) ID() uint32 { return uint32(f) }

func TestNodeIDThatDoesNotFit(t *testing.T) {
	cfg := config()
	cfg.PodSubnetCIDR, cfg.PodSubnetOneNodePrefixLen = netip.MustParsePrefix("10.1.0.0/24"), 26
	h, err := New(Params{Config: cfg, NodeName: "a", NodeIDs: fixedID(5)})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Resync(t.Context(), &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}})
	if !errors.Is(err, addrplan.ErrNodeIDOutOfRange) || !strings.Contains(err.Error(), "podSubnetCIDR 10.1.0.0/24") {
		t.Fatalf("err = %v, want ErrNodeIDOutOfRange naming the range", err)
	}
	if h.Ready() {
		t.Fatal("ready without a plan")
	}
	if _, err := New(Params{Config: addrplan.Config{}, NodeName: "a", NodeIDs: fixedID(1)}); !errors.Is(err, addrplan.ErrInvalidConfig) {
		t.Fatalf("bad config: err = %v", err)
	}
}

func TestStoreSkipsKeysNamingNoPod(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	st := NewStore(cli, "a", nil)
	if err := st.Put(ctx, addrplan.PodID{Namespace: "ns", Name: "p"}, netip.MustParseAddr("10.1.1.2")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"noslash", "ns/p/extra", "/p"} {
		if _, err := cli.Put(ctx, KeyPrefix("a")+k, "10.1.1.3"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, KeyPrefix("ab")+"ns/q", "10.1.1.4"); err != nil { // another node
		t.Fatal(err)
	}
	got, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[addrplan.PodID{Namespace: "ns", Name: "p"}] != "10.1.1.2" {
		t.Fatalf("List %v", got)
	}
	if err := st.Delete(ctx, addrplan.PodID{Namespace: "ns", Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.List(ctx); len(got) != 0 {
		t.Fatalf("after delete %v", got)
	}
}

// TestHandlesOnlyThisNodesPods: a pod's key holds its node; changes under
// another node's key, or a pod's unscheduled key, are not this node's.
func TestHandlesOnlyThisNodesPods(t *testing.T) {
	h, err := New(Params{Config: config(), NodeName: "a", NodeIDs: fixedID(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ev   controller.Event
		want bool
	}{
		{&controller.ChangeEvent{Key: (&kubestate.Pod{Namespace: "default", Name: "p", NodeName: "a"}).Key()}, true},
		{&controller.ChangeEvent{Key: (&kubestate.Pod{Namespace: "default", Name: "p", NodeName: "b"}).Key()}, false},
		{&controller.ChangeEvent{Key: (&kubestate.Pod{Namespace: "default", Name: "p"}).Key()}, false},
		{&controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResNode, Name: "a"}}, false},
		{&controller.ShutdownEvent{}, true},
	} {
		if got := h.HandlesEvent(tc.ev); got != tc.want {
			t.Errorf("HandlesEvent(%+v) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}
