package ksr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
)

const leaseNS = "contiv-system"

func testElection() *Election {
	return &Election{
		Namespace:     leaseNS,
		LeaseDuration: 2 * time.Second,
		RenewDeadline: time.Second,
		RetryPeriod:   100 * time.Millisecond,
	}
}

// holderCheck fails when id does not hold the lease (read from the API).
func (f *fixture) holderCheck(id string) func() error {
	return func() error {
		l, err := f.kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := l.Spec.HolderIdentity; h == nil || *h != id {
			return fmt.Errorf("%s writes while the lease holder is %v", id, h)
		}
		return nil
	}
}

// replica starts a reflector campaigning for the lease as id through kube.
func (f *fixture) replica(id string, kube kubernetes.Interface) *running {
	f.t.Helper()
	return f.startKV(Params{Identity: id, Election: testElection(), Kube: kube}, &watchedKV{KV: f.cli, check: f.holderCheck(id)})
}

// leaderOf waits until exactly one of rs leads and returns it and the other.
func leaderOf(t *testing.T, a, b *running) (leader, follower *running) {
	t.Helper()
	eventually(t, func() bool { return a.r.Status().Leader != b.r.Status().Leader }, "one leader")
	if a.r.Status().Leader {
		return a, b
	}
	return b, a
}

func TestOnlyTheLeaderWritesAndTheOtherTakesOverWhenItStops(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80), namespace("shop", nil))
	a, b := f.replica("a", f.kube), f.replica("b", f.kube)
	leader, follower := leaderOf(t, a, b)
	leader.waitSynced(t, 1)
	f.waitEqual()
	f.create(service("shop", "b", "10.96.0.2", 80))
	f.waitEqual()
	require.Equal(t, 1.0, testutil.ToFloat64(leader.r.m.isLeader))
	require.Equal(t, 0.0, testutil.ToFloat64(follower.r.m.isLeader))
	require.Zero(t, follower.kv.calls.Load(), "the follower never touched etcd")
	require.False(t, follower.r.Status().Leader)
	require.True(t, follower.r.Ready(), "a follower is ready")
	eventually(t, func() bool { return follower.r.Status().ObservedLeader == leader.r.Status().Identity }, "follower sees the leader")

	leader.stop() // releases the lease
	eventually(t, func() bool { return follower.r.Status().Leader }, "follower takes over")
	follower.waitSynced(t, 1)
	f.create(service("shop", "c", "10.96.0.3", 80))
	f.remove(service("shop", "a", "", 0))
	f.waitEqual()
	require.NotZero(t, follower.kv.calls.Load())
	require.Empty(t, a.kv.Violations())
	require.Empty(t, b.kv.Violations())
}

func TestLeaderThatCannotRenewStopsWritingAndTheOtherTakesOver(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	var cutA, cutB atomic.Bool
	a := f.replica("a", partitionable{Interface: f.kube, cut: &cutA})
	b := f.replica("b", partitionable{Interface: f.kube, cut: &cutB})
	leader, follower := leaderOf(t, a, b)
	leader.waitSynced(t, 1)
	f.waitEqual()

	// The leader loses the API for its lease (as a crashed or cut-off
	// replica would): it stops writing by itself; the other takes over once
	// the lease has expired.
	if leader == a {
		cutA.Store(true)
	} else {
		cutB.Store(true)
	}
	eventually(t, func() bool { return !leader.r.Status().Leader }, "the cut-off leader stops")
	calls := leader.kv.calls.Load()
	eventually(t, func() bool { return follower.r.Status().Leader }, "the other takes over")
	follower.waitSynced(t, 1)
	f.create(service("shop", "b", "10.96.0.2", 80))
	f.waitEqual()
	require.Equal(t, calls, leader.kv.calls.Load(), "the old leader wrote nothing since it stopped")
	require.Equal(t, 0.0, testutil.ToFloat64(leader.r.m.isLeader))
	require.Empty(t, a.kv.Violations())
	require.Empty(t, b.kv.Violations())
}

func TestParametersAreChecked(t *testing.T) {
	f := newFixture(t)
	_, err := New(Params{Kube: f.kube, Etcd: f.cli, Election: &Election{Namespace: leaseNS}})
	require.ErrorIs(t, err, ErrConfig, "identity required")
	_, err = New(Params{Kube: f.kube, Etcd: f.cli, Identity: "a", Election: &Election{}})
	require.ErrorIs(t, err, ErrConfig, "namespace required")
	_, err = New(Params{Kube: f.kube, Etcd: f.cli, Identity: "a", Election: &Election{
		Namespace: leaseNS, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second,
	}})
	require.ErrorIs(t, err, ErrConfig, "renew deadline longer than the lease")
	_, err = New(Params{Etcd: f.cli})
	require.ErrorContains(t, err, "Kube")
	_, err = New(Params{Kube: f.kube, Etcd: f.cli, EtcdTimeout: -time.Second})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "EtcdTimeout -1s")
}

// partitionable is an API client whose Lease calls fail while cut is set.
type partitionable struct {
	kubernetes.Interface
	cut *atomic.Bool
}

// IsWatchListSemanticsUnSupported passes on what the fake clientset tells
// informers: it cannot stream lists.
func (p partitionable) IsWatchListSemanticsUnSupported() bool { return true }

func (p partitionable) CoordinationV1() coordclient.CoordinationV1Interface {
	return partCoord{p.Interface.CoordinationV1(), p.cut}
}

type partCoord struct {
	coordclient.CoordinationV1Interface
	cut *atomic.Bool
}

func (c partCoord) Leases(ns string) coordclient.LeaseInterface {
	return partLeases{c.CoordinationV1Interface.Leases(ns), c.cut}
}

type partLeases struct {
	coordclient.LeaseInterface
	cut *atomic.Bool
}

var errCut = errors.New("connection refused (test partition)")

func (l partLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordv1.Lease, error) {
	if l.cut.Load() {
		return nil, errCut
	}
	return l.LeaseInterface.Get(ctx, name, o)
}

func (l partLeases) Create(ctx context.Context, lease *coordv1.Lease, o metav1.CreateOptions) (*coordv1.Lease, error) {
	if l.cut.Load() {
		return nil, errCut
	}
	return l.LeaseInterface.Create(ctx, lease, o)
}

func (l partLeases) Update(ctx context.Context, lease *coordv1.Lease, o metav1.UpdateOptions) (*coordv1.Lease, error) {
	if l.cut.Load() {
		return nil, errCut
	}
	return l.LeaseInterface.Update(ctx, lease, o)
}

// TestNoLeaderIsNotReady: when no replica can lead (here the Lease's
// namespace does not exist, so it cannot be created), every replica says
// so once no leader was seen for longer than the lease duration: not
// ready, with the reason and the API's error, and a metric.
func TestNoLeaderIsNotReady(t *testing.T) {
	f := newFixture(t)
	f.kube.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), leaseNS)
	})
	r := f.start(Params{Identity: "a", Election: testElection()})
	h := r.r.HTTP("", r.reg).Handler()
	eventually(t, func() bool { return !r.r.Ready() }, "not ready without a leader")
	code, body := get(t, h, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "no replica has led for")
	require.Contains(t, body, `namespaces "contiv-system" not found`)
	require.NotEmpty(t, r.r.Status().NoLeaderFor)
	_, body = get(t, h, "/metrics")
	require.Contains(t, body, "contiv_ksr_no_leader 1")
}
