package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
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
	var body hcResponse
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
	if v := a.latency.view(); v.Observed != 0 {
		t.Errorf("latency observed before any change: %+v", v)
	}
}
