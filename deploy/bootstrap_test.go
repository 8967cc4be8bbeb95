package deploy

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Taints a node carries before its network works; whatever must run for the
// network to work tolerates them.
var preNetworkTaints = []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/network-unavailable"}

// Everything that must run before Services work — etcd, the reflector and
// the agents — is on the host network, resolves names without cluster DNS,
// tolerates a node whose network is not up yet, and addresses what it talks
// to by IP, never by a Service name, a cluster DNS name or a ClusterIP.
// Development variants are exempt: their cluster has Services of its own.
func TestBootstrapNeedsNoService(t *testing.T) {
	for _, v := range variants {
		if v.dev {
			continue
		}
		t.Run(v.dir, func(t *testing.T) {
			m := render(t, v)
			serviceCIDR := m.agentConfig(t).IPAM.ServiceCIDR
			for name, spec := range m.podSpecs() {
				if !spec.HostNetwork {
					t.Errorf("%s: not on the host network: it needs the network it is to bring up", name)
				}
				if spec.DNSPolicy != corev1.DNSDefault {
					t.Errorf("%s: dnsPolicy %q: want Default (the node's resolver; cluster DNS is a Service)", name, spec.DNSPolicy)
				}
				if !strings.HasPrefix(name, "DaemonSet/") { // the DaemonSet controller adds these itself
					for _, taint := range preNetworkTaints {
						if !tolerates(spec.Tolerations, taint, corev1.TaintEffectNoSchedule) {
							t.Errorf("%s: does not tolerate %s:NoSchedule: it would wait for the network it brings up", name, taint)
						}
					}
				}
				for _, c := range spec.Containers {
					r := m.resolve(t, c)
					var values []string
					for k, v := range r.env {
						values = append(values, k+"="+v)
					}
					values = append(values, r.args...)
					for _, val := range values {
						for _, u := range urlsIn(val) {
							checkBootstrapAddress(t, name+" "+c.Name, val, u, serviceCIDR)
						}
					}
				}
			}
			for _, s := range m.services {
				if s.Spec.ClusterIP != corev1.ClusterIPNone {
					t.Errorf("Service %s has a ClusterIP: nothing of the bootstrap may depend on one", s.Name)
				}
			}
			ksr := m.resolve(t, m.ksr.Spec.Template.Spec.Containers[0])
			if master, _ := flagValue(ksr.args, "master"); master == "" {
				t.Error("contiv-ksr has no --master: in-cluster it would reach the API through the kubernetes Service")
			}
		})
	}
}

func tolerates(ts []corev1.Toleration, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(ts, func(t corev1.Toleration) bool {
		keyOK := t.Key == key || t.Key == "" && t.Operator == corev1.TolerationOpExists
		return keyOK && (t.Effect == effect || t.Effect == "")
	})
}

// urlsIn finds the URLs in a value (comma-separated lists and NAME=URL
// lists included).
func urlsIn(val string) []*url.URL {
	var out []*url.URL
	for f := range strings.FieldsFuncSeq(val, func(r rune) bool { return r == ',' || r == '=' || r == ' ' }) {
		if !strings.Contains(f, "://") {
			continue
		}
		if u, err := url.Parse(f); err == nil {
			out = append(out, u)
		}
	}
	return out
}

func checkBootstrapAddress(t *testing.T, where, val string, u *url.URL, serviceCIDR netip.Prefix) {
	t.Helper()
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		t.Errorf("%s: %q: %s is a name: the bootstrap must address it by IP", where, val, u.Host)
		return
	}
	if serviceCIDR.Contains(ip) {
		t.Errorf("%s: %q: %s is in the service CIDR %s: a ClusterIP works only once Services do", where, val, ip, serviceCIDR)
	}
}

// The in-cluster etcd's members are named after their nodes and reached at
// the addresses the agents and the reflector use; all start at once (none
// is ready before there is a quorum) and keep their data on their node.
func TestEtcdMembersMatchEndpoints(t *testing.T) {
	m := render(t, variants[0])
	boot := m.configMaps["contiv-bootstrap"]
	if boot == nil {
		t.Fatal("no contiv-bootstrap ConfigMap")
	}
	if m.etcd.Spec.PodManagementPolicy != "Parallel" {
		t.Errorf("etcd podManagementPolicy %q: want Parallel (an ordered start waits for a ready member 0, which needs a quorum)", m.etcd.Spec.PodManagementPolicy)
	}
	c := m.etcd.Spec.Template.Spec.Containers[0]
	r := m.resolve(t, c)
	clientPort := listenPort(t, r.args, "listen-client-urls")
	peerPort := listenPort(t, r.args, "listen-peer-urls")
	if name, _ := flagValue(c.Command, "name"); name != "$(NODE_NAME)" {
		t.Errorf("etcd --name=%s: want $(NODE_NAME) (members are named after their nodes)", name)
	}
	members := map[string]string{} // host → member name
	initial, _ := flagValue(r.args, "initial-cluster")
	for _, mem := range splitList(initial) {
		name, peer, ok := strings.Cut(mem, "=")
		u, err := url.Parse(peer)
		if !ok || err != nil {
			t.Fatalf("--initial-cluster member %q", mem)
		}
		if u.Port() != peerPort {
			t.Errorf("member %s: peer port %s, etcd listens on %s", name, u.Port(), peerPort)
		}
		members[u.Hostname()] = name
	}
	if len(members) != int(*m.etcd.Spec.Replicas) {
		t.Errorf("%d initial members for %d replicas", len(members), *m.etcd.Spec.Replicas)
	}
	var hosts []string
	for _, ep := range splitList(boot.Data["etcdEndpoints"]) {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		if u.Port() != clientPort {
			t.Errorf("endpoint %s: etcd listens for clients on %s", ep, clientPort)
		}
		if members[u.Hostname()] == "" {
			t.Errorf("endpoint %s is no initial member's address", ep)
		}
		hosts = append(hosts, u.Hostname())
	}
	if len(hosts) != len(members) {
		t.Errorf("%d endpoints for %d members", len(hosts), len(members))
	}
	if sel := m.etcd.Spec.Template.Spec.NodeSelector; sel["contiv.dev/etcd"] != "true" {
		t.Errorf("etcd nodeSelector %v: want the contiv.dev/etcd=true nodes", sel)
	}
	for _, vol := range m.etcd.Spec.Template.Spec.Volumes {
		if vol.HostPath == nil {
			t.Errorf("etcd volume %s is not on its node: a member must find its data after a power cycle", vol.Name)
		}
	}
}

func listenPort(t *testing.T, args []string, name string) string {
	t.Helper()
	v, ok := flagValue(args, name)
	if !ok {
		t.Fatalf("etcd has no --%s", name)
	}
	u, err := url.Parse(splitList(v)[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.Atoi(u.Port()); err != nil {
		t.Fatalf("--%s=%s: %v", name, v, err)
	}
	return u.Port()
}
