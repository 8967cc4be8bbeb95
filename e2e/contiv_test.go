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

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// reflector's ServiceAccount only, with the token a kubelet would get for
// the pod of deploy/base's Deployment (ksrPod): one from the TokenRequest
// API, bound to that pod. Its rights are exactly what deploy/base's RBAC
// grants that account.
func ksrTokenKubeconfig(t testing.TB, cp *controlPlane) string {
	t.Helper()
	pod := ksrPod(t, cp)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := cp.kube.CoreV1().ServiceAccounts(ksrNamespace).CreateToken(ctx, pod.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: new(int64(6 * 3600)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s bound to pod %s: %v", ksrNamespace, ksrAccount, pod.Name, err)
	}
	return writeKubeconfig(t, filepath.Join(t.TempDir(), "ksr.kubeconfig"), cp.admin.Host, cp.pki.caCert,
		&clientcmdapi.AuthInfo{Token: tr.Status.Token})
}

// serviceAccountDir is where a pod's containers find their ServiceAccount
// token and the cluster's CA (the in-cluster configuration reads them).
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ksrPod creates the pod the ReplicaSet of deploy/base's contiv-ksr
// Deployment would (no scheduler runs: it stays pending) and checks what
// the API server's ServiceAccount admission made of it, as in a real
// cluster: its account is deploy/base's, its container mounts that
// account's token and the CA, and the CA's ConfigMap exists.
func ksrPod(t testing.TB, cp *controlPlane) *corev1.Pod {
	t.Helper()
	var dep appsv1.Deployment
	for _, o := range kustomize(t, "../deploy/base") {
		if o.GetKind() == "Deployment" && o.GetName() == ksrAccount {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
				t.Fatalf("deploy/base's Deployment %s: %v", ksrAccount, err)
			}
		}
	}
	if dep.Name == "" {
		t.Fatalf("deploy/base has no Deployment %s", ksrAccount)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := cp.kube.CoreV1().Pods(dep.Namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: dep.Name + "-e2e", Namespace: dep.Namespace, Labels: dep.Spec.Template.Labels},
		Spec:       dep.Spec.Template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the pod of deploy/base's Deployment %s: %v", dep.Name, err)
	}
	if p.Namespace != ksrNamespace || p.Spec.ServiceAccountName != ksrAccount {
		t.Fatalf("the pod of deploy/base's Deployment runs as %s/%s, want %s/%s", p.Namespace, p.Spec.ServiceAccountName, ksrNamespace, ksrAccount)
	}
	mounted := false
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		mounted = mounted || m.MountPath == serviceAccountDir
	}
	if !mounted {
		t.Fatalf("the ServiceAccount admission mounted no token at %s into pod %s/%s: %+v", serviceAccountDir, p.Namespace, p.Name, p.Spec.Containers[0].VolumeMounts)
	}
	waitFor(t, time.Minute, func() (bool, string) {
		_, err := cp.kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("the cluster CA of pod %s/%s's token volume: %v", p.Namespace, p.Name, err)
	})
	return p
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
// socket API as a real VPP is. The agent wires pods (cni.enabled): its CNI
// socket and pod records are in the node's own directory, so that two
// agents of one test process never share them.
type node struct {
	name string
	dir  string // the VPP's and the CNI's sockets, the pod records
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
	// The simulated VPP makes no kernel end of a tap: pods get an
	// af_packet interface on a veth pair, whatever /dev/vhost-net says.
	cfg.CNI.Enabled = true
	cfg.CNI.Socket = filepath.Join(dir, "cni.sock")
	cfg.CNI.StateDir = filepath.Join(dir, "pods")
	cfg.CNI.PodInterface = contivconf.PodInterfaceAFPacket
	n.dir = dir
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

// lines is the node's simulated VPP state, one line per object, each pod
// interface under the name the offline render's stand-in CNI gives its
// pod (the agent's af_packet interface is known by its tag): so a render
// compares what services make of the pods, whatever their interface kind.
func (n *node) lines() []string {
	return renderNames(n.vpp.Snapshot().Lines(), n.podInterfaceNames())
}

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
