package ksr

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"contiv.dev/vpp/kubestate"
)

// stored waits until etcd holds obj's conversion under its key.
func (f *fixture) waitStored(obj runtime.Object) {
	f.t.Helper()
	want, _, err := encode(resourceOf(obj), obj)
	require.NoError(f.t, err)
	eventually(f.t, func() bool {
		got, ok := f.etcdState()[want.Key()]
		return ok && equalState(map[kubestate.Key]kubestate.Object{want.Key(): want}, map[kubestate.Key]kubestate.Object{want.Key(): got})
	}, "%s stored", want.Key())
}

func (f *fixture) waitGone(k kubestate.Key) {
	f.t.Helper()
	eventually(f.t, func() bool { return f.modRev(k) == 0 }, "%s deleted", k)
}

func keyOf(t *testing.T, obj runtime.Object) kubestate.Key {
	t.Helper()
	o, _, err := encode(resourceOf(obj), obj)
	require.NoError(t, err)
	return o.Key()
}

func TestReflectsAddUpdateDeleteOfEachResource(t *testing.T) {
	cases := []struct {
		name        string
		key         kubestate.Key
		obj, update runtime.Object
	}{
		{
			name: "service", key: kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: "web"},
			obj: service("shop", "web", "10.96.0.10", 80),
			update: func() runtime.Object {
				s := service("shop", "web", "10.96.0.10", 80)
				s.Spec.ExternalIPs = []string{"192.0.2.1"}
				return s
			}(),
		},
		{
			name: "endpointslice", key: kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: "shop", Name: "web-1"},
			obj:    slice("shop", "web-1", "web", "10.1.1.5"),
			update: slice("shop", "web-1", "web", "10.1.1.5", "10.1.2.7"),
		},
		{
			name: "pod", key: kubestate.Key{Resource: kubestate.ResPod, Node: "node-1", Namespace: "shop", Name: "web-a"},
			obj:    pod("shop", "web-a", "node-1", ""),
			update: pod("shop", "web-a", "node-1", "10.1.1.5"),
		},
		{
			name: "node", key: kubestate.Key{Resource: kubestate.ResNode, Name: "node-1"},
			obj: node("node-1", "192.168.56.101", "10.1.1.0/24"),
			update: func() runtime.Object {
				n := node("node-1", "192.168.56.101", "10.1.1.0/24")
				n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.1"})
				return n
			}(),
		},
		{
			name: "namespace", key: kubestate.Key{Resource: kubestate.ResNamespace, Name: "shop"},
			obj:    namespace("shop", nil),
			update: namespace("shop", map[string]string{"team": "shop"}),
		},
	}
	f := newFixture(t)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.create(c.obj)
			f.waitStored(c.obj)
			f.update(c.update)
			f.waitStored(c.update)
			f.remove(c.update)
			f.waitGone(c.key)
		})
	}
	require.Equal(t, 0, len(f.etcdState()))
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.resyncs), "no write failed: one mark and sweep")
	require.Equal(t, 0.0, testutil.ToFloat64(r.r.m.writeErrors))
}

func TestStartWritesTheAPIStateInBatches(t *testing.T) {
	// 300 pods: more than two transactions' worth.
	var objs []runtime.Object
	for i := range 300 {
		objs = append(objs, pod("bulk", "p"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i), "node-1", "10.1.1.1"))
	}
	objs = append(objs, namespace("bulk", nil), service("bulk", "s", "10.96.0.1", 80))
	f := newFixture(t, objs...)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	require.Equal(t, 300.0, testutil.ToFloat64(r.r.m.objects.WithLabelValues("pod")))
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.objects.WithLabelValues("service")))
	st := r.r.Status()
	require.Equal(t, 300, st.Objects[kubestate.ResPod])
	require.True(t, st.Leader)
	require.True(t, r.r.Ready())
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestUpdateOfUnreflectedFieldsWritesNothing(t *testing.T) {
	p := pod("shop", "web-a", "node-1", "10.1.1.5")
	s := service("shop", "web", "10.96.0.10", 80)
	f := newFixture(t, p, s)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	podKey := kubestate.Key{Resource: kubestate.ResPod, Node: "node-1", Namespace: "shop", Name: "web-a"}
	svcKey := kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: "web"}
	podRev, svcRev := f.modRev(podKey), f.modRev(svcKey)
	txns := r.kv.txns.Load()

	p2 := p.DeepCopy()
	p2.Labels["version"] = "2"
	p2.Status.Phase = corev1.PodRunning
	p2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	f.update(p2)
	s2 := s.DeepCopy()
	s2.Spec.Selector = map[string]string{"app": "other"}
	s2.Annotations = map[string]string{"note": "x"}
	f.update(s2)
	// Changes queued after the no-op ones, in the same informers, are
	// written after them: once they are in etcd the no-ops were handled.
	later := pod("shop", "web-b", "node-1", "10.1.1.6")
	f.create(later)
	laterSvc := service("shop", "api", "10.96.0.11", 80)
	f.create(laterSvc)
	f.waitStored(later)
	f.waitStored(laterSvc)

	require.Equal(t, podRev, f.modRev(podKey), "pod not rewritten")
	require.Equal(t, svcRev, f.modRev(svcKey), "service not rewritten")
	require.LessOrEqual(t, r.kv.txns.Load()-txns, int64(2), "only the new objects' batches were written")
}

func TestInvalidObjectsAreLoggedAndSkipped(t *testing.T) {
	// A namespaced object without a namespace, and a namespace whose labels
	// exceed the value size limit.
	orphan := service("", "no-namespace", "10.96.0.20", 80)
	huge := namespace("huge", map[string]string{"big": strings.Repeat("x", kubestate.MaxValueSize)})
	good := service("shop", "web", "10.96.0.10", 80)
	f := newFixture(t, orphan, good, namespace("shop", nil))
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	require.Len(t, f.etcdState(), 2, "web and shop only")
	require.NotEmpty(t, f.logs.lines("object skipped", "resource=service", "key=no-namespace", "no namespace"))
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.invalid.WithLabelValues("service")))

	// Incremental: a new invalid object is skipped, a valid object that
	// turns invalid is deleted (etcd says nothing untrue about it), the
	// rest goes on.
	f.create(huge)
	shop := namespace("shop", map[string]string{"big": strings.Repeat("y", kubestate.MaxValueSize)})
	f.update(shop)
	after := service("shop", "api", "10.96.0.11", 80)
	f.create(after)
	f.waitStored(after)
	f.waitGone(kubestate.Key{Resource: kubestate.ResNamespace, Name: "shop"})
	require.Zero(t, f.modRev(kubestate.Key{Resource: kubestate.ResNamespace, Name: "huge"}))
	require.NotEmpty(t, f.logs.lines("object skipped", "key=huge", "value too large"))
	require.Equal(t, 2.0, testutil.ToFloat64(r.r.m.invalid.WithLabelValues("namespace")))
	require.Equal(t, 0.0, testutil.ToFloat64(r.r.m.writeErrors), "invalid input is not an etcd failure")
	require.True(t, r.r.Status().Synced)
}

func TestMarkAndSweepAfterDowntime(t *testing.T) {
	keep := service("shop", "keep", "10.96.0.1", 80)
	change := service("shop", "change", "10.96.0.2", 80)
	drop := service("shop", "drop", "10.96.0.3", 80)
	relabel := pod("shop", "relabel", "node-1", "10.1.1.9")
	sl := slice("shop", "keep-1", "keep", "10.1.1.9")
	f := newFixture(t, keep, change, drop, relabel, sl, namespace("shop", nil), node("node-1", "192.168.56.101", "10.1.1.0/24"))
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()
	r.stop()
	require.Zero(t, testutil.ToFloat64(r.r.m.isLeader))

	before := map[string]int64{}
	for _, k := range []kubestate.Key{keyOf(t, keep), keyOf(t, relabel), keyOf(t, sl)} {
		before[k.String()] = f.modRev(k)
	}
	// While the reflector is down: the API changes...
	f.remove(drop)
	c2 := change.DeepCopy()
	c2.Spec.Ports[0].Port = 8080
	f.update(c2)
	added := service("shop", "added", "10.96.0.4", 80)
	f.create(added)
	r2 := relabel.DeepCopy()
	r2.Labels["x"] = "y"
	f.update(r2)
	// ...and etcd holds leftovers: a stale object, an undecodable value
	// and a key no resource can parse.
	ctx := context.Background()
	stale := kubestate.Key{Resource: kubestate.ResService, Namespace: "old", Name: "gone"}
	_, err := f.cli.Put(ctx, stale.String(), `{"namespace":"old","name":"gone"}`)
	require.NoError(t, err)
	_, err = f.cli.Put(ctx, kubestate.Key{Resource: kubestate.ResPod, Namespace: "shop", Name: "junk"}.String(), `not json`)
	require.NoError(t, err)
	_, err = f.cli.Put(ctx, kubestate.ResNode.KeyPrefix()+"a/b", `{}`)
	require.NoError(t, err)

	again := f.start(Params{})
	again.waitSynced(t, 1)
	f.waitEqual()
	resp, err := f.cli.Get(ctx, kubestate.Prefix+"k8s/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, len(f.apiState()), "nothing but the API's objects under k8s/")
	for k, rev := range before {
		resp, err := f.cli.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, rev, resp.Kvs[0].ModRevision, "%s unchanged, not rewritten", k)
	}
}
