package syncmetrics

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// vecCount is the number of observations of h's series for family.
func vecCount(t *testing.T, h *prometheus.HistogramVec, family string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues(family).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestProxyMetricsSync: kube-proxy's sync metrics follow the changes taken
// in and the apply steps: totals count every change, pending counts the
// services waiting for a successful apply, the durations go to full or
// partial, the timestamps move, failures count, for every family served.
func TestProxyMetricsSync(t *testing.T) {
	inner := &fakeApplier{}
	m := NewKubeProxy([]string{"IPv4", "IPv6"})
	app := observed{inner: inner, obs: []controller.ApplyObserver{m}}
	clock := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m.now = func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
	ctx := context.Background()
	svc := func(name string) *controller.ChangeEvent {
		k := kubestate.Key{Resource: kubestate.ResService, Namespace: "ns", Name: name}
		return &controller.ChangeEvent{Key: k, New: &kubestate.Service{Namespace: "ns", Name: name}}
	}
	slice := func(name, service string, deleted bool) *controller.ChangeEvent {
		k := kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: "ns", Name: name}
		s := &kubestate.EndpointSlice{Namespace: "ns", Name: name, ServiceName: service}
		if deleted {
			return &controller.ChangeEvent{Key: k, Prev: s}
		}
		return &controller.ChangeEvent{Key: k, New: s}
	}
	node := &controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResNode, Name: "n"}}
	if m.HandlesEvent(node) || !m.HandlesEvent(svc("a")) || !m.HandlesEvent(slice("a-1", "a", false)) {
		t.Fatal("HandlesEvent: Service and EndpointSlice changes only")
	}
	for _, ev := range []*controller.ChangeEvent{svc("a"), svc("b"), svc("a"), slice("a-1", "a", false), slice("a-2", "a", false), slice("b-1", "b", true)} {
		if err := m.Update(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	queued := unixSeconds(clock)
	check := func(what string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("service changes total", testutil.ToFloat64(m.serviceChanges), 3)
	check("endpoint changes total", testutil.ToFloat64(m.endpointsChgs), 3)
	check("service changes pending", testutil.ToFloat64(m.servicePending), 2)
	check("endpoint changes pending (per service)", testutil.ToFloat64(m.endpointsPend), 2)
	for _, f := range m.families {
		check("last queued "+f, testutil.ToFloat64(m.lastQueued.WithLabelValues(f)), queued)
		check("last sync "+f, testutil.ToFloat64(m.lastSync.WithLabelValues(f)), 0)
	}

	// A failed partial apply: counted and timed, nothing cleared.
	inner.err = errors.New("vpp says no")
	if err := app.Apply(ctx, false); !errors.Is(err, inner.err) {
		t.Fatalf("Apply: %v", err)
	}
	check("service changes pending after a failure", testutil.ToFloat64(m.servicePending), 2)
	// A successful full apply.
	inner.err = nil
	if err := app.Apply(ctx, true); err != nil {
		t.Fatal(err)
	}
	synced := unixSeconds(clock)
	check("service changes pending after success", testutil.ToFloat64(m.servicePending), 0)
	check("endpoint changes pending after success", testutil.ToFloat64(m.endpointsPend), 0)
	for _, f := range m.families {
		check("failures "+f, testutil.ToFloat64(m.failures.WithLabelValues(f)), 1)
		check("last sync "+f, testutil.ToFloat64(m.lastSync.WithLabelValues(f)), synced)
		check("sync count "+f, float64(vecCount(t, m.syncAll, f)), 2)
		check("full sync count "+f, float64(vecCount(t, m.syncFull, f)), 1)
		check("partial sync count "+f, float64(vecCount(t, m.syncPartial, f)), 1)
	}
	// A resync queues a sync.
	if err := m.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncPeriodic}); err != nil {
		t.Fatal(err)
	}
	check("last queued after a resync", testutil.ToFloat64(m.lastQueued.WithLabelValues("IPv4")), unixSeconds(clock))
	if n := testutil.CollectAndCount(m.failures); n != 2 {
		t.Errorf("%d failure series, want one per family", n)
	}
}

// TestNoLocalEndpoints: service ports under a Local policy without a
// local endpoint, by family and policy, as kube-proxy counts them.
func TestNoLocalEndpoints(t *testing.T) {
	ip := netip.MustParseAddr
	b := []sr.Backend{{IP: sr.IPOf(ip("10.1.1.5")), Port: 8080}}
	port := func(nodePort uint16, local []sr.Backend) sr.Port {
		return sr.Port{Name: "p", Protocol: sr.TCP, Port: 80, NodePort: nodePort, Backends: b, LocalBackends: local}
	}
	tests := []struct {
		name string
		svc  sr.ContivService
		want map[[2]string]int
	}{
		{"cluster policies", sr.ContivService{ClusterIPs: []netip.Addr{ip("10.96.0.1")}, Ports: []sr.Port{port(30000, nil)}}, map[[2]string]int{}},
		{"internal Local, no local endpoint", sr.ContivService{ClusterIPs: []netip.Addr{ip("10.96.0.1")}, InternalPolicy: sr.PolicyLocal,
			Ports: []sr.Port{port(0, nil)}}, map[[2]string]int{{"IPv4", "internal"}: 1}},
		{"internal Local with a local endpoint", sr.ContivService{ClusterIPs: []netip.Addr{ip("10.96.0.1")}, InternalPolicy: sr.PolicyLocal,
			Ports: []sr.Port{port(0, b)}}, map[[2]string]int{}},
		{"external Local, NodePort, dual-stack, two ports", sr.ContivService{ClusterIPs: []netip.Addr{ip("10.96.0.1"), ip("fd00::1")}, ExternalPolicy: sr.PolicyLocal,
			Ports: []sr.Port{port(30000, nil), port(30001, nil)}}, map[[2]string]int{{"IPv4", "external"}: 2, {"IPv6", "external"}: 2}},
		{"external Local, not reachable from outside", sr.ContivService{ClusterIPs: []netip.Addr{ip("10.96.0.1")}, ExternalPolicy: sr.PolicyLocal,
			Ports: []sr.Port{port(0, nil)}}, map[[2]string]int{}},
		{"external Local, LoadBalancer IP", sr.ContivService{ClusterIPs: []netip.Addr{ip("fd00::1")}, ExternalIPs: []netip.Addr{ip("2001:db8::1")},
			ExternalPolicy: sr.PolicyLocal, InternalPolicy: sr.PolicyLocal, Ports: []sr.Port{port(0, nil), port(0, b)}},
			map[[2]string]int{{"IPv6", "external"}: 1, {"IPv6", "internal"}: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := noLocalEndpoints([]*sr.ContivService{&tt.svc})
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%v = %d, want %d (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
