package deploy

import (
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// largeCluster is the overlay with the etcd gRPC proxy tier, and
// largeClusterTLS the same on an external etcd over TLS.
const (
	largeCluster    = "overlays/large-cluster"
	largeClusterTLS = "overlays/large-cluster-tls"
)

// renderLarge builds a large-cluster overlay: two DaemonSets (the agents
// and the proxies), which index refuses. Only largeCluster runs etcd in
// the cluster.
func renderLarge(t *testing.T, dir string) (*manifests, *appsv1.DaemonSet) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl not installed: cannot build %s", dir)
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	m := &manifests{configMaps: map[string]*corev1.ConfigMap{}}
	var proxy *appsv1.DaemonSet
	for _, obj := range decodeStream(t, dir, out) {
		m.objs = append(m.objs, obj)
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			switch o.Name {
			case "contiv-agent":
				m.agent = o
			case "contiv-etcd-proxy":
				proxy = o
			default:
				t.Errorf("unexpected DaemonSet %s", o.Name)
			}
		case *appsv1.Deployment:
			m.ksr = o
		case *appsv1.StatefulSet:
			m.etcd = o
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Service:
			m.services = append(m.services, o)
		}
	}
	if m.agent == nil || m.ksr == nil || (m.etcd == nil) == (dir == largeCluster) || proxy == nil {
		t.Fatalf("missing workload: agent=%v ksr=%v etcd=%v proxy=%v", m.agent != nil, m.ksr != nil, m.etcd != nil, proxy != nil)
	}
	return m, proxy
}

// TestLargeClusterAgentsWatchThroughProxies: in the large-cluster overlay
// the agents' etcd endpoints are the proxies, every one of them at the
// port a proxy listens on, by IP; the proxies run on the host network of
// the labelled nodes before the network is up, from the members' image,
// and reach the members the reflector writes to; nobody else points at a
// member only the proxies should.
func TestLargeClusterAgentsWatchThroughProxies(t *testing.T) {
	m, proxy := renderLarge(t, largeCluster)
	cfg := m.agentConfig(t)
	boot := m.configMaps["contiv-bootstrap"]
	if boot == nil {
		t.Fatal("no contiv-bootstrap ConfigMap")
	}
	proxies, members := splitList(boot.Data["etcdProxyEndpoints"]), splitList(boot.Data["etcdEndpoints"])
	if len(proxies) < 2 || !slices.Equal(cfg.Etcd.Endpoints, proxies) {
		t.Fatalf("agents' etcd endpoints %v, want the proxies %v (two at least)", cfg.Etcd.Endpoints, proxies)
	}

	spec := proxy.Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("proxies: hostNetwork %v, dnsPolicy %q: want the host network and the node's resolver", spec.HostNetwork, spec.DNSPolicy)
	}
	if spec.NodeSelector["contiv.dev/etcd-proxy"] != "true" {
		t.Errorf("proxies' nodeSelector %v: want the labelled nodes (contiv.dev/etcd-proxy=true)", spec.NodeSelector)
	}
	for _, taint := range preNetworkTaints {
		if !tolerates(spec.Tolerations, taint, corev1.TaintEffectNoSchedule) {
			t.Errorf("proxies do not tolerate %s:NoSchedule: the agents wait for them", taint)
		}
	}
	c := spec.Containers[0]
	if c.Image != m.etcd.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("proxy image %s, members' %s: want the members' etcd", c.Image, m.etcd.Spec.Template.Spec.Containers[0].Image)
	}
	r := m.resolve(t, c)
	if len(r.args) < 3 || !slices.Equal(r.args[:3], []string{"etcd", "grpc-proxy", "start"}) {
		t.Fatalf("proxy command %q: want etcd grpc-proxy start", r.args)
	}
	eps, _ := flagValue(r.args, "endpoints")
	if !slices.Equal(splitList(eps), members) {
		t.Errorf("proxies reach %v, the members are %v", splitList(eps), members)
	}
	ksr := m.resolve(t, m.ksr.Spec.Template.Spec.Containers[0])
	if ksrEps, _ := flagValue(ksr.args, "etcd-endpoints"); !slices.Equal(splitList(ksrEps), members) {
		t.Errorf("contiv-ksr writes to %v: want the members %v", splitList(ksrEps), members)
	}
	listen, _ := flagValue(r.args, "listen-addr")
	_, port, ok := strings.Cut(listen, ":")
	if !ok || !strings.HasPrefix(listen, "0.0.0.0:") {
		t.Fatalf("proxy --listen-addr=%s: want 0.0.0.0:PORT (the node's addresses)", listen)
	}
	serviceCIDR := cfg.IPAM.ServiceCIDR
	for _, ep := range proxies {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatalf("proxy endpoint %q: %v", ep, err)
		}
		checkBootstrapAddress(t, "etcdProxyEndpoints", ep, u, serviceCIDR)
		if u.Port() != port || slices.Contains(members, ep) {
			t.Errorf("proxy endpoint %s: want port %s, not a member", ep, port)
		}
	}
	if got := c.Ports; len(got) != 1 || got[0].ContainerPort != mustPort(t, port) {
		t.Errorf("proxy ports %v: want %s", got, port)
	}
	metrics, _ := flagValue(r.args, "metrics-addr")
	mu, err := url.Parse(metrics)
	if err != nil || mu.Hostname() != "127.0.0.1" {
		t.Errorf("proxy --metrics-addr=%s: want 127.0.0.1 (not on the node's addresses)", metrics)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != mu.Port() {
		t.Errorf("proxy readiness probe %+v: want /health on the metrics address", p)
	}
}

func mustPort(t *testing.T, s string) int32 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		t.Fatalf("port %q: %v", s, err)
	}
	return int32(n)
}
