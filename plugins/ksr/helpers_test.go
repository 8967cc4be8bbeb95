package ksr

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// fixture is a fake Kubernetes API and a real embedded etcd.
type fixture struct {
	t    *testing.T
	etcd *etcdtest.Server
	cli  *clientv3.Client
	kube *fake.Clientset
	logs *syncBuffer
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	e := etcdtest.Start(t)
	f := &fixture{t: t, etcd: e, cli: e.Client(), kube: fake.NewClientset(objs...), logs: &syncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reflector logs:\n%s", f.logs)
		}
	})
	return f
}

// running is a started reflector.
type running struct {
	r      *Reflector
	reg    *prometheus.Registry
	kv     *watchedKV
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs a reflector over the fixture with test timings; p may set
// anything else. It is stopped when the test ends.
func (f *fixture) start(p Params) *running {
	f.t.Helper()
	return f.startKV(p, &watchedKV{KV: f.cli})
}

// startKV is start with the reflector writing through kv.
func (f *fixture) startKV(p Params, kv *watchedKV) *running {
	f.t.Helper()
	if p.Kube == nil {
		p.Kube = f.kube
	}
	if kv.Lease == nil {
		kv.Lease = f.cli
	}
	if p.Etcd == nil {
		p.Etcd = kv
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	reg := prometheus.NewRegistry()
	p.Registerer = reg
	p.EtcdTimeout = cmpOr(p.EtcdTimeout, 5*time.Second)
	p.ProbeInterval = cmpOr(p.ProbeInterval, 50*time.Millisecond)
	p.MaxBackoff = cmpOr(p.MaxBackoff, 200*time.Millisecond)
	r, err := New(p)
	require.NoError(f.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{r: r, reg: reg, kv: kv, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		r.Run(ctx)
	}()
	f.t.Cleanup(run.stop)
	return run
}

// stop stops the reflector and waits for Run to return.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// waitSynced waits until the reflector completed at least n marks and
// sweeps and is synced.
func (r *running) waitSynced(t *testing.T, n uint64) {
	t.Helper()
	eventually(t, func() bool {
		s := r.r.Status()
		return s.Synced && s.Resyncs >= n
	}, "reflector synced %d times", n)
}

// eventually polls cond until it holds; the deadline only bounds a hung
// test, it is not a timing assertion.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: "+msg, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// etcdState is every reflected object in etcd.
func (f *fixture) etcdState() map[kubestate.Key]kubestate.Object {
	f.t.Helper()
	l, err := kubestate.ListAll(context.Background(), f.cli)
	require.NoError(f.t, err)
	for k := range l.Objects {
		if k.Resource == kubestate.ResVppNode {
			delete(l.Objects, k)
		}
	}
	return l.Objects
}

// apiState is every object of the fake API, converted; objects that cannot
// be converted are left out.
func (f *fixture) apiState() map[kubestate.Key]kubestate.Object {
	f.t.Helper()
	ctx := context.Background()
	var objs []runtime.Object
	svcs, err := f.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range svcs.Items {
		objs = append(objs, &svcs.Items[i])
	}
	slices, err := f.kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range slices.Items {
		objs = append(objs, &slices.Items[i])
	}
	pods, err := f.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	nodes, err := f.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	nss, err := f.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range nss.Items {
		objs = append(objs, &nss.Items[i])
	}
	out := make(map[kubestate.Key]kubestate.Object)
	for _, o := range objs {
		if m, _, err := encode(resourceOf(o), o); err == nil {
			out[m.Key()] = m
		}
	}
	return out
}

// waitEqual waits until etcd holds exactly the API's state.
func (f *fixture) waitEqual() {
	f.t.Helper()
	var want, got map[kubestate.Key]kubestate.Object
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, got = f.apiState(), f.etcdState()
		if equalState(want, got) {
			return
		}
		if time.Now().After(deadline) {
			require.Equal(f.t, want, got, "etcd never matched the API")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func equalState(a, b map[kubestate.Key]kubestate.Object) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		bx, _ := kubestate.Encode(x)
		by, _ := kubestate.Encode(y)
		if !bytes.Equal(bx, by) {
			return false
		}
	}
	return true
}

func resourceOf(o runtime.Object) kubestate.Resource {
	switch o.(type) {
	case *corev1.Service:
		return kubestate.ResService
	case *discoveryv1.EndpointSlice:
		return kubestate.ResEndpointSlice
	case *corev1.Pod:
		return kubestate.ResPod
	case *corev1.Node:
		return kubestate.ResNode
	case *corev1.Namespace:
		return kubestate.ResNamespace
	}
	return ""
}

// create, update and remove change the fake API through its typed clients.
func (f *fixture) create(o runtime.Object) {
	f.t.Helper()
	ctx, opts := context.Background(), metav1.CreateOptions{}
	var err error
	switch o := o.(type) {
	case *corev1.Service:
		_, err = f.kube.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *discoveryv1.EndpointSlice:
		_, err = f.kube.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, opts)
	case *corev1.Pod:
		_, err = f.kube.CoreV1().Pods(o.Namespace).Create(ctx, o, opts)
	case *corev1.Node:
		_, err = f.kube.CoreV1().Nodes().Create(ctx, o, opts)
	case *corev1.Namespace:
		_, err = f.kube.CoreV1().Namespaces().Create(ctx, o, opts)
	default:
		f.t.Fatalf("create %T", o)
	}
	require.NoError(f.t, err)
}

func (f *fixture) update(o runtime.Object) {
	f.t.Helper()
	ctx, opts := context.Background(), metav1.UpdateOptions{}
	var err error
	switch o := o.(type) {
	case *corev1.Service:
		_, err = f.kube.CoreV1().Services(o.Namespace).Update(ctx, o, opts)
	case *discoveryv1.EndpointSlice:
		_, err = f.kube.DiscoveryV1().EndpointSlices(o.Namespace).Update(ctx, o, opts)
	case *corev1.Pod:
		_, err = f.kube.CoreV1().Pods(o.Namespace).Update(ctx, o, opts)
	case *corev1.Node:
		_, err = f.kube.CoreV1().Nodes().Update(ctx, o, opts)
	case *corev1.Namespace:
		_, err = f.kube.CoreV1().Namespaces().Update(ctx, o, opts)
	default:
		f.t.Fatalf("update %T", o)
	}
	require.NoError(f.t, err)
}

func (f *fixture) remove(o runtime.Object) {
	f.t.Helper()
	ctx, opts := context.Background(), metav1.DeleteOptions{}
	var err error
	switch o := o.(type) {
	case *corev1.Service:
		err = f.kube.CoreV1().Services(o.Namespace).Delete(ctx, o.Name, opts)
	case *discoveryv1.EndpointSlice:
		err = f.kube.DiscoveryV1().EndpointSlices(o.Namespace).Delete(ctx, o.Name, opts)
	case *corev1.Pod:
		err = f.kube.CoreV1().Pods(o.Namespace).Delete(ctx, o.Name, opts)
	case *corev1.Node:
		err = f.kube.CoreV1().Nodes().Delete(ctx, o.Name, opts)
	case *corev1.Namespace:
		err = f.kube.CoreV1().Namespaces().Delete(ctx, o.Name, opts)
	default:
		f.t.Fatalf("remove %T", o)
	}
	require.NoError(f.t, err)
}

// modRev is the mod revision of key k in etcd, 0 when absent.
func (f *fixture) modRev(k fmt.Stringer) int64 {
	f.t.Helper()
	resp, err := f.cli.Get(context.Background(), k.String())
	require.NoError(f.t, err)
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].ModRevision
}

// Objects used by the tests.

func service(ns, name, ip string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  ip,
			ClusterIPs: []string{ip},
			Selector:   map[string]string{"app": name},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(8080),
			}},
		},
	}
}

func slice(ns, name, svc string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr[int32](8080)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
			NodeName:   ptr("node-1"),
		})
	}
	return s
}

func pod(ns, name, node, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "192.168.56.101"},
	}
}

func node(name, ip, cidr string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func ptr[T any](v T) *T { return &v }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the log lines holding every one of subs.
func (s *syncBuffer) lines(subs ...string) []string {
	var out []string
	for l := range strings.Lines(s.String()) {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(l, sub)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// watchedKV is a real etcd KV that counts the calls a reflector makes and,
// when check is set, records every call made while check fails (a call made
// by a replica that does not hold the lease).
type watchedKV struct {
	clientv3.KV
	clientv3.Lease
	calls      atomic.Int64
	txns       atomic.Int64
	check      func() error
	mu         sync.Mutex
	violations []string
}

func (w *watchedKV) note(ctx context.Context, what string) {
	if ctx.Err() != nil { // a cancelled call never reaches etcd
		return
	}
	w.calls.Add(1)
	if w.check == nil {
		return
	}
	if err := w.check(); err != nil {
		w.mu.Lock()
		w.violations = append(w.violations, what+": "+err.Error())
		w.mu.Unlock()
	}
}

func (w *watchedKV) Txn(ctx context.Context) clientv3.Txn {
	w.note(ctx, "txn")
	if ctx.Err() == nil {
		w.txns.Add(1)
	}
	return w.KV.Txn(ctx)
}

func (w *watchedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	w.note(ctx, "get "+key)
	return w.KV.Get(ctx, key, opts...)
}

func (w *watchedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	w.note(ctx, "put "+key)
	return w.KV.Put(ctx, key, val, opts...)
}

func (w *watchedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	w.note(ctx, "delete "+key)
	return w.KV.Delete(ctx, key, opts...)
}

func (w *watchedKV) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...)
}

// rawKey is an etcd key as a fmt.Stringer.
type rawKey string

func (k rawKey) String() string { return string(k) }
