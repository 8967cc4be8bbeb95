package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"contiv.dev/vpp/kubestate"
)

// The churned services: chaos/churn-K, ClusterIP 10.96.200.K+1 port 80,
// each with one EndpointSlice whose every version is distinct (see
// sliceVersion). They are Kubernetes objects, written into etcd either
// converted (kubestate.FromK8s) or through the reflector.
const (
	churnNamespace = "chaos"
	churnServices  = 6
)

// churnObjects are the namespace and services the churned slices belong to.
func churnObjects() []runtime.Object {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: churnNamespace}}}
	for k := range churnServices {
		objs = append(objs, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: churnNamespace, Name: fmt.Sprintf("churn-%d", k),
				CreationTimestamp: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, k, 0, time.UTC))},
			Spec: corev1.ServiceSpec{
				Type:       corev1.ServiceTypeClusterIP,
				ClusterIP:  churnVIP(k),
				ClusterIPs: []string{churnVIP(k)},
				Ports:      []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}},
			},
		})
	}
	return objs
}

func churnVIP(k int) string { return fmt.Sprintf("10.96.200.%d", k+1) }

func sliceKey(k int) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: churnNamespace, Name: fmt.Sprintf("churn-%d-x", k)}
}

// sliceVersion is version v of service k's slice: nil (deleted) for every
// seventh version, else one to three ready endpoints on different nodes,
// all on target port 10000+v, so that each version renders differently.
func sliceVersion(k, v int) *discoveryv1.EndpointSlice {
	if v%7 == 6 {
		return nil
	}
	key := sliceKey(k)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("churn-%d", k)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Protocol: new(corev1.ProtocolTCP), Port: new(int32(10000 + v))}},
	}
	for j := range 1 + v%3 {
		node := (k+v+j)%3 + 1
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.1.%d.%d", node, 100+(v*3+j)%100)},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
			NodeName:   new(fmt.Sprintf("node-%d", node)),
		})
	}
	return s
}

// stored is what etcd holds for slice s: its compact model (nil for nil).
func stored(t testing.TB, s *discoveryv1.EndpointSlice) kubestate.Object {
	t.Helper()
	if s == nil {
		return nil
	}
	o, err := kubestate.FromEndpointSlice(s)
	if err != nil {
		t.Fatalf("converting %s/%s: %v", s.Namespace, s.Name, err)
	}
	return o
}

// exampleManifests are the Kubernetes objects of
// deploy/examples/cluster.yaml; namespaced objects without a namespace get
// the default one, as kubestate.LoadYAML gives them.
func exampleManifests(t testing.TB) []runtime.Object {
	t.Helper()
	f, err := os.Open("../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := scheme.Codecs.UniversalDeserializer()
	yr := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []runtime.Object
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		j, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		if string(j) == "null" {
			continue
		}
		obj, _, err := dec.Decode(j, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch o := obj.(type) {
		case *corev1.Service, *corev1.Pod, *discoveryv1.EndpointSlice:
			if m := o.(metav1.Object); m.GetNamespace() == "" {
				m.SetNamespace(kubestate.DefaultNamespace)
			}
		}
		out = append(out, obj)
	}
}

// compact converts Kubernetes objects into the models etcd holds.
func compact(t testing.TB, objs []runtime.Object) []kubestate.Object {
	t.Helper()
	out := make([]kubestate.Object, 0, len(objs))
	for _, o := range objs {
		m, err := kubestate.FromK8s(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
