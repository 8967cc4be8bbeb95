package e2evpp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// cluster is the Kubernetes state the suite writes into etcd, as
// Kubernetes YAML loaded with `contivctl load --prune` (the reflector's
// output, written by the operator's tool).
type cluster struct {
	s        *suite
	services map[string]*service
	loads    int
	draining map[string]bool // nodes tainted ToBeDeletedByClusterAutoscaler
}

// service is a Service with its one EndpointSlice.
type service struct {
	name        string
	typ         string // ClusterIP (default), NodePort, LoadBalancer
	clusterIP   string
	ports       []svcPort
	externalIPs []string
	lbIP        string
	etp, itp    string // Cluster (default) or Local
	affinity    bool   // ClientIP
	sourceRange []string
	hcNodePort  int // healthCheckNodePort (LoadBalancer, externalTrafficPolicy Local)
	endpoints   []endpoint
}

type svcPort struct {
	name       string
	protocol   string // TCP, UDP
	port       int
	targetPort int
	nodePort   int
}

// endpoint is a backend pod; terminating ones are not ready, serving.
type endpoint struct {
	pod         *pod
	terminating bool
}

func newCluster(s *suite) *cluster {
	return &cluster{s: s, services: map[string]*service{}, draining: map[string]bool{}}
}

// put adds or replaces a service.
func (c *cluster) put(sv *service) { c.services[sv.name] = sv }

// load writes the whole state into etcd, pruning what it no longer names.
func (c *cluster) load(t *testing.T) {
	t.Helper()
	c.loads++
	f := c.s.artifact(fmt.Sprintf("cluster-%03d.yaml", c.loads))
	if err := os.WriteFile(f, []byte(c.yaml()), 0o644); err != nil {
		t.Fatal(err)
	}
	// On a loaded 2-CPU machine etcd may miss contivctl's 5 s: tried thrice.
	var out []byte
	var err error
	for range 3 {
		out, err = exec.Command(filepath.Join(env.bin, "contivctl"), "load", "-f", f, "--prune", "--etcd", strings.TrimPrefix(c.s.etcd.Endpoint(), "http://")).CombinedOutput()
		if err == nil {
			return
		}
	}
	t.Fatalf("contivctl load %s: %v: %s", f, err, out)
}

// yaml is the state as Kubernetes manifests.
func (c *cluster) yaml() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n---")
	for _, n := range c.s.nodes {
		w("apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n    kubernetes.io/hostname: %s", n.name, n.name)
		w("spec:\n  podCIDR: %s\n  podCIDRs: [%s]", n.podSubnet(), n.podSubnet())
		if c.draining[n.name] {
			w("  taints:\n  - key: ToBeDeletedByClusterAutoscaler\n    value: \"1700000000\"\n    effect: NoSchedule")
		}
		w("status:\n  addresses:\n  - type: InternalIP\n    address: %s\n  - type: Hostname\n    address: %s\n---", n.ip(), n.name)
		for _, p := range n.pods {
			w("apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: %s\n  name: %s\n  labels:\n    app: %s", p.namespace, p.name, p.name)
			w("spec:\n  nodeName: %s\n  containers:\n  - name: c\n    image: e2evpp", n.name)
			w("status:\n  phase: Running\n  hostIP: %s\n  podIP: %s\n  podIPs:\n  - ip: %s\n---", n.ip(), p.ip, p.ip)
		}
	}
	names := make([]string, 0, len(c.services))
	for name := range c.services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sv := c.services[name]
		typ := sv.typ
		if typ == "" {
			typ = "ClusterIP"
		}
		w("apiVersion: v1\nkind: Service\nmetadata:\n  namespace: default\n  name: %s\nspec:\n  type: %s", sv.name, typ)
		w("  clusterIP: %s\n  clusterIPs: [%s]", sv.clusterIP, sv.clusterIP)
		if sv.etp != "" {
			w("  externalTrafficPolicy: %s", sv.etp)
		}
		if sv.itp != "" {
			w("  internalTrafficPolicy: %s", sv.itp)
		}
		if sv.hcNodePort != 0 {
			w("  healthCheckNodePort: %d", sv.hcNodePort)
		}
		if sv.affinity {
			w("  sessionAffinity: ClientIP\n  sessionAffinityConfig:\n    clientIP:\n      timeoutSeconds: 600")
		}
		if len(sv.externalIPs) > 0 {
			w("  externalIPs: [%s]", strings.Join(sv.externalIPs, ", "))
		}
		if len(sv.sourceRange) > 0 {
			w("  loadBalancerSourceRanges: [%s]", strings.Join(sv.sourceRange, ", "))
		}
		w("  ports:")
		for _, p := range sv.ports {
			w("  - name: %s\n    protocol: %s\n    port: %d\n    targetPort: %d", p.name, p.protocol, p.port, p.targetPort)
			if p.nodePort != 0 {
				w("    nodePort: %d", p.nodePort)
			}
		}
		if sv.lbIP != "" {
			w("status:\n  loadBalancer:\n    ingress:\n    - ip: %s", sv.lbIP)
		}
		w("---")
		w("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  namespace: default\n  name: %s-1", sv.name)
		w("  labels:\n    kubernetes.io/service-name: %s\naddressType: IPv4\nports:", sv.name)
		for _, p := range sv.ports {
			w("- name: %s\n  protocol: %s\n  port: %d", p.name, p.protocol, p.targetPort)
		}
		if len(sv.endpoints) == 0 {
			w("endpoints: []")
		} else {
			w("endpoints:")
		}
		for _, e := range sv.endpoints {
			w("- addresses: [%s]\n  nodeName: %s", e.pod.ip, e.pod.node.name)
			w("  conditions: {ready: %t, serving: true, terminating: %t}", !e.terminating, e.terminating)
			w("  targetRef: {kind: Pod, namespace: %s, name: %s}", e.pod.namespace, e.pod.name)
		}
		w("---")
	}
	return b.String()
}
