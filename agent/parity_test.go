package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/agent/healthcheck"
	"contiv.dev/vpp/agent/syncmetrics"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestAgentHealthChecksOverHTTP runs the whole agent with the health
// checks served on 127.0.0.1: a LoadBalancer service under the Local
// policy answers 200 with its local endpoint count on its
// healthCheckNodePort, the proxy health endpoint answers 200, and the
// latency view is served.
func TestAgentHealthChecksOverHTTP(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := testConfig(t, srv.Endpoint(), dir)
	hc, proxy := freePort(t), freePort(t)
	manifest := filepath.Join(dir, "lb.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`
apiVersion: v1
kind: Node
metadata:
  name: node-1
spec:
  podCIDR: 10.1.1.0/24
---
apiVersion: v1
kind: Service
metadata:
  namespace: shop
  name: gateway
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.80
  externalTrafficPolicy: Local
  healthCheckNodePort: %d
  ports:
  - {name: http, port: 80, targetPort: 8080, nodePort: 30800}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: shop
  name: gateway-a
  labels: {kubernetes.io/service-name: gateway}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.1.1.8]
  nodeName: node-1
- addresses: [10.1.2.8]
  nodeName: node-2
`, hc)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, Options{
		Config: cfg, Dataplane: Simulated(sim.New(sim.Options{})), LoadFile: manifest, LogOutput: io.Discard,
		HealthCheckAddress: loopback, ProxyHealthAddress: "127.0.0.1:" + strconv.Itoa(int(proxy)),
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = a.Run(ctx)
	}()
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "agent ready", a.Ready)

	var code int
	var body healthcheck.ServiceResponse
	waitFor(t, "health check answered", func() bool {
		code, body, _ = hcGet(t, hc)
		return code != 0
	})
	if code != http.StatusOK || body.LocalEndpoints != 1 || body.Service.Name != "gateway" || !body.ServiceProxyHealthy {
		t.Errorf("health check: %d %+v", code, body)
	}
	waitFor(t, "proxy health answered", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(int(proxy)) + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz %d", resp.StatusCode)
		}
		return true
	})
	rec := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/latency", nil))
	var v syncmetrics.LatencyView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil || v.Observed != 0 {
		t.Errorf("/v1/latency: %d %v %s (nothing observed before any change)", rec.Code, err, rec.Body)
	}

	// An EndpointSlice change with a trigger time is observed once, after
	// VPP took it; the same trigger time delivered again is not.
	slice := &kubestate.EndpointSlice{
		Namespace: "shop", Name: "gateway-a", ServiceName: "gateway", AddressType: "IPv4",
		Ports:       []kubestate.EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}},
		Endpoints:   []kubestate.Endpoint{kubestate.EndpointFields{Addresses: []string{"10.1.1.8"}, Ready: true, Serving: true, NodeName: "node-1"}.Endpoint()},
		TriggerTime: time.Now().UTC(),
	}
	w := kubestate.NewWriter(a.etcd, nil)
	if err := w.Apply(ctx, []kubestate.Op{kubestate.PutOp(slice)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "latency observed", func() bool { return a.latency.View().Observed == 1 })
	again := *slice
	again.Endpoints = append(slices.Clone(slice.Endpoints), kubestate.EndpointFields{Addresses: []string{"10.1.1.9"}, Ready: true, Serving: true, NodeName: "node-1"}.Endpoint())
	if err := w.Apply(ctx, []kubestate.Op{kubestate.PutOp(&again)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "repeated trigger time seen", func() bool { return a.latency.View().Repeated == 1 })
	if v := a.latency.View(); v.Observed != 1 || v.Window != 1 {
		t.Errorf("latency after a repeated trigger time: %+v", v)
	}
}
