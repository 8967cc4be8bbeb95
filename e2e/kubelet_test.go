package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// annotationReady set to "false" makes the kubelet stand-in report the pod
// not ready (a failing readiness probe).
const annotationReady = "e2e.contiv.dev/ready"

// kubelet stands in for the kubelets of every node: it registers the Nodes
// and, for each pod bound to one of them, reports it running with a pod IP
// from its node's pod subnet (10.1.<node ID>.0/24) and the Ready
// condition the pod's annotation asks for. A pod being deleted keeps its
// status until the test finalizes it (the containers stopped): then it is
// deleted for good. Host-network pods get their node's IP.
type kubelet struct {
	t    testing.TB
	kube kubernetes.Interface

	mu   sync.Mutex
	ids  map[string]uint32 // node name -> its agent's node ID
	ips  map[types.UID]string
	next map[string]int // node -> next host number
}

func newKubelet(t testing.TB, kube kubernetes.Interface) *kubelet {
	return &kubelet{t: t, kube: kube, ids: map[string]uint32{}, ips: map[types.UID]string{}, next: map[string]int{}}
}

// nodeIP is the InternalIP of node n (n = node ID).
func nodeIP(id uint32) string { return fmt.Sprintf("192.168.56.%d", 100+id) }

// registerNode creates the Node object of name, whose agent has node ID id.
func (k *kubelet) registerNode(ctx context.Context, name string, id uint32) error {
	k.mu.Lock()
	k.ids[name] = id
	k.mu.Unlock()
	subnet := fmt.Sprintf("10.1.%d.0/24", id)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
		Spec:       corev1.NodeSpec{PodCIDR: subnet, PodCIDRs: []string{subnet}},
	}
	created, err := k.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	created.Status = corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP(id)}, {Type: corev1.NodeHostName, Address: name}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
	}
	if _, err := k.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	return nil
}

// run reports pod status until ctx ends; a resync every second retries
// what failed (an API server restart).
func (k *kubelet) run(ctx context.Context) {
	f := informers.NewSharedInformerFactory(k.kube, time.Second)
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.sync(ctx, o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.sync(ctx, o.(*corev1.Pod)) },
	})
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}

// podIP is the address the pod gets: allocated once per pod.
func (k *kubelet) podIP(p *corev1.Pod) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id, ok := k.ids[p.Spec.NodeName]
	if !ok {
		return "", false
	}
	if p.Spec.HostNetwork {
		return nodeIP(id), true
	}
	if ip, ok := k.ips[p.UID]; ok {
		return ip, true
	}
	k.next[p.Spec.NodeName]++
	n := 10 + k.next[p.Spec.NodeName]
	ip := netip.AddrFrom4([4]byte{10, 1, byte(id), byte(n)}).String()
	k.ips[p.UID] = ip
	return ip, true
}

// sync patches the pod's status when it differs from what it should be.
func (k *kubelet) sync(ctx context.Context, p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	ip, ok := k.podIP(p)
	if !ok {
		return
	}
	ready := corev1.ConditionTrue
	if p.Annotations[annotationReady] == "false" {
		ready = corev1.ConditionFalse
	}
	k.mu.Lock()
	hostIP := nodeIP(k.ids[p.Spec.NodeName])
	k.mu.Unlock()
	if p.Status.Phase == corev1.PodRunning && p.Status.PodIP == ip && condition(p, corev1.PodReady) == ready {
		return
	}
	now := metav1.Now()
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	status := corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue), cond(corev1.PodInitialized, corev1.ConditionTrue),
			cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready)},
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		k.t.Errorf("kubelet: %v", err)
		return
	}
	// A failure (the API server restarting) is retried at the next resync.
	_, _ = k.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// finalize deletes the terminating pod for good, as a kubelet does once
// its containers stopped.
func (k *kubelet) finalize(ctx context.Context, ns, name string) error {
	err := k.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
