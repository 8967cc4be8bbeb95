package ksr

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"contiv.dev/vpp/kubestate"
)

// kind is one reflected resource and the informer that watches it.
type kind struct {
	res      kubestate.Resource
	informer func(informers.SharedInformerFactory) cache.SharedIndexInformer
}

// reflected lists the reflected resources in the order they are swept:
// namespaces and nodes before what lives in them, services before their
// slices.
func reflected() []kind {
	return []kind{
		{kubestate.ResNamespace, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Namespaces().Informer()
		}},
		{kubestate.ResNode, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Nodes().Informer()
		}},
		{kubestate.ResPod, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Pods().Informer()
		}},
		{kubestate.ResService, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Services().Informer()
		}},
		{kubestate.ResEndpointSlice, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Discovery().V1().EndpointSlices().Informer()
		}},
	}
}

// resourceRank is the place of r in reflected().
func resourceRank(r kubestate.Resource) int {
	for i, k := range reflected() {
		if k.res == r {
			return i
		}
	}
	return len(reflected())
}

// trim drops what no conversion reads and takes the most memory in the
// informer caches: managed fields.
func trim(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// storeKey is the kubestate key of the object under informer cache key key.
// It is only meaningful for keys that can be stored; others never are.
func storeKey(res kubestate.Resource, key string) kubestate.Key {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return kubestate.Key{Resource: res, Name: key}
	}
	return kubestate.Key{Resource: res, Namespace: ns, Name: name}
}

// encode converts a Kubernetes object of resource res into its compact
// model and its stored bytes, checking everything the writer checks. Every
// error means invalid input (kubestate.ErrInvalid, ErrUnsupported or
// ErrTooLarge) that no retry will fix.
func encode(res kubestate.Resource, obj any) (kubestate.Object, []byte, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, nil, fmt.Errorf("%T: %w", obj, kubestate.ErrUnsupported)
	}
	o, err := kubestate.FromK8s(ro)
	if err != nil {
		return nil, nil, err
	}
	if r := o.Key().Resource; r != res {
		return nil, nil, fmt.Errorf("%s in the %s informer: %w", o.Key(), res, kubestate.ErrUnsupported)
	}
	b, err := kubestate.Encode(o)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", kubestate.ErrInvalid, err)
	}
	if len(b) > kubestate.MaxValueSize {
		return nil, nil, fmt.Errorf("%s: %d bytes: %w", o.Key(), len(b), kubestate.ErrTooLarge)
	}
	return o, b, nil
}
