package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"contiv.dev/vpp/internal/etcdtest"
)

// serviceCIDR is the API server's --service-cluster-ip-range.
const serviceCIDR = "10.96.0.0/12"

// controllers are the controller-manager's controllers the agents depend
// on: EndpointSlices of Services and mirrored Endpoints, ServiceAccounts
// (each namespace's default one, which the API server's ServiceAccount
// admission requires of a pod) and their tokens, the cluster CA every
// namespace publishes for its pods (kube-root-ca.crt), namespace deletion,
// garbage collection of owned objects and of terminated pods.
const controllers = "endpointslice,endpointslicemirroring,serviceaccount,serviceaccount-token,root-ca-cert-publisher,namespace,garbagecollector,podgc"

// controlPlane is a real Kubernetes control plane on loopback: an etcd,
// kube-apiserver and kube-controller-manager.
type controlPlane struct {
	t     testing.TB
	pki   *pki
	etcd  *etcdtest.Server
	api   *proc
	cm    *proc
	port  int
	admin *rest.Config
	kube  kubernetes.Interface
	// adminKubeconfig is a kubeconfig file with the admin's certificate.
	adminKubeconfig string
	// auditLog records the reflector's requests (auditPolicy), JSON lines.
	auditLog string
}

func startControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	apiserver, cmBin := kubeBinary(t, "kube-apiserver"), kubeBinary(t, "kube-controller-manager")
	cp := &controlPlane{t: t, pki: newPKI(t), etcd: etcdtest.Start(t), port: freePort(t)}
	// The certificate in memory, not as files: client-go watches files for
	// rotation with a goroutine that never ends.
	cp.admin = &rest.Config{
		Host: "https://" + loopback(cp.port),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: cp.pki.caPEM, CertData: readFile(t, cp.pki.adminCert), KeyData: readFile(t, cp.pki.adminKey),
		},
		QPS: 200, Burst: 400, UserAgent: "contiv-e2e",
	}
	var err error
	if cp.kube, err = kubernetes.NewForConfig(cp.admin); err != nil {
		t.Fatal(err)
	}
	cp.adminKubeconfig = writeKubeconfig(t, filepath.Join(cp.pki.dir, "admin.kubeconfig"), cp.admin.Host, cp.pki.caCert,
		&clientcmdapi.AuthInfo{ClientCertificate: cp.pki.adminCert, ClientKey: cp.pki.adminKey})
	p := cp.pki
	cp.auditLog = filepath.Join(p.dir, "audit.log")
	policy := p.write(t, "audit-policy.yaml", []byte(auditPolicy))
	start := time.Now()
	cp.api = startProc(t, "kube-apiserver", apiserver,
		"--etcd-servers="+cp.etcd.Endpoint(),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", cp.port), "--cert-dir="+filepath.Join(p.dir, "apiserver"),
		"--tls-cert-file="+p.servingCert, "--tls-private-key-file="+p.servKey, "--client-ca-file="+p.caCert,
		"--service-account-key-file="+p.saPub, "--service-account-signing-key-file="+p.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC", "--service-cluster-ip-range="+serviceCIDR,
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false", "--profiling=false",
		// The agent's DaemonSet runs privileged (it wires pods: veths, other
		// namespaces, VPP's interfaces), as every CNI agent does; kubeadm's
		// API servers allow it, this one's default does not.
		"--allow-privileged=true",
		// On SIGTERM the server shuts its HTTP server down, which waits for
		// every connection to go idle, and a connection with an open watch
		// (the controller-manager's, the reflectors', the kubelet's) never
		// does: by default it waits --request-timeout (60 s) for them. In
		// this mode it answers 429 + Retry-After until the short requests
		// drain, then gives the watches 2 s and cuts them.
		"--shutdown-send-retry-after=true",
		"--audit-policy-file="+policy, "--audit-log-path="+cp.auditLog, "--audit-log-format=json",
	)
	cp.waitReady(2 * time.Minute)
	t.Logf("kube-apiserver ready in %v", time.Since(start).Round(time.Millisecond))
	cp.cm = startProc(t, "kube-controller-manager", cmBin,
		"--kubeconfig="+cp.adminKubeconfig, "--controllers="+controllers,
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.caCert,
		// Pods turn ready one by one, each when its CNI ADD is done (a
		// process each): without a batch period every status is one sync
		// of the service, which under load races the controller's own
		// slice writes ("informer cache is out of date") until it gives
		// the service up after 15 retries and its endpoints never come.
		"--endpointslice-updates-batch-period=1s",
	)
	return cp
}

// waitReady waits until the API server answers /readyz with ok.
func (cp *controlPlane) waitReady(limit time.Duration) {
	cp.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		body, err := cp.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			return
		}
		if !cp.api.running() {
			cp.t.Fatalf("kube-apiserver exited: %v\n%s", cp.api.err, cp.api.out)
		}
		if time.Now().After(deadline) {
			cp.t.Fatalf("kube-apiserver not ready after %v: %v %s\n%s", limit, err, body, cp.api.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restartAPIServer stops the API server (SIGTERM), keeps it down for down
// and starts it again; it returns when it is ready.
func (cp *controlPlane) restartAPIServer(down time.Duration) {
	cp.t.Helper()
	start := time.Now()
	if err := cp.api.stop(15 * time.Second); err != nil {
		cp.t.Errorf("kube-apiserver stopped: %v", err)
	}
	cp.t.Logf("kube-apiserver exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	time.Sleep(down)
	cp.api.start()
	cp.waitReady(2 * time.Minute)
}

// waitServiceAccount waits until ServiceAccount ns/name exists: the
// controller-manager makes each namespace's default account, and the
// API server admits no pod of an account that does not exist.
func (cp *controlPlane) waitServiceAccount(ns, name string) {
	cp.t.Helper()
	waitFor(cp.t, time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cp.kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprintf("ServiceAccount %s/%s: %v", ns, name, err)
	})
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeKubeconfig writes a kubeconfig for server with the given credentials.
func writeKubeconfig(t testing.TB, path, server, ca string, user *clientcmdapi.AuthInfo) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	c.AuthInfos["user"] = user
	c.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "user"}
	c.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}
