package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"contiv.dev/vpp/internal/etcdtest"
)

// testNamespace holds the workloads of the scenarios.
const testNamespace = "e2e"

// system is everything between the API and the agents: the control plane,
// the kubelet stand-in, the contiv etcd, two reflector replicas and two
// agents (node-1, node-2).
type system struct {
	t          *testing.T
	cp         *controlPlane
	kubelet    *kubelet
	etcd       *etcdtest.Server
	etcdCli    *clientv3.Client
	ksrBin     string
	cniBin     string
	kubeconfig string
	replicas   []*replica
	nodes      []*node
	figures    *figures
}

func startSystem(t *testing.T) *system {
	t.Helper()
	s := &system{t: t, figures: &figures{m: map[string][]time.Duration{}}}
	s.ksrBin = contivBinary(t, t.TempDir(), "contiv-ksr")
	s.cniBin = contivBinary(t, t.TempDir(), "contiv-cni")
	s.cp = startControlPlane(t)
	applyDeploy(t, s.cp)
	s.kubeconfig = ksrTokenKubeconfig(t, s.cp)
	s.etcd = etcdtest.Start(t)
	s.etcdCli = s.etcd.Client()
	s.kubelet = newKubelet(t, s.cp.kube, s.figures)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.kubelet.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, id := range []string{"ksr-1", "ksr-2"} {
		s.replicas = append(s.replicas, startReplica(t, s.ksrBin, s.kubeconfig, s.etcd.Endpoint(), id))
	}
	s.waitLeader(nil, time.Minute)
	for _, name := range []string{"node-1", "node-2"} {
		n := startNode(t, name, s.etcd.Endpoint())
		s.nodes = append(s.nodes, n)
		if err := s.kubelet.registerNode(ctx, name, n.a.NodeID()); err != nil {
			t.Fatal(err)
		}
		c, err := installCNI(s.cniBin, n.dir, n.cfg.CNI.Socket)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.kubelet.attachCNI(ctx, name, c); err != nil {
			t.Fatal(err)
		}
	}
	// Before the agents stop: DEL every sandbox left, remove its netns.
	t.Cleanup(s.kubelet.removeAll)
	if _, err := s.cp.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.cp.waitServiceAccount(testNamespace, "default")
	s.workload() // every scenario may change it
	return s
}

// waitLeader waits until a replica other than not leads with its mark and
// sweep done, and returns it and how long that took.
func (s *system) waitLeader(not *replica, limit time.Duration) (*replica, time.Duration) {
	s.t.Helper()
	var leader *replica
	d := waitFor(s.t, limit, func() (bool, string) {
		var seen []string
		for _, r := range s.replicas {
			st, ok := r.status()
			seen = append(seen, fmt.Sprintf("%s: %+v (answers: %v)", r.id, st, ok))
			if r != not && ok && st.Leader && st.Synced {
				leader = r
				return true, ""
			}
		}
		return false, "no replica leads in sync: " + strings.Join(seen, "; ")
	})
	return leader, d
}

// settleLimit bounds how long a step waits for the API to show its
// outcome (a guard against a hang): every pod is wired through a CNI call,
// a process of its own each, and 120 of them take minutes on a loaded
// 2-CPU machine.
const settleLimit = 3 * time.Minute

// step makes one change through the API, waits until the API shows its
// outcome (settled: the controllers and the kubelet did their part), then
// until etcd and both agents converged, and records how long that took
// from the write.
func (s *system) step(name string, change func(ctx context.Context) error, settled func(ctx context.Context) (bool, string)) time.Duration {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settleLimit+time.Minute)
	defer cancel()
	start := time.Now()
	if err := change(ctx); err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	var api time.Duration
	if settled != nil {
		waitFor(s.t, settleLimit, func() (bool, string) { return settled(ctx) })
		api = time.Since(start)
	}
	d := s.waitConverged(start, time.Minute)
	s.figures.add(name, d)
	s.figures.addAPI(name, api)
	return d
}

// endpoint is one address of a service's EndpointSlices with its conditions.
type endpoint struct {
	addr                        string
	ready, serving, terminating bool
}

// endpoints lists the endpoints of service svc's slices, sorted.
func (s *system) endpoints(ctx context.Context, svc string) ([]endpoint, error) {
	l, err := s.cp.kube.DiscoveryV1().EndpointSlices(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return nil, err
	}
	var out []endpoint
	for _, sl := range l.Items {
		for _, e := range sl.Endpoints {
			out = append(out, endpoint{addr: e.Addresses[0], ready: deref(e.Conditions.Ready), serving: deref(e.Conditions.Serving), terminating: deref(e.Conditions.Terminating)})
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.addr, b.addr) })
	return out, nil
}

func deref(b *bool) bool { return b != nil && *b }

// count is a settled condition: service svc has want endpoints matching f.
func (s *system) count(svc string, want int, f func(endpoint) bool) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		eps, err := s.endpoints(ctx, svc)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, e := range eps {
			if f(e) {
				n++
			}
		}
		if n == want {
			return true, ""
		}
		return false, fmt.Sprintf("service %s: %d matching endpoints, want %d: %+v; the kubelet's: %s", svc, n, want, eps, s.kubelet.describe(svc+"-"))
	}
}

func isReady(e endpoint) bool { return e.ready }

// pod is a pod bound to node with the labels, serving port name on
// containerPort.
func pod(name, node string, labels map[string]string, port string, containerPort int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "c", Image: "e2e.invalid/none",
				Ports: []corev1.ContainerPort{{Name: port, ContainerPort: containerPort, Protocol: corev1.ProtocolTCP}}}},
		},
	}
}

// service is a ClusterIP service selecting app=name on port 80 to the
// named target port http.
func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
}

// figures collects the measured durations per scenario: for a step, also
// when the API showed its outcome (the controllers' and the kubelet's
// share, in the figure; the rest is contiv's).
type figures struct {
	mu  sync.Mutex
	m   map[string][]time.Duration
	api map[string][]time.Duration
}

func (f *figures) add(name string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[name] = append(f.m[name], d)
}

func (f *figures) addAPI(name string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.api == nil {
		f.api = map[string][]time.Duration{}
	}
	f.api[name] = append(f.api[name], d)
}

// table is one line per figure: count, p50, p99 and max, and for steps the
// p50 and max of when the API showed the outcome.
func (f *figures) table() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-58s %3s %9s %9s %9s %11s %11s\n", "figure", "n", "p50", "p99", "max", "API p50", "API max")
	names := make([]string, 0, len(f.m))
	for k := range f.m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ds := sorted(f.m[k])
		fmt.Fprintf(&b, "%-58s %3d %9v %9v %9v", k, len(ds), pct(ds, 50), pct(ds, 99), pct(ds, 100))
		if as := sorted(f.api[k]); len(as) > 0 {
			fmt.Fprintf(&b, " %11v %11v", pct(as, 50), pct(as, 100))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sorted(ds []time.Duration) []time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds
}

// pct is the p-th percentile of the sorted ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p + 99) / 100
	return ds[max(i-1, 0)].Round(time.Millisecond)
}
