package main

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"contiv.dev/vpp/plugins/ksr"
)

func testEnv(vars map[string]string) environment {
	return environment{
		getenv:   func(k string) string { return vars[k] },
		hostname: func() (string, error) { return "host-1", nil },
	}
}

func TestDefaults(t *testing.T) {
	var out bytes.Buffer
	o, err := parseOptions([]string{"--etcd-endpoints=http://etcd-0:2379, http://etcd-1:2379,"}, testEnv(nil), &out)
	require.NoError(t, err)
	require.Equal(t, []string{"http://etcd-0:2379", "http://etcd-1:2379"}, o.etcdEndpoints)
	require.Equal(t, "host-1", o.identity, "identity falls back to the host name")
	require.Equal(t, "", o.kubeconfig, "in-cluster")
	require.Equal(t, ":9191", o.httpAddr)
	require.Equal(t, slog.LevelInfo, o.logLevel)
	require.Equal(t, "text", o.logFormat)
	require.Equal(t, time.Hour, o.releasedIDQuarantine)
	require.Equal(t, 10*time.Minute, o.resync())
	require.Equal(t, &ksr.Election{
		Namespace: "contiv-system", Name: "contiv-ksr",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}, o.election())
}

func TestEnvironmentAndFlags(t *testing.T) {
	env := testEnv(map[string]string{"POD_NAME": "contiv-ksr-abc", "POD_NAMESPACE": "kube-system", "KUBECONFIG": "/k/config"})
	o, err := parseOptions([]string{"--etcd-endpoints=e:2379"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "contiv-ksr-abc", o.identity)
	require.Equal(t, "kube-system", o.leaseNamespace)
	require.Equal(t, "/k/config", o.kubeconfig)

	o, err = parseOptions([]string{
		"--etcd-endpoints=e:2379", "--identity=me", "--lease-namespace=ns", "--lease-name=l",
		"--log-level=debug", "--log-format=json", "--http-addr=127.0.0.1:0", "--leader-elect=false",
		"--etcd-ca-file=ca", "--etcd-cert-file=c", "--etcd-key-file=k", "--released-id-quarantine=0", "--resync-interval=0",
	}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "me", o.identity)
	require.Nil(t, o.election())
	require.Equal(t, ksr.DefaultLeaderTTL, o.leaderKeyTTL)
	require.Negative(t, o.resync(), "0 disables the periodic sweep")
	require.Equal(t, slog.LevelDebug, o.logLevel)
	require.Equal(t, [3]string{"ca", "c", "k"}, [3]string{o.etcdCA, o.etcdCert, o.etcdKey})
	var logs bytes.Buffer
	o.logger(&logs).Debug("hello", "k", "v")
	require.Contains(t, logs.String(), `"msg":"hello"`)
}

func TestBadOptionsAreRefusedByName(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "--etcd-endpoints is required"},
		{[]string{"--etcd-endpoints= , "}, "--etcd-endpoints is required"},
		{[]string{"--etcd-endpoints=e", "--log-level=loud"}, `--log-level "loud"`},
		{[]string{"--etcd-endpoints=e", "--log-format=xml"}, `--log-format "xml"`},
		{[]string{"--etcd-endpoints=e", "--renew-deadline=20s"}, "--renew-deadline 20s: must be less than --lease-duration 15s"},
		{[]string{"--etcd-endpoints=e", "--retry-period=0s"}, "--retry-period 0s: must be positive"},
		{[]string{"--etcd-endpoints=e", "--released-id-quarantine=-1s"}, "--released-id-quarantine -1s"},
		{[]string{"--etcd-endpoints=e", "--leader-key-ttl=0"}, "--leader-key-ttl 0s: must be positive"},
		{[]string{"--etcd-endpoints=e", "--resync-interval=-1m"}, "--resync-interval -1m0s: must not be negative"},
		{[]string{"--etcd-endpoints=e", "--lease-name="}, "--lease-namespace and --lease-name"},
		{[]string{"--etcd-endpoints=e", "extra"}, `unexpected arguments ["extra"]`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := parseOptions(c.args, testEnv(nil), &bytes.Buffer{})
			require.ErrorIs(t, err, errUsage)
			require.ErrorContains(t, err, c.want)
		})
	}
	env := testEnv(nil)
	env.hostname = func() (string, error) { return "", errors.New("no uts") }
	_, err := parseOptions([]string{"--etcd-endpoints=e"}, env, &bytes.Buffer{})
	require.ErrorContains(t, err, "no --identity")
}

func TestRunExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"--help"}, testEnv(nil), &stderr))
	require.Contains(t, stderr.String(), "-etcd-endpoints")
	stderr.Reset()
	require.Equal(t, 2, run([]string{"--no-such-flag"}, testEnv(nil), &stderr))
	stderr.Reset()
	require.Equal(t, 2, run(nil, testEnv(nil), &stderr))
	require.Contains(t, stderr.String(), "refusing to start: usage: --etcd-endpoints is required")
	stderr.Reset()
	require.Equal(t, 1, run([]string{"--etcd-endpoints=127.0.0.1:1", "--kubeconfig=/nonexistent/kubeconfig"}, testEnv(nil), &stderr))
	require.Contains(t, stderr.String(), "kubeconfig /nonexistent/kubeconfig")
}

// The Deployment's arguments are flags this command accepts.
func TestDeploymentArgumentsParse(t *testing.T) {
	b, err := os.ReadFile("../../deploy/base/ksr.yaml")
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(b, &d))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	// The kubelet expands $(VAR) from the container's environment: the
	// downward API and the contiv-bootstrap ConfigMap.
	b, err = os.ReadFile("../../deploy/base/bootstrap.yaml")
	require.NoError(t, err)
	var boot corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(b, &boot))
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = d.Namespace
		case e.ValueFrom.FieldRef != nil:
			vars[e.Name] = "contiv-ksr-0"
		case e.ValueFrom.ConfigMapKeyRef != nil:
			require.Equal(t, boot.Name, e.ValueFrom.ConfigMapKeyRef.Name)
			vars[e.Name] = boot.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		}
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(a, func(ref string) string {
			v, ok := vars[ref[2:len(ref)-1]]
			require.True(t, ok, "undefined %s", ref)
			return v
		}))
	}
	o, err := parseOptions(args, testEnv(map[string]string{"POD_NAME": "contiv-ksr-0"}), &bytes.Buffer{})
	require.NoError(t, err)
	require.NotNil(t, o.election(), "two replicas need leader election")
	require.Equal(t, d.Namespace, o.leaseNamespace)
	require.NotEmpty(t, o.master, "the API server by its address, not the kubernetes Service")
	_, port, err := net.SplitHostPort(o.httpAddr)
	require.NoError(t, err)
	require.Equal(t, port, c.LivenessProbe.HTTPGet.Port.String(), "the probe reaches the HTTP server")
}

// --master replaces the API server address of a kubeconfig; without it the
// kubeconfig's server is used.
func TestMasterOverridesKubeconfigServer(t *testing.T) {
	path := t.TempDir() + "/kubeconfig"
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.96.0.1:443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	c, err := kubeConfig(path, "")
	require.NoError(t, err)
	require.Equal(t, "https://10.96.0.1:443", c.Host)
	c, err = kubeConfig(path, "https://192.168.16.10:6443")
	require.NoError(t, err)
	require.Equal(t, "https://192.168.16.10:6443", c.Host)
	require.Equal(t, "t", c.BearerToken, "credentials still come from the kubeconfig")

	o, err := parseOptions([]string{"--etcd-endpoints=e:2379", "--master=https://192.168.16.10:6443"}, testEnv(nil), &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "https://192.168.16.10:6443", o.master)
}
