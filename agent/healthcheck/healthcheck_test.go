package healthcheck

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	sr "contiv.dev/vpp/servicerenderer"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// hcGet asks the health check on port; code 0 when nothing answers.
func hcGet(t *testing.T, port uint16) (int, ServiceResponse, http.Header) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(int(port)) + "/")
	if err != nil {
		return 0, ServiceResponse{}, nil
	}
	defer resp.Body.Close()
	var body ServiceResponse
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return resp.StatusCode, body, resp.Header
}

func lbService(name string, hc uint16, local ...sr.Backend) *sr.ContivService {
	return &sr.ContivService{
		ID:                  sr.ServiceID{Namespace: "shop", Name: name},
		ExternalPolicy:      sr.PolicyLocal,
		HealthCheckNodePort: hc,
		Ports: []sr.Port{
			{Name: "http", Protocol: sr.TCP, Port: 80, NodePort: 30080, LocalBackends: local},
			{Name: "https", Protocol: sr.TCP, Port: 443, NodePort: 30443, LocalBackends: local},
		},
	}
}

func localBackend(ip string, ready bool) sr.Backend {
	return sr.Backend{IP: sr.IPOf(netip.MustParseAddr(ip)), Port: 8080, Local: true, Ready: ready, Serving: true, Terminating: !ready}
}

// TestServiceHealthOverHTTP: real HTTP requests to the health-check port,
// through add, update, proxy health, delete and a busy port.
func TestServiceHealthOverHTTP(t *testing.T) {
	var proxyOK atomic.Bool
	proxyOK.Store(true)
	h := NewServices(nil, loopback, proxyOK.Load)
	defer h.Close()
	port := freePort(t)

	// Two ready local endpoints (counted once each across the two
	// ports) and a terminating one, which does not count.
	web := lbService("web", port, localBackend("10.1.1.3", true), localBackend("10.1.1.4", true), localBackend("10.1.1.5", false))
	if err := h.AddService(web); err != nil {
		t.Fatal(err)
	}
	code, body, hdr := hcGet(t, port)
	if code != http.StatusOK || body.LocalEndpoints != 2 || body.Service.Namespace != "shop" || body.Service.Name != "web" || !body.ServiceProxyHealthy {
		t.Fatalf("ready endpoints: %d %+v", code, body)
	}
	if hdr.Get("Content-Type") != "application/json" || hdr.Get("X-Load-Balancing-Endpoint-Weight") != "2" {
		t.Errorf("headers %v", hdr)
	}

	// Only a terminating local endpoint: the node fails the check, so the
	// load balancer drains it.
	draining := lbService("web", port, localBackend("10.1.1.5", false))
	if err := h.UpdateService(web, draining); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := hcGet(t, port); code != http.StatusServiceUnavailable || body.LocalEndpoints != 0 {
		t.Fatalf("no ready local endpoint: %d %+v", code, body)
	}

	// The proxy unhealthy: 503 even with endpoints.
	if err := h.UpdateService(draining, web); err != nil {
		t.Fatal(err)
	}
	proxyOK.Store(false)
	if code, body, _ := hcGet(t, port); code != http.StatusServiceUnavailable || body.ServiceProxyHealthy || body.LocalEndpoints != 2 {
		t.Fatalf("proxy unhealthy: %d %+v", code, body)
	}
	proxyOK.Store(true)

	// Under the Cluster policy there is no health check: the port closes.
	cluster := *web
	cluster.ExternalPolicy = sr.PolicyCluster
	if err := h.UpdateService(web, &cluster); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := hcGet(t, port); code != 0 {
		t.Fatalf("Cluster policy: port still answers %d", code)
	}
	if err := h.UpdateService(&cluster, web); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := hcGet(t, port); code != http.StatusOK {
		t.Fatalf("back to Local: %d", code)
	}
	if err := h.DeleteService(web); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := hcGet(t, port); code != 0 {
		t.Fatalf("deleted: port still answers %d", code)
	}

	// A busy port is not served; it is once free, on the next resync.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bport := uint16(busy.Addr().(*net.TCPAddr).Port)
	api := lbService("api", bport, localBackend("10.1.1.6", true))
	if err := h.Resync(&sr.ResyncData{Services: []*sr.ContivService{api}}); err != nil {
		t.Fatal(err)
	}
	if got := h.Ports(); len(got) != 0 {
		t.Fatalf("serving %v on a busy port", got)
	}
	busy.Close()
	if err := h.Resync(&sr.ResyncData{Services: []*sr.ContivService{api}}); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := hcGet(t, bport); code != http.StatusOK || body.Service.Name != "api" || body.LocalEndpoints != 1 {
		t.Fatalf("after the port was freed: %d %+v", code, body)
	}

	// After Close nothing answers and no change opens a port.
	h.Close()
	if code, _, _ := hcGet(t, bport); code != 0 {
		t.Fatalf("closed: port still answers %d", code)
	}
	if err := h.AddService(web); err != nil {
		t.Fatal(err)
	}
	if got := h.Ports(); len(got) != 0 {
		t.Fatalf("closed server opened %v", got)
	}
}

func TestHealthCheckOf(t *testing.T) {
	if _, ok := healthCheckOf(lbService("web", 0)); ok {
		t.Error("service without a health-check port has a health check")
	}
	s := lbService("web", 32000, localBackend("10.1.1.3", true))
	s.ExternalPolicy = sr.PolicyCluster
	if _, ok := healthCheckOf(s); ok {
		t.Error("Cluster policy has a health check")
	}
	hc, ok := healthCheckOf(lbService("web", 32000, localBackend("10.1.1.3", true), localBackend("10.1.1.4", false)))
	if !ok || hc.port != 32000 || hc.local != 1 {
		t.Errorf("got %+v %v", hc, ok)
	}
}

// TestProxyHealthOverHTTP: /healthz and /livez answer 200 while VPP is
// connected and no change waits longer than the timeout, 503 otherwise.
func TestProxyHealthOverHTTP(t *testing.T) {
	var connected atomic.Bool
	connected.Store(true)
	inner := &fakeApplier{}
	p := NewProxy("node-1", time.Minute, connected.Load)
	app := observed{inner: inner, obs: []controller.ApplyObserver{p}}
	// The clock is read by the server's goroutines: atomic.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	p.now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	get := func(path string) (int, ProxyStatus) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s ProxyStatus
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, s
	}
	both := func(want int, why string) {
		t.Helper()
		for _, path := range []string{"/healthz", "/livez"} {
			if code, s := get(path); code != want {
				t.Errorf("%s %s: %d %+v, want %d", why, path, code, s, want)
			}
		}
	}
	both(http.StatusOK, "nothing waiting")

	ctx := context.Background()
	ev := &controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResService, Namespace: "a", Name: "b"}}
	if !p.HandlesEvent(ev) || p.HandlesEvent(&controller.ShutdownEvent{}) {
		t.Fatal("HandlesEvent: every change, not the shutdown")
	}
	_ = p.Update(ctx, ev)
	advance(30 * time.Second)
	both(http.StatusOK, "a change waiting less than the timeout")
	advance(31 * time.Second)
	both(http.StatusServiceUnavailable, "a change waiting longer than the timeout")

	// A failing apply leaves the change waiting; a successful one clears it.
	inner.err = errors.New("vpp says no")
	if err := app.Apply(ctx, false); err == nil {
		t.Fatal("inner error not returned")
	}
	both(http.StatusServiceUnavailable, "after a failed apply")
	inner.err = nil
	if err := app.Apply(ctx, false); err != nil {
		t.Fatal(err)
	}
	code, s := get("/healthz")
	if now := p.now(); code != http.StatusOK || !s.LastUpdated.Equal(now) || !s.PendingSince.IsZero() || !s.CurrentTime.Equal(now) {
		t.Errorf("after a successful apply: %d %+v", code, s)
	}
	// Long after the last apply, with nothing waiting, still healthy.
	advance(time.Hour)
	both(http.StatusOK, "idle")

	connected.Store(false)
	both(http.StatusServiceUnavailable, "VPP disconnected")
	if _, s := get("/healthz"); s.VPPConnected {
		t.Error("vppConnected true")
	}
	if inner.calls != 2 {
		t.Errorf("inner applier called %d times, want 2", inner.calls)
	}
}

// TestProxyHealthDrain: while this node's Node carries the cluster
// autoscaler's to-be-deleted taint, /healthz fails and /livez stays up
// (KEP-3836); another node's taint, other taints and the taint's removal
// leave /healthz up; a resync reads the taint from the snapshot. Every
// answer is counted by code under kube-proxy's metric names.
func TestProxyHealthDrain(t *testing.T) {
	p := NewProxy("node-1", time.Minute, nil)
	app := observed{inner: &fakeApplier{}, obs: []controller.ApplyObserver{p}}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	code := func(path string) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	node := func(name string, taints ...string) *kubestate.Node {
		n := &kubestate.Node{Name: name}
		for _, k := range taints {
			n.Taints = append(n.Taints, kubestate.Taint{Key: k, Effect: "NoSchedule"})
		}
		return n
	}
	ctx := context.Background()
	change := func(n *kubestate.Node, name string) {
		t.Helper()
		ev := &controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResNode, Name: name}}
		if n != nil {
			ev.New = n
		}
		if err := p.Update(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := app.Apply(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name        string
		do          func()
		healthz     int
		wantDrained bool
	}{
		{"untainted", func() { change(node("node-1"), "node-1") }, http.StatusOK, false},
		{"another taint", func() { change(node("node-1", "node.kubernetes.io/unschedulable"), "node-1") }, http.StatusOK, false},
		{"another node to be deleted", func() { change(node("node-2", kubestate.TaintToBeDeleted), "node-2") }, http.StatusOK, false},
		{"this node to be deleted", func() {
			change(node("node-1", "node.kubernetes.io/unschedulable", kubestate.TaintToBeDeleted), "node-1")
		}, http.StatusServiceUnavailable, true},
		{"taint removed (scale-down cancelled)", func() { change(node("node-1"), "node-1") }, http.StatusOK, false},
		{"resync with the taint", func() {
			snap := &controller.Snapshot{Objects: map[kubestate.Key]kubestate.Object{
				{Resource: kubestate.ResNode, Name: "node-1"}: node("node-1", kubestate.TaintToBeDeleted)}}
			if err := p.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncRelist, State: snap}); err != nil {
				t.Fatal(err)
			}
		}, http.StatusServiceUnavailable, true},
		{"node deleted", func() { change(nil, "node-1") }, http.StatusOK, false},
	}
	drained := 0
	for _, st := range steps {
		st.do()
		if got := code("/healthz"); got != st.healthz {
			t.Errorf("%s: /healthz %d, want %d", st.name, got, st.healthz)
		}
		if got := code("/livez"); got != http.StatusOK {
			t.Errorf("%s: /livez %d, want 200", st.name, got)
		}
		if p.Status().NodeEligible == st.wantDrained {
			t.Errorf("%s: nodeEligible %v", st.name, !st.wantDrained)
		}
		if st.wantDrained {
			drained++
		}
	}
	if got := testutil.ToFloat64(p.healthzTotal.WithLabelValues("503")); got != float64(drained) {
		t.Errorf("kubeproxy_proxy_healthz_total{code=503} = %v, want %d", got, drained)
	}
	if got := testutil.ToFloat64(p.healthzTotal.WithLabelValues("200")); got != float64(len(steps)-drained) {
		t.Errorf("kubeproxy_proxy_healthz_total{code=200} = %v, want %d", got, len(steps)-drained)
	}
	if got := testutil.ToFloat64(p.livezTotal.WithLabelValues("200")); got != float64(len(steps)) {
		t.Errorf("kubeproxy_proxy_livez_total{code=200} = %v, want %d", got, len(steps))
	}
}

// TestProxyHealthServe: serve listens until its context ends, and retries
// a busy address.
func TestProxyHealthServe(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := busy.Addr().String()
	p := NewProxy("node-1", 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Serve(ctx, discardLogger(), addr)
	}()
	busy.Close() // the retry (every proxyRetry) takes the address
	deadline := time.Now().Add(3 * proxyRetry)
	for {
		resp, err := http.Get("http://" + addr + "/livez")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("livez %d", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestServiceHealthLeavesProxyHealthAlone: the service processor hands
// every renderer the node proxy health pseudo-service; the health-check
// server must not take its port (the proxy health server listens there).
func TestServiceHealthLeavesProxyHealthAlone(t *testing.T) {
	if hc, ok := healthCheckOf(service.ProxyHealthService(10256)); ok {
		t.Errorf("the proxy health pseudo-service has a service health check: %+v", hc)
	}
}

// fakeApplier fails while err is set and counts its calls.
type fakeApplier struct {
	err   error
	calls int
}

func (f *fakeApplier) Apply(context.Context, bool) error {
	f.calls++
	return f.err
}

// observed is inner's apply step watched by obs, as the controller runs
// it (controller.Observe).
type observed struct {
	inner controller.Applier
	obs   []controller.ApplyObserver
}

func (o observed) Apply(ctx context.Context, full bool) error {
	return controller.Observe(o.obs, full, func() error { return o.inner.Apply(ctx, full) })
}
