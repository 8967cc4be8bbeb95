package nodesync

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a handler after NodeSync that records the NodeUpdates.
type recorder struct {
	mu      sync.Mutex
	updates []string
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) HandlesEvent(ev controller.Event) bool {
	_, ok := ev.(*controller.NodeUpdate)
	return ok
}
func (r *recorder) Resync(context.Context, *controller.ResyncEvent) error { return nil }
func (r *recorder) Update(_ context.Context, ev controller.Event) error {
	u := ev.(*controller.NodeUpdate)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, noderegistry.Change{Name: u.Name, Prev: u.Prev, New: u.New}.String())
	return nil
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.updates)
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

type agent struct {
	h   *Handler
	rec *recorder
	ctl *controller.Controller
}

// startAgent runs NodeSync and a recorder in a real controller watching etcd.
func startAgent(t *testing.T, cli *clientv3.Client, name, stateFile string) *agent {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h, err := New(Params{Client: cli, NodeName: name, StateFile: stateFile, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctl := controller.New(controller.Params{Client: cli, Handlers: []controller.Handler{h, rec}, Logger: log})
	h.SetEvents(ctl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctl.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, "controller ready", ctl.Ready)
	return &agent{h: h, rec: rec, ctl: ctl}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// expect waits until the recorder holds want after the first skip updates,
// and nothing more.
func (a *agent) expect(t *testing.T, skip int, want ...string) int {
	t.Helper()
	eventually(t, fmt.Sprintf("%d node updates", skip+len(want)), func() bool { return len(a.rec.get()) >= skip+len(want) })
	time.Sleep(50 * time.Millisecond) // a duplicate would arrive with its cause
	got := a.rec.get()[skip:]
	if !slices.Equal(got, want) {
		t.Fatalf("node updates:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	return skip + len(want)
}

func putNode(t *testing.T, cli *clientv3.Client, name string, addrs ...kubestate.NodeAddress) {
	t.Helper()
	val, err := kubestate.Encode(&kubestate.Node{Name: name, Addresses: addrs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), kubestate.Key{Resource: kubestate.ResNode, Name: name}.String(), string(val)); err != nil {
		t.Fatal(err)
	}
}

func internalIP(ip string) kubestate.NodeAddress {
	return kubestate.NodeAddress{Type: "InternalIP", Address: ip}
}

func record(t *testing.T, cli *clientv3.Client, name string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), kubestate.Key{Resource: kubestate.ResVppNode, Name: name}.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func TestNodeUpdatesForJoinChangeAndLeave(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	a := startAgent(t, cli, "a", filepath.Join(t.TempDir(), "a.json"))
	if !a.h.Ready() || a.h.ID() != 1 {
		t.Fatalf("ready=%v id=%d", a.h.Ready(), a.h.ID())
	}
	n := a.expect(t, 0, "node a: none -> id=1 vpp=[] mgmt=[]")

	// Another node joins and publishes its VPP address, twice.
	idB, err := noderegistry.Claim(ctx, noderegistry.Params{Client: cli, Name: "b"})
	if err != nil || idB != 2 {
		t.Fatalf("b: %d %v", idB, err)
	}
	n = a.expect(t, n, "node b: none -> id=2 vpp=[] mgmt=[]")
	vppB := noderegistry.Addresses{VppIPs: []netip.Prefix{netip.MustParsePrefix("192.168.16.2/24")}}
	for range 2 {
		if _, err := noderegistry.Publish(ctx, cli, "b", idB, vppB); err != nil {
			t.Fatal(err)
		}
	}
	n = a.expect(t, n, "node b: id=2 vpp=[] mgmt=[] -> id=2 vpp=[192.168.16.2/24] mgmt=[]")

	// Its Kubernetes Node gets a management address.
	putNode(t, cli, "b", internalIP("10.0.0.2"))
	n = a.expect(t, n, "node b: id=2 vpp=[192.168.16.2/24] mgmt=[] -> id=2 vpp=[192.168.16.2/24] mgmt=[10.0.0.2]")

	// This node's Kubernetes Node gets one: the handler publishes it.
	putNode(t, cli, "a", internalIP("10.0.0.1"))
	n = a.expect(t, n, "node a: id=1 vpp=[] mgmt=[] -> id=1 vpp=[] mgmt=[10.0.0.1]")
	eventually(t, "a's mgmt IP published", func() bool { return strings.Contains(record(t, cli, "a"), `"mgmtIPs":["10.0.0.1"]`) })

	// This node's VPP address, published twice: one update.
	for range 2 {
		if err := a.h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")}); err != nil {
			t.Fatal(err)
		}
	}
	n = a.expect(t, n, "node a: id=1 vpp=[] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1]")

	// The management address changes.
	putNode(t, cli, "a", internalIP("10.0.0.11"), kubestate.NodeAddress{Type: "Hostname", Address: "a"})
	n = a.expect(t, n, "node a: id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.11]")
	eventually(t, "a's new mgmt IP published", func() bool { return strings.Contains(record(t, cli, "a"), `"mgmtIPs":["10.0.0.11"]`) })

	// b leaves: the reflector deletes its Node, then releases it.
	if _, err := cli.Delete(ctx, kubestate.Key{Resource: kubestate.ResNode, Name: "b"}.String()); err != nil {
		t.Fatal(err)
	}
	n = a.expect(t, n, "node b: id=2 vpp=[192.168.16.2/24] mgmt=[10.0.0.2] -> id=2 vpp=[192.168.16.2/24] mgmt=[]")
	if err := noderegistry.Release(ctx, cli, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	a.expect(t, n, "node b: id=2 vpp=[192.168.16.2/24] mgmt=[] -> none")

	self, ok := a.h.ThisNode()
	if !ok || self.ID != 1 || !slices.Equal(self.VppIPs, []string{"192.168.16.1/24"}) || !slices.Equal(self.MgmtIPs, []string{"10.0.0.11"}) {
		t.Fatalf("ThisNode %+v %v", self, ok)
	}
	if all := a.h.AllNodes(); len(all) != 1 || all[0].Name != "a" {
		t.Fatalf("AllNodes %+v", all)
	}
	if _, ok := a.h.NodeByName("b"); ok {
		t.Fatal("b still known")
	}
}

func TestEtcdWipedWhileRunningKeepsTheID(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	if _, err := noderegistry.Claim(ctx, noderegistry.Params{Client: cli, Name: "first"}); err != nil {
		t.Fatal(err)
	}
	putNode(t, cli, "a", internalIP("10.0.0.1"))
	a := startAgent(t, cli, "a", filepath.Join(t.TempDir(), "a.json"))
	if a.h.ID() != 2 {
		t.Fatalf("id %d, want 2", a.h.ID())
	}
	if err := a.h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.2/24")}); err != nil {
		t.Fatal(err)
	}
	want := `{"name":"a","id":2,"vppIPs":["192.168.16.2/24"],"mgmtIPs":["10.0.0.1"]}`
	eventually(t, "a's record", func() bool { return record(t, cli, "a") == want })

	relists := a.ctl.Status().Relists
	s.Wipe()
	eventually(t, "the controller listed the empty etcd", func() bool { return a.ctl.Status().Relists > relists })
	// The reflector writes the cluster state again; this node's record
	// comes back with its ID (not the now free 1) and its addresses.
	putNode(t, cli, "a", internalIP("10.0.0.1"))
	eventually(t, "a's record restored", func() bool { return record(t, cli, "a") == want })
	if a.h.ID() != 2 {
		t.Fatalf("id %d after the wipe, want 2", a.h.ID())
	}
}

func TestRestartedAgentKeepsItsID(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	state := filepath.Join(t.TempDir(), "b.json")
	if _, err := noderegistry.Claim(t.Context(), noderegistry.Params{Client: cli, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	first := startAgent(t, cli, "b", state)
	second := startAgent(t, cli, "b", state)
	if first.h.ID() != 2 || second.h.ID() != 2 {
		t.Fatalf("ids %d %d, want 2 2", first.h.ID(), second.h.ID())
	}
}

func TestHandlesEvent(t *testing.T) {
	h, err := New(Params{Client: &clientv3.Client{}, NodeName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ev   controller.Event
		want bool
	}{
		{&controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResVppNode, Name: "x"}}, true},
		{&controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResNode, Name: "x"}}, true},
		{&controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResPod, Namespace: "n", Name: "x"}}, false},
		{&controller.NodeUpdate{Name: "x"}, false},
	} {
		if got := h.HandlesEvent(tc.ev); got != tc.want {
			t.Errorf("%s %+v: %v", tc.ev.EventName(), tc.ev, got)
		}
	}
	if _, err := New(Params{NodeName: "a"}); err == nil {
		t.Error("no client: no error")
	}
}

// TestOwnRecordLostKeepsThisNode: this node's record vanishes from etcd
// (lost with its data) while its Kubernetes Node exists: the table keeps
// the node as it was (no NodeUpdate takes its addresses, and so its
// NodePorts, away), in a watched delete as in a resync, while the writer
// claims the ID again and republishes the record.
func TestOwnRecordLostKeepsThisNode(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	putNode(t, cli, "a", internalIP("10.0.0.1"))
	a := startAgent(t, cli, "a", filepath.Join(t.TempDir(), "a.json"))
	if err := a.h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")}); err != nil {
		t.Fatal(err)
	}
	want := `{"name":"a","id":1,"vppIPs":["192.168.16.1/24"],"mgmtIPs":["10.0.0.1"]}`
	eventually(t, "a's record", func() bool { return record(t, cli, "a") == want })
	self := func() string {
		v, _ := a.h.ThisNode()
		return noderegistry.Change{Name: "a", New: v}.String()
	}
	eventually(t, "a's addresses taken in", func() bool { return strings.Contains(self(), "vpp=[192.168.16.1/24] mgmt=[10.0.0.1]") })
	n := len(a.rec.get())
	before := self()

	for _, lose := range []func(){
		func() { // a watched delete
			if _, err := cli.Delete(ctx, kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}.String()); err != nil {
				t.Fatal(err)
			}
		},
		func() { // a listing without it
			a.ctl.RequestRelist()
			if _, err := cli.Delete(ctx, kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}.String()); err != nil {
				t.Fatal(err)
			}
		},
	} {
		lose()
		eventually(t, "a's record claimed again", func() bool { return record(t, cli, "a") == want })
		if got := self(); got != before {
			t.Errorf("this node %s, was %s", got, before)
		}
		for _, u := range a.rec.get()[n:] {
			if strings.HasPrefix(u, "node a:") {
				t.Errorf("this node changed while its record was claimed again: %s", u)
			}
		}
	}
}
