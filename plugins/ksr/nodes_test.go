package ksr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
)

// releaser releases through the real NodeSync with an hour of quarantine.
func (f *fixture) releaser() NodeReleaser {
	return NodeReleaserFunc(func(ctx context.Context, etcd Etcd, name string) error {
		return noderegistry.Release(ctx, etcd, name, time.Hour)
	})
}

func (f *fixture) claim(name string) uint32 {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := noderegistry.Claim(ctx, noderegistry.Params{Client: f.cli, Name: name})
	require.NoError(f.t, err)
	return id
}

func (f *fixture) hasRecord(name string) bool {
	f.t.Helper()
	return f.modRev(kubestate.Key{Resource: kubestate.ResVppNode, Name: name}) != 0
}

func (f *fixture) quarantined(id uint32) bool {
	f.t.Helper()
	resp, err := f.cli.Get(context.Background(), noderegistry.ReleasedPrefix+itoa(int(id)))
	require.NoError(f.t, err)
	return len(resp.Kvs) == 1
}

func TestDeletedNodeReleasesItsRecord(t *testing.T) {
	n1, n2, n3 := node("node-1", "192.168.56.101", "10.1.1.0/24"), node("node-2", "192.168.56.102", "10.1.2.0/24"), node("node-3", "192.168.56.103", "10.1.3.0/24")
	f := newFixture(t, n1, n2, n3)
	require.Equal(t, uint32(1), f.claim("node-1"))
	require.Equal(t, uint32(2), f.claim("node-2"))
	require.Equal(t, uint32(3), f.claim("node-3"))
	r := f.start(Params{Nodes: f.releaser()})
	r.waitSynced(t, 1)
	require.True(t, f.hasRecord("node-1") && f.hasRecord("node-2") && f.hasRecord("node-3"), "live nodes keep their records")

	f.remove(n1)
	eventually(t, func() bool { return !f.hasRecord("node-1") }, "node-1 released")
	f.waitGone(kubestate.Key{Resource: kubestate.ResNode, Name: "node-1"})
	require.True(t, f.quarantined(1), "ID 1 is quarantined")
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.released))
	f.create(node("node-4", "192.168.56.104", "10.1.4.0/24"))
	require.Equal(t, uint32(4), f.claim("node-4"), "a new node does not get the quarantined ID")

	// Deleted while no reflector runs: the next one's sweep releases it,
	// and a record of a node the API never had too.
	r.stop()
	f.remove(n2)
	require.Equal(t, uint32(5), f.claim("node-9"))
	r2 := f.start(Params{Nodes: f.releaser()})
	r2.waitSynced(t, 1)
	require.False(t, f.hasRecord("node-2"))
	require.False(t, f.hasRecord("node-9"))
	require.True(t, f.quarantined(2) && f.quarantined(5))
	require.True(t, f.hasRecord("node-3") && f.hasRecord("node-4"))
	require.Equal(t, 2.0, testutil.ToFloat64(r2.r.m.released))
	require.Len(t, f.logs.lines("NodeSync record released"), 3)
}

func TestSweepAsksTheAPIBeforeReleasing(t *testing.T) {
	// The cache misses node-5 (its list answer hides it, as a cache lagging
	// behind a node that just joined would); the API has it.
	f := newFixture(t, node("node-1", "192.168.56.101", "10.1.1.0/24"), node("node-5", "192.168.56.105", "10.1.5.0/24"))
	f.kube.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := f.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("nodes"), corev1.SchemeGroupVersion.WithKind("Node"), "")
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.NodeList)
		var keep []corev1.Node
		for _, n := range list.Items {
			if n.Name != "node-5" {
				keep = append(keep, n)
			}
		}
		list.Items = keep
		return true, list, nil
	})
	f.claim("node-1")
	f.claim("node-5")
	r := f.start(Params{Nodes: f.releaser()})
	r.waitSynced(t, 1)
	require.True(t, f.hasRecord("node-5"), "the API still has node-5: its record stays")
	require.True(t, f.hasRecord("node-1"))
	require.Zero(t, testutil.ToFloat64(r.r.m.released))
}

func TestFailedReleaseIsRetriedBySweep(t *testing.T) {
	n1 := node("node-1", "192.168.56.101", "10.1.1.0/24")
	f := newFixture(t, n1)
	f.claim("node-1")
	fail := make(chan struct{}, 1)
	fail <- struct{}{}
	rel := f.releaser()
	r := f.start(Params{Nodes: NodeReleaserFunc(func(ctx context.Context, etcd Etcd, name string) error {
		select {
		case <-fail:
			return context.DeadlineExceeded
		default:
			return rel.ReleaseNode(ctx, etcd, name)
		}
	})})
	r.waitSynced(t, 1)
	f.remove(n1)
	eventually(t, func() bool { return !f.hasRecord("node-1") }, "node-1 released after a failure")
	r.waitSynced(t, 2)
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.writeErrors))
}

func TestReleaseByDeposedLeaderIsRefused(t *testing.T) {
	f := newFixture(t)
	id := f.claim("node-1")
	r, err := New(Params{Kube: f.kube, Etcd: f.cli, Identity: "a"})
	require.NoError(t, err)
	ctx := context.Background()
	fc := r.acquire(ctx)
	require.NotNil(t, fc)
	defer fc.release()
	_, err = f.cli.Delete(ctx, LeaderKey) // another replica's term began
	require.NoError(t, err)
	err = f.releaser().ReleaseNode(ctx, fencedKV{Etcd: f.cli, f: fc}, "node-1")
	require.ErrorIs(t, err, ErrDeposed)
	require.True(t, f.hasRecord("node-1"), "the record was deleted")
	require.False(t, f.quarantined(id), "a tombstone was written")
}

// TestSweepSurvivesANodeItCannotCheck: the API refuses to say whether
// node-a exists (403, as with RBAC lacking get on nodes); the sweep still
// completes, releases node-b, and keeps node-a's record for the next one.
func TestSweepSurvivesANodeItCannotCheck(t *testing.T) {
	f := newFixture(t, node("node-1", "192.168.56.101", "10.1.1.0/24"))
	f.kube.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "node-a" {
			return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "node-a", errors.New("RBAC"))
		}
		return false, nil, nil
	})
	f.claim("node-1")
	f.claim("node-a")
	f.claim("node-b")
	r := f.start(Params{Nodes: f.releaser()})
	r.waitSynced(t, 1)
	require.False(t, f.hasRecord("node-b"), "node-b is released")
	require.True(t, f.hasRecord("node-a"), "node-a, which could not be checked, is kept")
	require.True(t, f.hasRecord("node-1"))
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.released))
	require.Equal(t, 1.0, testutil.ToFloat64(r.r.m.releaseErrors))
}

// TestNodeTaintsReachEtcd: the cluster autoscaler's to-be-deleted taint,
// put on and taken off a Node, reaches the Node's stored model, which the
// agents' proxy health reads to drain the node.
func TestNodeTaintsReachEtcd(t *testing.T) {
	n1 := node("node-1", "192.168.56.101", "10.1.1.0/24")
	f := newFixture(t, n1)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	key := kubestate.Key{Resource: kubestate.ResNode, Name: "node-1"}
	stored := func() *kubestate.Node {
		n, _ := f.etcdState()[key].(*kubestate.Node)
		return n
	}
	tainted := n1.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: kubestate.TaintToBeDeleted, Value: "1732560000", Effect: corev1.TaintEffectNoSchedule}}
	f.update(tainted)
	eventually(t, func() bool { n := stored(); return n != nil && n.HasTaint(kubestate.TaintToBeDeleted) }, "taint stored")
	require.Equal(t, []kubestate.Taint{{Key: kubestate.TaintToBeDeleted, Value: "1732560000", Effect: "NoSchedule"}}, stored().Taints)
	f.update(n1)
	eventually(t, func() bool { n := stored(); return n != nil && len(n.Taints) == 0 }, "taint removed")
}
