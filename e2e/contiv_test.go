package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/ksr"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// The reflector's ServiceAccount and Lease namespace, as deploy/base has them.
const (
	ksrNamespace = "contiv-system"
	ksrAccount   = "contiv-ksr"
)

// ksrTokenKubeconfig writes a kubeconfig that authenticates as the
// reflector's ServiceAccount only: a bound token from the TokenRequest API.
// Its rights are exactly what deploy/base's RBAC grants that account.
func ksrTokenKubeconfig(t testing.TB, cp *controlPlane) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := cp.kube.CoreV1().ServiceAccounts(ksrNamespace).CreateToken(ctx, ksrAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(6 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ksrNamespace, ksrAccount, err)
	}
	return writeKubeconfig(t, filepath.Join(t.TempDir(), "ksr.kubeconfig"), cp.admin.Host, cp.pki.caCert,
		&clientcmdapi.AuthInfo{Token: tr.Status.Token})
}

// replica is one contiv-ksr process.
type replica struct {
	id   string
	http string
	p    *proc
}

// startReplica runs contiv-ksr as identity id, with the ServiceAccount's
// kubeconfig, against the contiv etcd at endpoint; extra flags come last
// (and win).
func startReplica(t testing.TB, bin, kubeconfig, endpoint, id string, extra ...string) *replica {
	t.Helper()
	r := &replica{id: id, http: loopback(freePort(t))}
	args := []string{"--kubeconfig=" + kubeconfig, "--etcd-endpoints=" + endpoint,
		"--identity=" + id, "--lease-namespace=" + ksrNamespace, "--http-addr=" + r.http,
		"--released-id-quarantine=0", "--log-level=info"}
	r.p = startProc(t, id, bin, append(args, extra...)...)
	return r
}

// status is the replica's /v1/status; ok is false when it does not answer.
func (r *replica) status() (s ksr.Status, ok bool) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + r.http + "/v1/status")
	if err != nil {
		return s, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return s, false
	}
	return s, json.Unmarshal(b, &s) == nil
}

// ready is the replica's /readyz answer (false when it does not answer).
func (r *replica) ready() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + r.http + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// node is one agent on its own simulated VPP, reached over the VPP's
// socket API as a real VPP is.
type node struct {
	name string
	cfg  contivconf.Config
	vpp  *sim.VPP
	srv  *sim.Server
	a    *agent.Agent
	logs *tailBuffer
	stop func() error
}

// startNode starts the agent of node name against the contiv etcd at
// endpoint and waits until it is ready. It is stopped when the test ends.
func startNode(t testing.TB, name, endpoint string) *node {
	t.Helper()
	cfg := contivconf.Defaults()
	cfg.NodeName = name
	cfg.Etcd.Endpoints = []string{endpoint}
	cfg.NodeSync.StateFile = filepath.Join(t.TempDir(), "node-id")
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.HTTP.ProxyHealthAddress = "127.0.0.1:0"
	cfg.Log.Level = contivconf.LogLevelInfo
	short := contivconf.Backoff{Initial: contivconf.Duration(20 * time.Millisecond), Max: contivconf.Duration(500 * time.Millisecond)}
	cfg.Controller.HealingBackoff = short
	cfg.VPP.ReconnectBackoff = short
	n := &node{name: name, vpp: sim.New(sim.Options{}), logs: &tailBuffer{max: 32 << 10}}
	dir, err := os.MkdirTemp("", "contiv-e2e-vpp-")
	if err != nil {
		t.Fatal(err)
	}
	if n.srv, err = n.vpp.Serve(filepath.Join(dir, "api.sock")); err != nil {
		t.Fatalf("serving the simulated VPP of %s: %v", name, err)
	}
	cfg.VPP.Socket = n.srv.Path()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n.cfg = cfg
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: agent.SimulatedOverSocket(n.vpp), LogOutput: io.MultiWriter(n.logs, artifact(t, name+".log"))})
	if err != nil {
		cancel()
		t.Fatalf("agent %s: %v", name, err)
	}
	n.a = a
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	n.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := n.stop(); err != nil {
			t.Errorf("agent %s stopped with %v", name, err)
		}
		_ = n.srv.Close()
		n.vpp.Close()
		_ = os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("agent %s log tail:\n%s", name, n.logs)
		}
	})
	waitFor(t, 60*time.Second, func() (bool, string) { return a.Ready(), fmt.Sprintf("agent %s not ready", name) })
	return n
}

// lines is the node's simulated VPP state, one line per object.
func (n *node) lines() []string { return n.vpp.Snapshot().Lines() }

// waitFor polls cond every 20 ms until it holds; it fails the test after
// limit (a guard against a hang, not a timing assertion) with cond's why.
func waitFor(t testing.TB, limit time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	for {
		ok, why := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
