package main

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
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
	o, err := parseOptions(c.Args, testEnv(map[string]string{"POD_NAME": "contiv-ksr-0"}), &bytes.Buffer{})
	require.NoError(t, err)
	require.NotNil(t, o.election(), "two replicas need leader election")
	require.Equal(t, d.Namespace, o.leaseNamespace)
	_, port, err := net.SplitHostPort(o.httpAddr)
	require.NoError(t, err)
	require.Equal(t, port, c.LivenessProbe.HTTPGet.Port.String(), "the probe reaches the HTTP server")
}
