package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// running is an agent started by a test.
type running struct {
	a    *Agent
	stop func() error
}

func testConfig(t *testing.T, etcdURL string, dir string) contivconf.Config {
	t.Helper()
	return testConfigFrom(t, contivconf.Defaults(), etcdURL, dir)
}

// testConfigFrom is cfg with what every test agent needs: node-1, the
// test's etcd and directory, short backoffs, a free port, quiet logs.
func testConfigFrom(t *testing.T, cfg contivconf.Config, etcdURL string, dir string) contivconf.Config {
	t.Helper()
	cfg.NodeName = "node-1"
	cfg.Etcd.Endpoints = []string{etcdURL}
	cfg.NodeSync.StateFile = filepath.Join(dir, "node-id")
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.HTTP.ProxyHealthAddress = "127.0.0.1:0"
	cfg.Log.Level = contivconf.LogLevelWarn
	cfg.Controller.HealingBackoff = contivconf.Backoff{Initial: contivconf.Duration(20 * time.Millisecond), Max: contivconf.Duration(200 * time.Millisecond)}
	cfg.VPP.ReconnectBackoff = contivconf.Backoff{Initial: contivconf.Duration(20 * time.Millisecond), Max: contivconf.Duration(200 * time.Millisecond)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, cfg contivconf.Config, vpp *sim.VPP, load string) *running {
	t.Helper()
	return startWith(t, Options{Config: cfg, Dataplane: Simulated(vpp), LoadFile: load, LogOutput: io.Discard})
}

// startWith is start with the agent's options given whole.
func startWith(t *testing.T, opts Options) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	r := &running{a: a, stop: func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}}
	t.Cleanup(func() { _ = r.stop() })
	waitFor(t, "agent ready", a.Ready)
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var cartVIP = sim.Packet{
	Src:     netip.MustParseAddr("10.1.1.77"),
	Dst:     netip.MustParseAddr("10.96.10.30"),
	Proto:   sim.TCP,
	DstPort: 8080,
	Ingress: simulatedMainNIC,
}

func backends(res sim.Result) []string {
	var out []string
	for _, b := range res.Backends {
		out = append(out, b.IP.String())
	}
	return out
}

// TestAgentEndToEnd runs the whole agent against etcd and the simulated VPP:
// the example cluster is programmed, an endpoint change costs one call, a
// VPP restart is repaired, and an agent restart changes nothing in VPP.
func TestAgentEndToEnd(t *testing.T) {
	srv := etcdtest.Start(t)
	vpp := sim.New(sim.Options{})
	cfg := testConfig(t, srv.Endpoint(), t.TempDir())
	r := start(t, cfg, vpp, "../deploy/examples/cluster.yaml")

	res := vpp.Translate(cartVIP)
	if res.Verdict != sim.Translated || strings.Join(backends(res), ",") != "10.1.1.4,10.1.3.4" || res.Affinity != 3600 {
		t.Fatalf("shop/cart VIP: %+v", res)
	}
	for _, b := range res.Backends {
		if b.Probability != 0.5 {
			t.Errorf("backend %s probability %v, want 0.5", b.IP, b.Probability)
		}
	}

	// A headless service and an ExternalName service are not rendered, and
	// the local pod's interface is both a frontend and a backend.
	ids := map[string]bool{}
	for _, s := range r.a.Processor().Services() {
		ids[s.ID.String()] = true
	}
	if !ids["shop/cart"] || ids["shop/orders"] {
		t.Errorf("services: %v", ids)
	}
	if role := r.a.Processor().Interfaces()["tap-shop-cart-5f6d7c8b9-q1r2s"]; role != sr.RoleFrontend|sr.RoleBackend {
		t.Errorf("cart pod interface role %v, want frontend+backend", role)
	}

	// One endpoint added in etcd: one binary-API call.
	cli := srv.Client()
	ctx := context.Background()
	listing, err := kubestate.List(ctx, cli, kubestate.ResEndpointSlice)
	if err != nil {
		t.Fatal(err)
	}
	var slice *kubestate.EndpointSlice
	for _, o := range listing.Objects {
		if s := o.(*kubestate.EndpointSlice); s.Name == "cart-m3p7x" {
			slice = s
		}
	}
	if slice == nil {
		t.Fatal("cart slice not in etcd")
	}
	next := *slice
	next.Endpoints = append(append([]kubestate.Endpoint(nil), slice.Endpoints...), kubestate.EndpointFields{
		Addresses: []string{"10.1.2.9"}, Ready: true, Serving: true, NodeName: "node-2",
	}.Endpoint())
	// Ready waited for this node's own addresses to come back from etcd:
	// its NodePorts are programmed, and only the endpoint change is counted.
	for _, ip := range []string{"192.168.16.1", "192.168.56.101"} {
		np := sim.Packet{Src: cartVIP.Src, Dst: netip.MustParseAddr(ip), Proto: sim.TCP, DstPort: 30080, Ingress: simulatedMainNIC}
		if res := vpp.Translate(np); res.Verdict != sim.Translated {
			t.Fatalf("ready without the NodePort on %s: %+v", ip, res)
		}
	}
	vpp.ResetCalls()
	if err := kubestate.NewWriter(cli, nil).Put(ctx, &next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "third cart backend", func() bool { return len(vpp.Translate(cartVIP).Backends) == 3 })
	if w := vpp.Writes(); w != 1 {
		t.Errorf("adding one endpoint made %d writes, want 1: %v", w, vpp.CallCounts())
	}

	// REST and probes.
	h := r.a.HTTPHandler()
	for path, want := range map[string]string{"/readyz": "ok", "/v1/services": "cart", "/v1/status": "SIMULATED",
		"/metrics": "contiv_nat44_mappings", "/metrics ": "contiv_nat44_sessions_cut_total 0",
		"/metrics  ": "contiv_nat44_frontends_subset 0"} {
		path = strings.TrimSpace(path)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s = %d, body lacks %q", path, rec.Code, want)
		}
	}

	// VPP restarts empty: the agent reprograms all of it.
	want := vpp.Snapshot().Lines()
	vpp.Restart()
	if len(vpp.Snapshot().Lines()) >= len(want) {
		t.Fatal("the simulated VPP kept its state across a restart")
	}
	waitFor(t, "reprogrammed after VPP restart", func() bool {
		return strings.Join(vpp.Snapshot().Lines(), "\n") == strings.Join(want, "\n")
	})

	// The agent restarts against a VPP that holds the right state: no write.
	if err := r.stop(); err != nil {
		t.Fatalf("agent stop: %v", err)
	}
	vpp.ResetCalls()
	r2 := start(t, cfg, vpp, "")
	if r2.a.NodeID() != 1 {
		t.Errorf("restarted agent has node ID %d, want 1", r2.a.NodeID())
	}
	if w := vpp.Writes(); w != 0 {
		t.Errorf("agent restart made %d writes: %v", w, vpp.CallCounts())
	}
	if got := vpp.Snapshot().Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("state changed across agent restart:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTagParser(t *testing.T) {
	for _, c := range []struct {
		format, tag, ns, pod string
		ok                   bool
	}{
		{"{{namespace}}/{{pod}}", "shop/cart-1", "shop", "cart-1", true},
		{"k8s:{{pod}}@{{namespace}}", "k8s:web-0@prod", "prod", "web-0", true},
		{"{{namespace}}/{{pod}}", "no-slash", "", "", false},
		{"{{namespace}}/{{pod}}", "", "", "", false},
	} {
		ns, pod, ok := newTagParser(c.format).parse(c.tag)
		if ns != c.ns || pod != c.pod || ok != c.ok {
			t.Errorf("format %q tag %q: got %q %q %v", c.format, c.tag, ns, pod, ok)
		}
	}
}

// Each interface change becomes an InterfaceEvent, with the index of the
// interface that lost its configuration, and then the lookups of the pods
// its old and new tags name: the loss must reach the renderers first.
func TestInterfaceEvents(t *testing.T) {
	tags := newTagParser("{{namespace}}/{{pod}}")
	web := vpp.Interface{Index: 5, Name: "tap-web", Tag: "shop/web"}
	moved := vpp.Interface{Index: 9, Name: "tap-web", Tag: "shop/web-2"}
	changes := []vpp.InterfaceChange{
		{Interface: web, Kind: vpp.Deleted},
		{Interface: web, Kind: vpp.Added},
		{Interface: moved, Old: web, Kind: vpp.Changed},
		{Interface: web, Old: web, Kind: vpp.Changed, Restarted: true},
		{Interface: vpp.Interface{Index: 1, Name: "GigabitEthernet0/8/0"}, Kind: vpp.Added},
		// Gone with a VPP that restarted: its full resync reads VPP again,
		// and the re-created host-eth1 may take index 2 again.
		{Interface: vpp.Interface{Index: 2, Name: "host-eth1"}, Kind: vpp.Deleted, Restarted: true},
	}
	var got []string
	for _, ev := range interfaceEvents(changes, tags) {
		switch e := ev.(type) {
		case *service.InterfaceEvent:
			got = append(got, fmt.Sprintf("interface %s lost=%v@%d", e.Name, e.Lost, e.LostIndex))
		case *service.PodInterfaceEvent:
			got = append(got, "pod "+e.Namespace+"/"+e.Name)
		default:
			t.Fatalf("unexpected event %T", ev)
		}
	}
	want := []string{
		"interface tap-web lost=true@5", "pod shop/web",
		"interface tap-web lost=false@5", "pod shop/web",
		"interface tap-web lost=true@5", "pod shop/web-2", "pod shop/web",
		"interface tap-web lost=false@5", "pod shop/web",
		"interface GigabitEthernet0/8/0 lost=false@1",
		"interface host-eth1 lost=false@2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAgentWaitsForVPPAlive checks that an agent whose VPP is not there yet
// serves its probes (alive, not ready) and stops cleanly.
func TestAgentWaitsForVPPAlive(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := testConfig(t, srv.Endpoint(), dir)
	cfg.VPP.Simulate = contivconf.SimulateNever
	cfg.VPP.Socket = filepath.Join(dir, "api.sock") // no VPP listens there
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTP.Address = ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, Options{Config: cfg, LogOutput: io.Discard})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	get := func(path string) int {
		resp, err := http.Get("http://" + cfg.HTTP.Address + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "/healthz served", func() bool { return get("/healthz") == http.StatusOK })
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz without VPP = %d, want 503", code)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestAgentReportsBusyHTTPAddress checks that a failure to serve is not
// lost while the agent waits for VPP.
func TestAgentReportsBusyHTTPAddress(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := testConfig(t, srv.Endpoint(), dir)
	cfg.VPP.Simulate = contivconf.SimulateNever
	cfg.VPP.Socket = filepath.Join(dir, "api.sock")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg.HTTP.Address = busy.Addr().String()
	a, err := New(context.Background(), Options{Config: cfg, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "http") {
		t.Errorf("Run with a busy HTTP address: %v", err)
	}
}

// The configuration's 0 turns the controller's batch hold and history
// check off; the controller itself takes 0 for its default.
func TestOffWhenZero(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, -1}, {5 * time.Millisecond, 5 * time.Millisecond}, {30 * time.Second, 30 * time.Second}} {
		if got := offWhenZero(c.in); got != c.want {
			t.Errorf("offWhenZero(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
