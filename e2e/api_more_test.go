package e2e

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// More API changes: terminating fallback, publishNotReadyAddresses,
// host-network pods, pod binding, a service over many slices, the garbage
// collection of a deleted service's slices and a namespace deletion.

// servingTerminating deletes every pod of a service gracefully: only
// serving-terminating endpoints are left (the fallback), then none.
func (s *system) servingTerminating() {
	kube := s.cp.kube
	pods := []*corev1.Pod{pod("fb-a", "node-1", app("fb"), "http", 8080), pod("fb-b", "node-2", app("fb"), "http", 8080)}
	s.step("create service + 2 pods", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service("fb"), metav1.CreateOptions{}); err != nil {
			return err
		}
		return s.createPods(ctx, pods...)
	}, s.count("fb", 2, isReady))
	s.step("all endpoints serving-terminating", func(ctx context.Context) error {
		for _, p := range pods {
			if err := kube.CoreV1().Pods(testNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		return nil
	}, s.count("fb", 2, func(e endpoint) bool { return e.serving && e.terminating && !e.ready }))
	s.step("final deletes of the terminating pods", func(ctx context.Context) error {
		for _, p := range pods {
			if err := s.kubelet.finalize(ctx, testNamespace, p.Name); err != nil {
				return err
			}
		}
		return nil
	}, s.count("fb", 0, func(endpoint) bool { return true }))
	s.step("service deleted: slices garbage-collected", func(ctx context.Context) error {
		return kube.CoreV1().Services(testNamespace).Delete(ctx, "fb", metav1.DeleteOptions{})
	}, s.noSlices("fb"))
}

// noSlices is a settled condition: service svc has no EndpointSlice left.
func (s *system) noSlices(svc string) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		l, err := s.cp.kube.DiscoveryV1().EndpointSlices(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("service %s still has %d slices", svc, len(l.Items))
	}
}

func (s *system) createPods(ctx context.Context, pods ...*corev1.Pod) error {
	for _, p := range pods {
		if _, err := s.cp.kube.CoreV1().Pods(testNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// notReadyAddresses: a service publishing not-ready addresses keeps a pod
// that turns not ready.
func (s *system) notReadyAddresses() {
	kube := s.cp.kube
	s.step("publishNotReadyAddresses, pod not ready", func(ctx context.Context) error {
		svc := service("pnr")
		svc.Spec.PublishNotReadyAddresses = true
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		p := pod("pnr-a", "node-1", app("pnr"), "http", 8080)
		p.Annotations = map[string]string{annotationReady: "false"}
		return s.createPods(ctx, p)
	}, s.count("pnr", 1, isReady))
}

// hostNetworkAndBinding: a host-network pod (its node's IP) behind a
// service, and a pod created unscheduled and then bound to a node through
// the binding subresource, as a scheduler binds it.
func (s *system) hostNetworkAndBinding() {
	kube := s.cp.kube
	s.step("host-network pod", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service("hn"), metav1.CreateOptions{}); err != nil {
			return err
		}
		p := pod("hn-a", "node-2", app("hn"), "http", 8080)
		p.Spec.HostNetwork = true
		return s.createPods(ctx, p)
	}, s.count("hn", 1, isReady))
	s.step("pod bound by the binding subresource", func(ctx context.Context) error {
		if err := s.createPods(ctx, pod("hn-b", "", app("hn"), "http", 8080)); err != nil {
			return err
		}
		return kube.CoreV1().Pods(testNamespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "hn-b", Namespace: testNamespace},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}, metav1.CreateOptions{})
	}, s.count("hn", 2, isReady))
}

// manyPods runs a service over 120 pods: more than one slice holds (100).
func (s *system) manyPods() {
	kube := s.cp.kube
	const n = 120
	s.step("120-pod service over 2 slices", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service("big"), metav1.CreateOptions{}); err != nil {
			return err
		}
		for i := range n {
			if err := s.createPods(ctx, pod(fmt.Sprintf("big-%03d", i), fmt.Sprintf("node-%d", 1+i%2), app("big"), "http", 8080)); err != nil {
				return err
			}
		}
		return nil
	}, s.count("big", n, isReady))
}

// namespaceDeleted deletes the test namespace: the namespace controller
// deletes its services and pods, the kubelet finalizes the pods, and
// nothing of it is left in etcd or on the agents.
func (s *system) namespaceDeleted() {
	kube := s.cp.kube
	s.step("namespace deleted", func(ctx context.Context) error {
		return kube.CoreV1().Namespaces().Delete(ctx, testNamespace, metav1.DeleteOptions{})
	}, func(ctx context.Context) (bool, string) {
		// The kubelet finalizes the pods the namespace controller deletes.
		pods, err := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp != nil {
				s.kubelet.finalizeAsync(ctx, p)
			}
		}
		_, err = kube.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s not deleted yet (%d pods left): %v", testNamespace, len(pods.Items), err)
	})
}
