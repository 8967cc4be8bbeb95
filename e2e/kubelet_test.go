package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
// and, for each pod bound to one of them, does what a kubelet and its
// container runtime do for the pod's network: a sandbox with its own
// network namespace, wired by the node's contiv-cni through libcni (ADD),
// and reports the pod running with the IP of the CNI result
// and the Ready condition the pod's annotation asks for. A pod being
// deleted keeps its sandbox and status until the test finalizes it (the
// containers stopped): then its sandbox is torn down (DEL, the namespace
// removed) and the pod deleted for good; a pod deleted at once loses its
// sandbox when the deletion is seen. Host-network pods get their node's IP
// and no sandbox.
type kubelet struct {
	t    testing.TB
	kube kubernetes.Interface
	// figures gets how long each CNI call took.
	figures *figures

	// wg tracks the sandboxes being set up or torn down in the background.
	wg sync.WaitGroup
	// sem bounds the CNI calls in flight (a kubelet's pod workers run
	// in parallel; the machine is small).
	sem chan struct{}

	mu        sync.Mutex
	ids       map[string]uint32   // node name -> its agent's node ID
	cni       map[string]*nodeCNI // node name -> its runtime's CNI
	sandboxes map[types.UID]*sandbox
	store     cache.Store        // the informer's pods, once running
	finishing map[types.UID]bool // pods being finalized in the background
	reported  map[types.UID]report
	closed    bool // no sandbox is made any more
	addErrs   int  // failed ADDs (retried at the next resync)
}

func newKubelet(t testing.TB, kube kubernetes.Interface, figs *figures) *kubelet {
	return &kubelet{t: t, kube: kube, figures: figs, sem: make(chan struct{}, 8), ids: map[string]uint32{},
		cni: map[string]*nodeCNI{}, sandboxes: map[types.UID]*sandbox{}, finishing: map[types.UID]bool{}, reported: map[types.UID]report{}}
}

// Figures of the CNI calls (each through libcni and the plugin's process).
const (
	figADD   = "CNI ADD through libcni (netns made)"
	figDEL   = "CNI DEL through libcni (netns removed)"
	figCHECK = "CNI CHECK through libcni"
)

// attachCNI gives node name's runtime its CNI (installCNI) and waits until
// the network's CNI STATUS says the agent can wire pods.
func (k *kubelet) attachCNI(ctx context.Context, name string, c *nodeCNI) error {
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last = c.status(ctx); last == nil {
			k.mu.Lock()
			k.cni[name] = c
			k.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("CNI STATUS of node %s: %w", name, last)
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
// what failed (an API server restart, a failed ADD).
func (k *kubelet) run(ctx context.Context) {
	f := informers.NewSharedInformerFactory(k.kube, time.Second)
	inf := f.Core().V1().Pods().Informer()
	k.mu.Lock()
	k.store = inf.GetStore()
	k.mu.Unlock()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.sync(ctx, o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.sync(ctx, o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				k.wg.Go(func() { k.removeSandbox(context.WithoutCancel(ctx), p.UID) })
			}
		},
	})
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
	k.wg.Wait()
}

// podIP is the pod's address: its node's for a host-network pod, else the
// one CNI ADD gave its sandbox. ok is false while there is none yet; the
// first call for a pod starts its sandbox in the background, which reports
// the pod's status once wired.
func (k *kubelet) podIP(ctx context.Context, p *corev1.Pod) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id, ok := k.ids[p.Spec.NodeName]
	if !ok {
		return "", false
	}
	if p.Spec.HostNetwork {
		return nodeIP(id), true
	}
	if sb, ok := k.sandboxes[p.UID]; ok {
		select {
		case <-sb.ready:
			return sb.ip, sb.err == nil
		default:
			return "", false
		}
	}
	c, ok := k.cni[p.Spec.NodeName]
	if !ok || k.closed {
		return "", false
	}
	sb := &sandbox{namespace: p.Namespace, pod: p.Name, node: p.Spec.NodeName, id: newContainerID(), ready: make(chan struct{})}
	k.sandboxes[p.UID] = sb
	uid := p.UID
	k.wg.Go(func() {
		k.sem <- struct{}{}
		start := time.Now()
		err := sb.setUp(ctx, c, string(uid))
		d := time.Since(start)
		k.figures.add(figADD, d)
		<-k.sem
		if d > 10*time.Second {
			k.t.Logf("kubelet: the sandbox of %s/%s took %v (err %v)", sb.namespace, sb.pod, d.Round(time.Millisecond), err)
		}
		if err != nil {
			// As kubelet: the sandbox failed, the next sync tries again.
			k.t.Logf("kubelet: %v", err)
			k.mu.Lock()
			k.addErrs++
			if k.sandboxes[uid] == sb {
				delete(k.sandboxes, uid)
			}
			k.mu.Unlock()
			return
		}
		k.mu.Lock()
		store := k.store
		k.mu.Unlock()
		if o, ok, _ := store.GetByKey(sb.namespace + "/" + sb.pod); ok {
			if cur := o.(*corev1.Pod); cur.UID == uid {
				k.sync(ctx, cur)
			}
		}
	})
	return "", false
}

// removeSandbox tears the pod's sandbox down (DEL, the namespace removed),
// if it has one, once its ADD ended. A failed DEL fails the test: DEL must
// succeed whatever is left of the pod.
func (k *kubelet) removeSandbox(ctx context.Context, uid types.UID) {
	k.mu.Lock()
	sb, ok := k.sandboxes[uid]
	if !ok {
		k.mu.Unlock()
		return
	}
	c := k.cni[sb.node]
	delete(k.sandboxes, uid)
	k.mu.Unlock()
	<-sb.ready
	if sb.err != nil {
		return // setUp removed what it made
	}
	k.sem <- struct{}{}
	defer func() { <-k.sem }()
	start := time.Now()
	if err := sb.tearDown(ctx, c); err != nil {
		k.t.Errorf("kubelet: %v", err)
	}
	k.figures.add(figDEL, time.Since(start))
}

// finalizeAsync finalizes the terminating pod in the background (once),
// as a kubelet's pod workers do in parallel.
func (k *kubelet) finalizeAsync(ctx context.Context, p *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finishing[p.UID] {
		return
	}
	k.finishing[p.UID] = true
	k.wg.Go(func() {
		if err := k.finalize(ctx, p.Namespace, p.Name); err != nil {
			k.t.Logf("kubelet: finalizing %s/%s: %v", p.Namespace, p.Name, err)
			k.mu.Lock()
			delete(k.finishing, p.UID) // tried again at the next call
			k.mu.Unlock()
		}
	})
}

// describe says what the kubelet has of the pods whose name starts with
// prefix: their sandbox's state (for a failure's message).
func (k *kubelet) describe(prefix string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, sb := range k.sandboxes {
		if !strings.HasPrefix(sb.pod, prefix) {
			continue
		}
		state := "ADD in flight"
		select {
		case <-sb.ready:
			state = fmt.Sprintf("ip %q err %v", sb.ip, sb.err)
		default:
		}
		out = append(out, fmt.Sprintf("%s/%s on %s: %s", sb.namespace, sb.pod, sb.node, state))
	}
	slices.Sort(out)
	return fmt.Sprintf("%d sandboxes %v (failed ADDs so far: %d)", len(out), out, k.addErrs)
}

// running is a copy of the sandboxes wired, by pod UID.
func (k *kubelet) running() map[types.UID]*sandbox {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[types.UID]*sandbox{}
	for uid, sb := range k.sandboxes {
		select {
		case <-sb.ready:
			if sb.err == nil {
				out[uid] = sb
			}
		default:
		}
	}
	return out
}

// cniOf is node's CNI (nil if none).
func (k *kubelet) cniOf(node string) *nodeCNI {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cni[node]
}

// failedAdds is how many ADDs failed so far.
func (k *kubelet) failedAdds() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.addErrs
}

// removeAll stops making sandboxes and tears every one down, while the
// agents still run (it is registered to run before they stop).
func (k *kubelet) removeAll() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	for {
		k.mu.Lock()
		var uid types.UID
		for u := range k.sandboxes {
			uid = u
			break
		}
		k.mu.Unlock()
		if uid == "" {
			return
		}
		k.removeSandbox(context.Background(), uid)
	}
}

// sync patches the pod's status when it differs from what it should be.
func (k *kubelet) sync(ctx context.Context, p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	ip, ok := k.podIP(ctx, p)
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
	// The informer's copy may lag behind a patch just made (the worker and
	// the resync both report a new pod): report it again only once the
	// watch had time to show it, as each patch is an update the
	// EndpointSlice controller syncs the pod's services for.
	want := ip + "/" + string(ready)
	k.mu.Lock()
	r, seen := k.reported[p.UID]
	if seen && r.want == want && time.Since(r.at) < 5*time.Second {
		k.mu.Unlock()
		return
	}
	k.reported[p.UID] = report{want: want, at: time.Now()}
	k.mu.Unlock()
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
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := k.kube.CoreV1().Pods(p.Namespace).Patch(pctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		k.t.Logf("kubelet: status of %s/%s (retried at the next resync): %v", p.Namespace, p.Name, err)
		k.mu.Lock()
		delete(k.reported, p.UID)
		k.mu.Unlock()
	}
}

// report is the status last patched for a pod: its IP and readiness, when.
type report struct {
	want string
	at   time.Time
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// finalize tears the terminating pod's sandbox down and deletes the pod
// for good, as a kubelet does once its containers stopped.
func (k *kubelet) finalize(ctx context.Context, ns, name string) error {
	p, err := k.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	k.removeSandbox(ctx, p.UID)
	err = k.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
