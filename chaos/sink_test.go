package chaos

import (
	"context"
	"fmt"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"contiv.dev/vpp/kubestate"
)

// sink is where the churner writes a slice: etcd, or the Kubernetes API
// that the reflector mirrors into etcd.
type sink interface {
	// write replaces slice prev (nil: absent) by s (nil: delete); rev is
	// the etcd revision made, 0 when not known.
	write(ctx context.Context, prev, s *discoveryv1.EndpointSlice) (rev int64, err error)
}

// etcdSink writes the slices' models into etcd through kubestate.Writer,
// as contivctl load does.
type etcdSink struct {
	kv *revKV
	w  *kubestate.Writer
}

func newEtcdSink(kv clientv3.KV) *etcdSink {
	r := &revKV{KV: kv}
	return &etcdSink{kv: r, w: kubestate.NewWriter(r, nil)}
}

func (e *etcdSink) write(ctx context.Context, prev, s *discoveryv1.EndpointSlice) (int64, error) {
	var op kubestate.Op
	if s == nil {
		op = kubestate.DeleteOp(kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: prev.Namespace, Name: prev.Name})
	} else {
		m, err := kubestate.FromEndpointSlice(s)
		if err != nil {
			return 0, err
		}
		op = kubestate.PutOp(m)
	}
	// The churner makes one write at a time: the revision noted is this one's.
	if err := e.w.Apply(ctx, []kubestate.Op{op}); err != nil {
		return 0, err
	}
	return e.kv.last.Load(), nil
}

// apiSink writes the slices into a (fake) Kubernetes API.
type apiSink struct {
	kube kubernetes.Interface
}

func (a *apiSink) write(ctx context.Context, prev, s *discoveryv1.EndpointSlice) (int64, error) {
	var err error
	switch {
	case s == nil:
		err = a.kube.DiscoveryV1().EndpointSlices(prev.Namespace).Delete(ctx, prev.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	case prev == nil:
		_, err = a.kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s.DeepCopy(), metav1.CreateOptions{})
	default:
		_, err = a.kube.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s.DeepCopy(), metav1.UpdateOptions{})
	}
	if err != nil {
		return 0, fmt.Errorf("kubernetes API: %w", err)
	}
	return 0, nil
}

// revKV notes the revision of the last transaction through it.
type revKV struct {
	clientv3.KV
	last atomic.Int64
}

func (k *revKV) Txn(ctx context.Context) clientv3.Txn { return &revTxn{Txn: k.KV.Txn(ctx), kv: k} }

type revTxn struct {
	clientv3.Txn
	kv *revKV
}

func (t *revTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *revTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *revTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *revTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && resp.Header != nil {
		t.kv.last.Store(resp.Header.Revision)
	}
	return resp, err
}
