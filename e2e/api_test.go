package e2e

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The API changes: each is one step (see system.step) whose convergence
// time is a figure.

// workload deploys service web with two pods, one per node.
func (s *system) workload() {
	kube := s.cp.kube
	s.step("create service + 2 pods", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service("web"), metav1.CreateOptions{}); err != nil {
			return err
		}
		for _, p := range []*corev1.Pod{pod("web-a", "node-1", app("web"), "http", 8080), pod("web-b", "node-2", app("web"), "http", 8080)} {
			if _, err := kube.CoreV1().Pods(testNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}, s.count("web", 2, isReady))
}

func app(name string) map[string]string { return map[string]string{"app": name} }

// setReady makes the kubelet report pod name ready or not.
func (s *system) setReady(ctx context.Context, name string, ready bool) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotationReady, fmt.Sprint(ready))
	_, err := s.cp.kube.CoreV1().Pods(testNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// readinessFlip turns web-a not ready and ready again.
func (s *system) readinessFlip() {
	for _, ready := range []bool{false, true} {
		want := 1
		if ready {
			want = 2
		}
		s.step("readiness flip", func(ctx context.Context) error { return s.setReady(ctx, "web-a", ready) }, s.count("web", want, isReady))
	}
}

// scaleUpAndDelete adds two pods, deletes one gracefully (it serves while
// terminating until the kubelet finalizes it) and one at once.
func (s *system) scaleUpAndDelete() {
	pods := s.cp.kube.CoreV1().Pods(testNamespace)
	s.step("scale-up 2 -> 4", func(ctx context.Context) error {
		for _, p := range []*corev1.Pod{pod("web-c", "node-1", app("web"), "http", 8080), pod("web-d", "node-2", app("web"), "http", 8080)} {
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}, s.count("web", 4, isReady))
	s.step("graceful delete (terminating)", func(ctx context.Context) error {
		return pods.Delete(ctx, "web-c", metav1.DeleteOptions{})
	}, s.count("web", 1, func(e endpoint) bool { return e.terminating && e.serving }))
	s.step("final delete of the terminating pod", func(ctx context.Context) error {
		return s.kubelet.finalize(ctx, testNamespace, "web-c")
	}, s.count("web", 3, func(endpoint) bool { return true }))
	s.step("immediate delete", func(ctx context.Context) error {
		return pods.Delete(ctx, "web-d", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	}, s.count("web", 2, func(endpoint) bool { return true }))
}

// updateService applies f to service name (retrying conflicts).
func (s *system) updateService(ctx context.Context, name string, f func(*corev1.Service)) error {
	svcs := s.cp.kube.CoreV1().Services(testNamespace)
	for {
		svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(svc)
		_, err = svcs.Update(ctx, svc, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// serviceTypes walks web through NodePort, LoadBalancer, ExternalName and
// back to ClusterIP, and sets internalTrafficPolicy Local.
func (s *system) serviceTypes() {
	change := func(name string, f func(*corev1.Service)) {
		s.step(name, func(ctx context.Context) error { return s.updateService(ctx, "web", f) }, nil)
	}
	change("type ClusterIP -> NodePort", func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeNodePort })
	change("type NodePort -> LoadBalancer", func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeLoadBalancer })
	change("type LoadBalancer -> ExternalName", func(svc *corev1.Service) {
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "web.example.invalid",
			Selector: svc.Spec.Selector, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}
	})
	change("type ExternalName -> ClusterIP", func(svc *corev1.Service) {
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeClusterIP, ""
	})
	change("internalTrafficPolicy Local", func(svc *corev1.Service) {
		svc.Spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyLocal)
	})
	change("internalTrafficPolicy Cluster", func(svc *corev1.Service) {
		svc.Spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyCluster)
	})
}

// selectorless creates a service without selector and its Endpoints,
// which the controller-manager mirrors into an EndpointSlice.
func (s *system) selectorless() {
	kube := s.cp.kube
	s.step("selectorless Endpoints mirrored", func(ctx context.Context) error {
		svc := service("ext")
		svc.Spec.Selector = nil
		svc.Spec.Ports[0].TargetPort = intstr.FromInt32(9000)
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		//nolint:staticcheck // the Endpoints API is what selectorless services are fed with
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: testNamespace},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "192.168.56.50"}, {IP: "192.168.56.51"}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: 9000, Protocol: corev1.ProtocolTCP}},
			}},
		}
		_, err := kube.CoreV1().Endpoints(testNamespace).Create(ctx, ep, metav1.CreateOptions{})
		return err
	}, s.count("ext", 2, isReady))
}

// namedPorts creates a service whose target port name maps to different
// container ports: the controller splits its endpoints over two slices.
func (s *system) namedPorts() {
	kube := s.cp.kube
	s.step("named port over 2 slices", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service("multi"), metav1.CreateOptions{}); err != nil {
			return err
		}
		for _, p := range []*corev1.Pod{pod("multi-a", "node-1", app("multi"), "http", 8080), pod("multi-b", "node-2", app("multi"), "http", 9090)} {
			if _, err := kube.CoreV1().Pods(testNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context) (bool, string) {
		l, err := kube.DiscoveryV1().EndpointSlices(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=multi"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, sl := range l.Items {
			for _, e := range sl.Endpoints {
				if deref(e.Conditions.Ready) {
					ready++
				}
			}
		}
		return len(l.Items) == 2 && ready == 2, fmt.Sprintf("service multi: %d slices, %d ready endpoints; want 2 and 2", len(l.Items), ready)
	})
}

// nodeReregister deletes node-2's Node while its agent runs (the
// reflector releases its ID) and registers it again, as its kubelet would:
// the agent claims its ID again.
func (s *system) nodeReregister() {
	n := s.nodes[1]
	s.step("Node delete + re-register", func(ctx context.Context) error {
		if err := s.cp.kube.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		// The reflector releases the node's ID on the delete; wait for it.
		waitFor(s.t, 30*time.Second, func() (bool, string) {
			return !s.hasNodeRecord(ctx, n.name), n.name + "'s node record was not released"
		})
		return s.kubelet.registerNode(ctx, n.name, n.a.NodeID())
	}, func(ctx context.Context) (bool, string) {
		return s.hasNodeRecord(ctx, n.name), n.name + " has no node record"
	})
}
