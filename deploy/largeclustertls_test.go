package deploy

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestLargeClusterTLSOnBothSidesOfTheProxies: in the large-cluster-tls
// overlay every etcd URL is https; the agents reach the proxies, the
// proxies and the reflector the members. The proxies show the members the
// client certificate the reflector shows (same Secret, same keys) and
// trust the same CA; to the agents they serve a key pair of their own
// Secret and ask for client certificates of the CA the agents' own
// certificates come from. The in-process test of that chain is
// internal/etcdproxy TestTLSChain.
func TestLargeClusterTLSOnBothSidesOfTheProxies(t *testing.T) {
	m, proxy := renderLarge(t, largeClusterTLS)
	cfg := m.agentConfig(t)
	boot := m.configMaps["contiv-bootstrap"]
	proxies, members := splitList(boot.Data["etcdProxyEndpoints"]), splitList(boot.Data["etcdEndpoints"])
	if len(proxies) < 2 || !slices.Equal(cfg.Etcd.Endpoints, proxies) {
		t.Fatalf("agents' etcd endpoints %v, want the proxies %v (two at least)", cfg.Etcd.Endpoints, proxies)
	}
	for _, ep := range append(slices.Clone(proxies), members...) {
		if u, err := url.Parse(ep); err != nil || u.Scheme != "https" {
			t.Errorf("etcd endpoint %q: want https", ep)
		}
	}

	spec := proxy.Spec.Template.Spec
	c := spec.Containers[0]
	r := m.resolve(t, c)
	if eps, _ := flagValue(r.args, "endpoints"); !slices.Equal(splitList(eps), members) {
		t.Errorf("proxies reach %v, the members are %v", splitList(eps), members)
	}
	ksr := m.resolve(t, m.ksr.Spec.Template.Spec.Containers[0])
	if eps, _ := flagValue(ksr.args, "etcd-endpoints"); !slices.Equal(splitList(eps), members) {
		t.Errorf("contiv-ksr writes to %v: want the members %v", splitList(eps), members)
	}

	agentSpec := m.agent.Spec.Template.Spec
	agentC := agentSpec.Containers[0]
	agentCA := secretFile(t, agentSpec, agentC, cfg.Etcd.TLS.CAFile)
	// To the members, as the reflector.
	for flag, ksrFlag := range map[string]string{"cacert": "etcd-ca-file", "cert": "etcd-cert-file", "key": "etcd-key-file"} {
		f, ok := flagValue(r.args, flag)
		kf, kok := flagValue(ksr.args, ksrFlag)
		if !ok || !kok {
			t.Errorf("proxy --%s %v, contiv-ksr --%s %v: want both", flag, ok, ksrFlag, kok)
			continue
		}
		got, want := secretFile(t, spec, c, f), secretFile(t, m.ksr.Spec.Template.Spec, m.ksr.Spec.Template.Spec.Containers[0], kf)
		if got != want {
			t.Errorf("proxy --%s is %s, contiv-ksr's --%s %s: want the same", flag, got, ksrFlag, want)
		}
	}
	// To the agents: a key pair of its own, the agents' CA for theirs.
	for _, flag := range []string{"cert-file", "key-file"} {
		f, ok := flagValue(r.args, flag)
		if !ok {
			t.Errorf("proxy has no --%s: it would serve the agents in plain text", flag)
			continue
		}
		if got := secretFile(t, spec, c, f); !strings.HasPrefix(got, "contiv-etcd-proxy-tls/") {
			t.Errorf("proxy --%s is %s: want the Secret contiv-etcd-proxy-tls", flag, got)
		}
	}
	if f, ok := flagValue(r.args, "trusted-ca-file"); !ok {
		t.Error("proxy has no --trusted-ca-file: it would take agents without a client certificate")
	} else if got := secretFile(t, spec, c, f); got != agentCA {
		t.Errorf("proxy --trusted-ca-file is %s: want the agents' CA %s", got, agentCA)
	}
	for _, f := range []string{cfg.Etcd.TLS.CertFile, cfg.Etcd.TLS.KeyFile} {
		if f == "" {
			t.Fatal("the agents show no client certificate")
		}
		secretFile(t, agentSpec, agentC, f)
	}
	if metrics, _ := flagValue(r.args, "metrics-addr"); !strings.HasPrefix(metrics, "http://127.0.0.1:") {
		t.Errorf("proxy --metrics-addr=%s: its probes read plain HTTP on 127.0.0.1", metrics)
	}
}

// secretFile is "secret/key" of the Secret key that container c sees at
// path (a Secret volume mounted whole: its keys are the file names).
func secretFile(t *testing.T, spec corev1.PodSpec, c corev1.Container, path string) string {
	t.Helper()
	v, rel := mountedVolume(spec, c, path, func(v corev1.Volume) bool { return v.Secret != nil && len(v.Secret.Items) == 0 })
	if v == nil {
		t.Fatalf("%s (container %s) is not in a mounted Secret", path, c.Name)
	}
	return v.Secret.SecretName + "/" + rel
}
