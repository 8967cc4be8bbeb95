package syncmetrics

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// kube-proxy's metrics, under kube-proxy's names and with kube-proxy's
// meanings, beside the agent's own contiv_* metrics, so that dashboards and
// alerts written for kube-proxy work unchanged. What a "sync" is here: one
// apply step of the controller (the renderer's diff and its VPP calls);
// full when it follows a resync, partial otherwise. One apply programs
// both families, so the ip_family metrics carry the same value for each
// family the node serves (IPv4, and IPv6 with an IPv6 node address), as a
// dual-stack kube-proxy's two proxiers would each report theirs.

// ipFamilyLabel is kube-proxy's label for the IP family of a proxier.
const ipFamilyLabel = "ip_family"

// syncBuckets are kube-proxy's sync duration buckets: 1 ms doubling
// up to about 16 s.
var syncBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// KubeProxy counts what kube-proxy counts about its syncs. As a
// controller handler it counts the Service and EndpointSlice changes taken
// in and notes when a sync was queued; as the applier it wraps the apply
// step and times it.
type KubeProxy struct {
	families []string
	now      func() time.Time
	// start is when the apply being observed started.
	start time.Time

	syncAll, syncFull, syncPartial *prometheus.HistogramVec
	lastQueued, lastSync           *prometheus.GaugeVec
	failures                       *prometheus.CounterVec
	serviceChanges, endpointsChgs  prometheus.Counter
	servicePending, endpointsPend  prometheus.GaugeFunc

	mu sync.Mutex
	// services and endpoints are the services whose Service, or whose
	// EndpointSlices, changed since the last successful apply
	// (kube-proxy's pending changes are per service too).
	services, endpoints map[sr.ServiceID]struct{}
}

var (
	_ controller.Handler       = (*KubeProxy)(nil)
	_ controller.ApplyObserver = (*KubeProxy)(nil)
)

// NewKubeProxy returns the metrics; families are the IP families the
// node serves ("IPv4", "IPv6").
func NewKubeProxy(families []string) *KubeProxy {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: syncBuckets}, []string{ipFamilyLabel})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{ipFamilyLabel})
	}
	m := &KubeProxy{
		families: families, now: time.Now,
		services: map[sr.ServiceID]struct{}{}, endpoints: map[sr.ServiceID]struct{}{},
		syncAll: hist("kubeproxy_sync_proxy_rules_duration_seconds",
			"Time of one apply step (kube-proxy: SyncProxyRules latency), full or partial."),
		syncFull: hist("kubeproxy_sync_full_proxy_rules_duration_seconds",
			"Time of one full apply step, after a resync (kube-proxy: full resyncs)."),
		syncPartial: hist("kubeproxy_sync_partial_proxy_rules_duration_seconds",
			"Time of one partial apply step, of the changes only (kube-proxy: partial resyncs)."),
		lastQueued: gauge("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
			"When a change needing an apply was last taken in (unix seconds)."),
		lastSync: gauge("kubeproxy_sync_proxy_rules_last_timestamp_seconds",
			"When an apply step last succeeded (unix seconds)."),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
			Help: "Failed apply steps (kube-proxy nftables mode's sync failures; here VPP refused or failed a call)."}, []string{ipFamilyLabel}),
		serviceChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_service_changes_total",
			Help: "Service changes taken in."}),
		endpointsChgs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_total",
			Help: "EndpointSlice changes taken in."}),
	}
	m.servicePending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_service_changes_pending",
		Help: "Services whose Service changed and is not yet applied."}, func() float64 { return m.pending(m.services) })
	m.endpointsPend = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
		Help: "Services whose EndpointSlices changed and are not yet applied."}, func() float64 { return m.pending(m.endpoints) })
	// Every family's series exist from the start (at zero), so that rates
	// and alerts work before the first failure.
	for _, f := range families {
		m.syncAll.WithLabelValues(f)
		m.syncFull.WithLabelValues(f)
		m.syncPartial.WithLabelValues(f)
		m.lastQueued.WithLabelValues(f)
		m.lastSync.WithLabelValues(f)
		m.failures.WithLabelValues(f)
	}
	return m
}

// Collectors are the metrics to register.
func (m *KubeProxy) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.syncAll, m.syncFull, m.syncPartial, m.lastQueued, m.lastSync, m.failures,
		m.serviceChanges, m.endpointsChgs, m.servicePending, m.endpointsPend}
}

func (m *KubeProxy) pending(set map[sr.ServiceID]struct{}) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(len(set))
}

// Name implements controller.Handler.
func (m *KubeProxy) Name() string { return "kube-proxy-metrics" }

// HandlesEvent implements controller.Handler: Service and EndpointSlice
// changes.
func (m *KubeProxy) HandlesEvent(ev controller.Event) bool {
	c, ok := ev.(*controller.ChangeEvent)
	return ok && (c.Key.Resource == kubestate.ResService || c.Key.Resource == kubestate.ResEndpointSlice)
}

// Resync implements controller.Handler: a full sync is queued.
func (m *KubeProxy) Resync(context.Context, *controller.ResyncEvent) error {
	m.queued()
	return nil
}

// Update implements controller.Handler.
func (m *KubeProxy) Update(_ context.Context, ev controller.Event) error {
	c := ev.(*controller.ChangeEvent)
	m.mu.Lock()
	if c.Key.Resource == kubestate.ResService {
		m.serviceChanges.Inc()
		m.services[serviceID(c.Key)] = struct{}{}
	} else {
		m.endpointsChgs.Inc()
		m.endpoints[sliceService(c)] = struct{}{}
	}
	m.mu.Unlock()
	m.queued()
	return nil
}

// serviceID is the service a Service key names.
func serviceID(k kubestate.Key) sr.ServiceID {
	return sr.ServiceID{Namespace: k.Namespace, Name: k.Name}
}

// sliceService is the service an EndpointSlice change belongs to (the
// slice's own name when neither value names one).
func sliceService(c *controller.ChangeEvent) sr.ServiceID {
	for _, o := range []kubestate.Object{c.New, c.Prev} {
		if s, ok := o.(*kubestate.EndpointSlice); ok && s != nil && s.ServiceName != "" {
			return sr.ServiceID{Namespace: c.Key.Namespace, Name: s.ServiceName}
		}
	}
	return serviceID(c.Key)
}

func (m *KubeProxy) queued() {
	t := unixSeconds(m.now())
	for _, f := range m.families {
		m.lastQueued.WithLabelValues(f).Set(t)
	}
}

// ApplyStarting implements controller.ApplyObserver: the apply's timing
// starts.
func (m *KubeProxy) ApplyStarting(bool) { m.start = m.now() }

// Applied implements controller.ApplyObserver: it times the apply.
func (m *KubeProxy) Applied(full bool, err error) {
	end := m.now()
	d := end.Sub(m.start).Seconds()
	kind := m.syncPartial
	if full {
		kind = m.syncFull
	}
	for _, f := range m.families {
		m.syncAll.WithLabelValues(f).Observe(d)
		kind.WithLabelValues(f).Observe(d)
		if err != nil {
			m.failures.WithLabelValues(f).Inc()
		} else {
			m.lastSync.WithLabelValues(f).Set(unixSeconds(end))
		}
	}
	if err == nil {
		m.mu.Lock()
		clear(m.services)
		clear(m.endpoints)
		m.mu.Unlock()
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// noLocalEndpoints counts, per IP family of their cluster IPs and per
// policy ("internal", "external"), the service ports with a Local traffic
// policy and no local endpoint: kube-proxy's
// kubeproxy_sync_proxy_rules_no_local_endpoints_total, which counts
// service ports too. The external policy counts only for ports reachable
// from outside (a node port, an external or a load-balancer IP). Pure: the
// collector reads the services at scrape time.
func noLocalEndpoints(services []*sr.ContivService) map[[2]string]int {
	out := map[[2]string]int{}
	for _, s := range services {
		fams := families(s.ClusterIPs)
		for _, p := range s.Ports {
			if len(p.LocalBackends) > 0 {
				continue
			}
			external := len(s.ExternalIPs) > 0 || p.NodePort != 0
			for _, fam := range fams {
				if s.InternalPolicy == sr.PolicyLocal {
					out[[2]string{fam, "internal"}]++
				}
				if s.ExternalPolicy == sr.PolicyLocal && external {
					out[[2]string{fam, "external"}]++
				}
			}
		}
	}
	return out
}

// families names the IP families of addrs, IPv4 first.
func families(addrs []netip.Addr) []string {
	var v4, v6 bool
	for _, a := range addrs {
		v4, v6 = v4 || a.Unmap().Is4(), v6 || !a.Unmap().Is4()
	}
	var out []string
	if v4 {
		out = append(out, "IPv4")
	}
	if v6 {
		out = append(out, "IPv6")
	}
	return out
}

// NoLocalCollector exports noLocalEndpoints of the processor's services.
type NoLocalCollector struct {
	services func() []*sr.ContivService
	families []string
	desc     *prometheus.Desc
}

// NewNoLocalCollector counts over services, for each of families.
func NewNoLocalCollector(services func() []*sr.ContivService, families []string) *NoLocalCollector {
	return &NoLocalCollector{services: services, families: families, desc: prometheus.NewDesc(
		"kubeproxy_sync_proxy_rules_no_local_endpoints_total",
		"Service ports with a Local traffic policy and no local endpoint, by IP family and policy (internal, external).",
		[]string{ipFamilyLabel, "traffic_policy"}, nil)}
}

func (c *NoLocalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reports every family the node serves and both policies, zeros
// included, as kube-proxy does.
func (c *NoLocalCollector) Collect(ch chan<- prometheus.Metric) {
	n := noLocalEndpoints(c.services())
	for _, f := range c.families {
		for _, p := range []string{"internal", "external"} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n[[2]string{f, p}]), f, p)
		}
	}
}
