package ksr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// benchTerm is a term whose caches hold objs, over a fresh embedded etcd,
// without informers: it measures the writer alone.
func benchTerm(b *testing.B, objs []runtime.Object) (*term, *clientv3.Client) {
	b.Helper()
	cli := etcdtest.Start(b).Client()
	r, err := New(Params{Kube: fake.NewClientset(), Etcd: cli})
	require.NoError(b, err)
	f := r.acquire(context.Background())
	require.NotNil(b, f)
	require.NoError(b, f.keepAlive(context.Background(), func() { b.Error("etcd leader lease lost") }))
	b.Cleanup(f.release)
	t := newTerm(r, f)
	for _, k := range reflected() {
		t.stores[k.res] = cache.NewStore(cache.MetaNamespaceKeyFunc)
	}
	for _, o := range objs {
		require.NoError(b, t.stores[resourceOf(o)].Add(o))
	}
	return t, cli
}

// cluster is n services with a slice and two pods each.
func cluster(n int) []runtime.Object {
	var objs []runtime.Object
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip1, ip2 := fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)
		objs = append(objs,
			service("bench", name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), 80),
			slice("bench", name+"-1", name, ip1, ip2),
			pod("bench", name+"-a", "node-1", ip1),
			pod("bench", name+"-b", "node-2", ip2))
	}
	return objs
}

// BenchmarkSweep is a mark and sweep of 1000 services with their slices and
// 2000 pods (4000 keys): the first one writes everything, later ones find
// every key unchanged.
func BenchmarkSweep(b *testing.B) {
	b.Run("first", func(b *testing.B) {
		objs := cluster(1000)
		t, cli := benchTerm(b, objs)
		for b.Loop() {
			b.StopTimer()
			// Everything but the leader key, which fences the writes.
			_, err := cli.Delete(context.Background(), kubestate.Prefix+"k8s/", clientv3.WithPrefix())
			require.NoError(b, err)
			b.StartTimer()
			require.NoError(b, t.resync(context.Background()))
		}
		b.ReportMetric(float64(len(objs)), "keys")
	})
	b.Run("unchanged", func(b *testing.B) {
		objs := cluster(1000)
		t, _ := benchTerm(b, objs)
		require.NoError(b, t.resync(context.Background()))
		for b.Loop() {
			require.NoError(b, t.resync(context.Background()))
		}
		b.ReportMetric(float64(len(objs)), "keys")
	})
}

// BenchmarkFlush writes queued changes: one service changed, or a burst of
// 1000 changed pods (eight transactions).
func BenchmarkFlush(b *testing.B) {
	ctx := context.Background()
	b.Run("one-service", func(b *testing.B) {
		t, _ := benchTerm(b, cluster(1000))
		require.NoError(b, t.resync(ctx))
		svc := service("bench", "svc-0", "10.96.0.1", 80)
		port := int32(80)
		for b.Loop() {
			port++
			svc.Spec.Ports[0].Port = port
			require.NoError(b, t.stores[kubestate.ResService].Update(svc.DeepCopy()))
			t.q.add(item{res: kubestate.ResService, key: "bench/svc-0"})
			require.NoError(b, t.flush(ctx))
		}
	})
	b.Run("burst-1000-pods", func(b *testing.B) {
		t, _ := benchTerm(b, cluster(500))
		require.NoError(b, t.resync(ctx))
		n := 0
		for b.Loop() {
			n++
			for i := range 500 {
				for _, s := range []string{"a", "b"} {
					p := pod("bench", fmt.Sprintf("svc-%d-%s", i, s), "node-1", "10.1.1.1")
					p.Status.HostIP = fmt.Sprintf("192.168.%d.%d", n/250, n%250)
					require.NoError(b, t.stores[kubestate.ResPod].Update(p))
					t.q.add(item{res: kubestate.ResPod, key: "bench/" + p.Name})
				}
			}
			require.NoError(b, t.flush(ctx))
		}
	})
}

// BenchmarkChangeToEtcd is the latency of the whole path: a Service update
// in the (fake) API, the informer, the queue, the writer, until an etcd
// watcher sees the new value.
func BenchmarkChangeToEtcd(b *testing.B) {
	e := etcdtest.Start(b)
	cli := e.Client()
	svc := service("bench", "web", "10.96.0.1", 80)
	kube := fake.NewClientset(append(cluster(100), svc)...)
	r, err := New(Params{Kube: kube, Etcd: cli})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !r.Status().Synced {
		time.Sleep(time.Millisecond)
	}
	key := kubestate.Key{Resource: kubestate.ResService, Namespace: "bench", Name: "web"}.String()
	wch := cli.Watch(ctx, key)
	port := int32(80)
	for b.Loop() {
		port++
		svc.Spec.Ports[0].Port = port
		_, err := kube.CoreV1().Services("bench").Update(ctx, svc, metav1.UpdateOptions{})
		require.NoError(b, err)
		resp := <-wch
		require.NoError(b, resp.Err())
	}
}
