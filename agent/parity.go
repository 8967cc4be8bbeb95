package agent

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/agent/healthcheck"
	"contiv.dev/vpp/agent/syncmetrics"
)

// parity holds the parts that give the agent kube-proxy's behaviour beyond
// the NAT44 mappings: the services' health-check server and the node-level
// proxy health endpoint.
type parity struct {
	// proxyAddr and hcAddr are Options.ProxyHealthAddress and
	// Options.HealthCheckAddress.
	proxyAddr string
	hcAddr    netip.Addr
	hc        *healthcheck.Services
	proxy     *healthcheck.Proxy
	metrics   *syncmetrics.KubeProxy // kube-proxy's sync metrics
}

// buildProxyParity makes kube-proxy's sync metrics and the proxy health,
// both observers of the apply step.
func (a *Agent) buildProxyParity() {
	a.par.metrics = syncmetrics.NewKubeProxy(a.ipFamilies())
	a.par.proxy = healthcheck.NewProxy(a.cfg.NodeName, 0, a.vppConnected)
}

// ipFamilies are the IP families this node serves: IPv4, and IPv6 with
// an IPv6 node address.
func (a *Agent) ipFamilies() []string {
	if a.nodeIP6().IsValid() {
		return []string{"IPv4", "IPv6"}
	}
	return []string{"IPv4"}
}

// parityCollectors are kube-proxy's metrics the agent exports beside its
// own (docs/operations.md lists them), and the latency histograms.
func (a *Agent) parityCollectors() []prometheus.Collector {
	return slices.Concat(a.par.metrics.Collectors(), a.par.proxy.Collectors(), a.latency.Collectors(a.ipFamilies()),
		[]prometheus.Collector{syncmetrics.NewNoLocalCollector(a.proc.Services, a.ipFamilies())})
}

// healthCheckTarget is where VPP sends the health checks of this node's
// IPs: the host end of the host interconnect.
func (a *Agent) healthCheckTarget() netip.Addr { return a.fixed().HealthCheckTarget() }

// buildServiceHealth makes the health-check server: it listens on
// Options.HealthCheckAddress, or on the health-check target.
func (a *Agent) buildServiceHealth() {
	addr := a.par.hcAddr
	if !addr.IsValid() {
		addr = a.healthCheckTarget()
	}
	a.par.hc = healthcheck.NewServices(a.log.With("part", "healthcheck"), addr, func() bool {
		return a.par.proxy == nil || a.par.proxy.Healthy()
	})
}

// vppConnected tells whether the VPP connection is up.
func (a *Agent) vppConnected() bool { return a.conn.Status().Connected }

// runParity serves the proxy health endpoint and stops the health-check
// server when ctx ends.
func (a *Agent) runParity(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		a.par.hc.Close()
	}()
	addr := a.par.proxyAddr
	if addr == "" {
		addr = DefaultProxyHealthAddress
	}
	if addr == ProxyHealthOff {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.par.proxy.Serve(ctx, a.log.With("part", "proxy-health"), addr)
	}()
}

// ProxyHealthOff as Options.ProxyHealthAddress serves no proxy health
// endpoint.
const ProxyHealthOff = "off"

// DefaultProxyHealthAddress is where the node-level proxy health endpoint
// listens unless configured otherwise: kube-proxy's healthz port, which
// cloud load balancers probe.
const DefaultProxyHealthAddress = ":10256"

// sourceRangesCollector exports how many services have
// loadBalancerSourceRanges the agent cannot enforce.
type sourceRangesCollector struct {
	a    *Agent
	desc *prometheus.Desc
}

func newSourceRangesCollector(a *Agent) *sourceRangesCollector {
	return &sourceRangesCollector{a: a, desc: prometheus.NewDesc("contiv_service_source_ranges_not_enforced",
		"LoadBalancer services whose loadBalancerSourceRanges are NOT enforced (cnat cannot filter by source; NAT44 enforces them with an input ACL when VPP loads acl_plugin.so).", nil, nil)}
}

func (c *sourceRangesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sourceRangesCollector) Collect(ch chan<- prometheus.Metric) {
	n := 0
	if c.a.sourceRangesNotEnforced() != "" {
		for _, s := range c.a.proc.Services() {
			if len(s.SourceRanges) > 0 {
				n++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
