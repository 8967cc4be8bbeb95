package agent

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestAgentDrainAndKubeProxyMetrics runs the whole agent: the cluster
// autoscaler's to-be-deleted taint on this node's Node fails the proxy's
// /healthz and leaves /livez up until the taint goes (KEP-3836), the
// status view says so, and kube-proxy's metrics report the syncs, the
// changes, the health answers and the Local service without a local
// endpoint.
func TestAgentDrainAndKubeProxyMetrics(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := testConfig(t, srv.Endpoint(), dir)
	proxy := freePort(t)
	manifest := filepath.Join(dir, "lb.yaml")
	if err := os.WriteFile(manifest, []byte(`
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
  type: NodePort
  clusterIP: 10.96.0.80
  externalTrafficPolicy: Local
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
- addresses: [10.1.2.8]
  nodeName: node-2
`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startWith(t, Options{
		Config: cfg, Dataplane: Simulated(sim.New(sim.Options{})), LoadFile: manifest, LogOutput: io.Discard,
		HealthCheckAddress: loopback, ProxyHealthAddress: "127.0.0.1:" + strconv.Itoa(int(proxy)),
	}).a

	get := func(path string) int {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(int(proxy)) + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	w := kubestate.NewWriter(a.etcd, nil)
	putNode := func(taints ...kubestate.Taint) {
		t.Helper()
		n := &kubestate.Node{Name: "node-1", PodCIDRs: []string{"10.1.1.0/24"}, Taints: taints}
		if err := w.Apply(t.Context(), []kubestate.Op{kubestate.PutOp(n)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "/healthz 200", func() bool { return get("/healthz") == http.StatusOK })
	putNode(kubestate.Taint{Key: kubestate.TaintToBeDeleted, Value: "1764000000", Effect: "NoSchedule"})
	waitFor(t, "/healthz 503 while the node is to be deleted", func() bool { return get("/healthz") == http.StatusServiceUnavailable })
	if code := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez %d while draining, want 200", code)
	}
	if ph := statusView(a).ProxyHealth; ph == nil || ph.NodeEligible || !ph.Healthy {
		t.Errorf("status view's proxy health while draining: %+v", ph)
	}
	putNode(kubestate.Taint{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"})
	waitFor(t, "/healthz 200 once the taint is gone", func() bool { return get("/healthz") == http.StatusOK })

	// An EndpointSlice change with a trigger time: one partial sync, one
	// endpoint change, one network programming observation.
	slice := &kubestate.EndpointSlice{
		Namespace: "shop", Name: "gateway-a", ServiceName: "gateway", AddressType: "IPv4",
		Ports:       []kubestate.EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}},
		Endpoints:   []kubestate.Endpoint{kubestate.EndpointFields{Addresses: []string{"10.1.2.9"}, Ready: true, Serving: true, NodeName: "node-2"}.Endpoint()},
		TriggerTime: time.Now().UTC(),
	}
	if err := w.Apply(t.Context(), []kubestate.Op{kubestate.PutOp(slice)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "latency observed", func() bool { return a.latency.View().Observed == 1 })

	value := func(name string, labels ...string) float64 {
		t.Helper()
		mfs, err := a.registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		metrics:
			for _, m := range mf.GetMetric() {
				for i := 0; i+1 < len(labels); i += 2 {
					if !hasLabel(m, labels[i], labels[i+1]) {
						continue metrics
					}
				}
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		t.Errorf("%s%v not exported", name, labels)
		return -1
	}
	v4 := []string{"ip_family", "IPv4"}
	if v := value("kubeproxy_sync_full_proxy_rules_duration_seconds", v4...); v < 1 {
		t.Errorf("full syncs %v, want the startup's at least", v)
	}
	if v := value("kubeproxy_sync_partial_proxy_rules_duration_seconds", v4...); v < 1 {
		t.Errorf("partial syncs %v, want the changes' at least", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_last_timestamp_seconds", v4...); v <= 0 {
		t.Errorf("last sync timestamp %v", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", v4...); v <= 0 {
		t.Errorf("last queued timestamp %v", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_endpoint_changes_total"); v != 1 {
		t.Errorf("endpoint changes %v, want 1 (the startup listing is no change)", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_endpoint_changes_pending"); v != 0 {
		t.Errorf("endpoint changes pending %v after the apply", v)
	}
	if v := value("kubeproxy_network_programming_duration_seconds", v4...); v != 1 {
		t.Errorf("network programming observations %v, want 1", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_no_local_endpoints_total", "ip_family", "IPv4", "traffic_policy", "external"); v != 1 {
		t.Errorf("no local endpoints (external) %v, want 1", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_no_local_endpoints_total", "ip_family", "IPv4", "traffic_policy", "internal"); v != 0 {
		t.Errorf("no local endpoints (internal) %v, want 0", v)
	}
	if v := value("kubeproxy_proxy_healthz_total", "code", "503"); v < 1 {
		t.Errorf("healthz 503 answers %v", v)
	}
	if v := value("kubeproxy_proxy_livez_total", "code", "200"); v < 1 {
		t.Errorf("livez 200 answers %v", v)
	}
	if v := value("kubeproxy_sync_proxy_rules_nftables_sync_failures_total", v4...); v != 0 {
		t.Errorf("sync failures %v", v)
	}
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}
