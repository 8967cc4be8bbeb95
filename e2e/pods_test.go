package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// The pods' wiring: every pod is wired by the node's contiv-cni through
// libcni (the kubelet stand-in); these checks read it back from the
// simulated VPPs, IPAM's records in the contiv etcd and the sandboxes.

// podIfPrefix starts the VPP name of a pod's af_packet interface (the
// agent's end of its veth: "host-" and plugins/pods' "vpp<hash>").
const podIfPrefix = "host-vpp"

// podInterfaceNames maps the VPP name of each pod interface of the node's
// VPP to the name the offline render's stand-in CNI gives that pod
// (simnode.PodInterface), the pod known by the interface's tag
// ("<namespace>/<pod>", the default contivconf.NAT44Config.PodInterfaceTag).
func (n *node) podInterfaceNames() map[string]string {
	out := map[string]string{}
	for _, i := range n.vpp.Interfaces() {
		ns, pod, ok := strings.Cut(i.Tag, "/")
		if ok && strings.HasPrefix(i.Name, podIfPrefix) {
			out[i.Name] = simnode.PodInterface(ns, pod)
		}
	}
	return out
}

// renderNames renames the pod interfaces of lines (a NAT44 state's
// "interface <name> <features>" lines, sorted and contiguous) by names and
// sorts them again.
func renderNames(lines []string, names map[string]string) []string {
	first, last := -1, -1
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "interface ")
		if !ok {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		name, feat, _ := strings.Cut(rest, " ")
		if r, ok := names[name]; ok {
			lines[i] = "interface " + r + " " + feat
		}
	}
	if first >= 0 {
		slices.Sort(lines[first : last+1])
	}
	return lines
}

// wiredPod is a running pod as the kubelet sees it: its sandbox's address.
type wiredPod struct {
	namespace, name, node string
	ip                    netip.Addr
	sb                    *sandbox
}

func (p wiredPod) String() string { return p.namespace + "/" + p.name }

// runningPods are the API's pods with a sandbox (bound to a node, not on
// the host network), after checking that each has one, wired, whose
// address is the pod's status IP and in its node's PodCIDR.
func (s *system) runningPods(ctx context.Context) ([]wiredPod, error) {
	l, err := s.cp.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes, err := s.cp.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	podCIDR := map[string]string{}
	for _, n := range nodes.Items {
		podCIDR[n.Name] = n.Spec.PodCIDR
	}
	sbs := s.kubelet.running()
	var out []wiredPod
	var bad []string
	for _, p := range l.Items {
		if p.Spec.NodeName == "" || p.Spec.HostNetwork {
			continue
		}
		sb, ok := sbs[p.UID]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s/%s on %s has no sandbox wired", p.Namespace, p.Name, p.Spec.NodeName))
			continue
		}
		ip, err := netip.ParseAddr(sb.ip)
		if err != nil || p.Status.PodIP != sb.ip {
			bad = append(bad, fmt.Sprintf("%s/%s: CNI gave %q, status says %q", p.Namespace, p.Name, sb.ip, p.Status.PodIP))
			continue
		}
		if cidr, err := netip.ParsePrefix(podCIDR[p.Spec.NodeName]); err != nil || !cidr.Contains(ip) {
			bad = append(bad, fmt.Sprintf("%s/%s: CNI gave %s, not in node %s's PodCIDR %q", p.Namespace, p.Name, ip, p.Spec.NodeName, podCIDR[p.Spec.NodeName]))
			continue
		}
		out = append(out, wiredPod{namespace: p.Namespace, name: p.Name, node: p.Spec.NodeName, ip: ip, sb: sb})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("pods not wired as the API says:\n%s", strings.Join(bad, "\n"))
	}
	return out, nil
}

// wiringDiff lists what differs between node n's simulated VPP and its
// running pods: each pod has exactly one interface tagged with it, up, in
// the pod VRF, unnumbered, with a /32 route to the pod's address through
// it and a static neighbour for that address on it; no pod interface is
// left of a pod not running.
func wiringDiff(n *node, pods []wiredPod) []string {
	var bad []string
	byTag := map[string][]sim.Interface{}
	for _, i := range n.vpp.Interfaces() {
		if strings.HasPrefix(i.Name, podIfPrefix) {
			byTag[i.Tag] = append(byTag[i.Tag], i)
		}
	}
	routes := map[netip.Prefix]sim.Route{}
	for _, r := range n.vpp.Routes() {
		if r.VRF == n.cfg.Routing.PodVRFID && r.Via {
			routes[r.Prefix] = r
		}
	}
	neigh := map[netip.Addr]uint32{}
	for _, nb := range n.vpp.Neighbours() {
		neigh[nb.IP] = nb.Interface
	}
	unnumbered := n.vpp.Unnumbered()
	for _, p := range pods {
		tag := n.cfg.NAT44.InterfaceTag(p.namespace, p.name)
		ifs := byTag[tag]
		delete(byTag, tag)
		if len(ifs) != 1 {
			bad = append(bad, fmt.Sprintf("%s: %d interfaces tagged %q, want 1: %v", p, len(ifs), tag, ifs))
			continue
		}
		d, _ := n.vpp.InterfaceNamed(ifs[0].Name)
		switch {
		case !d.AdminUp || d.VRF != n.cfg.Routing.PodVRFID:
			bad = append(bad, fmt.Sprintf("%s: interface %s up=%v vrf=%d, want up in VRF %d", p, d.Name, d.AdminUp, d.VRF, n.cfg.Routing.PodVRFID))
		case !hasKey(unnumbered, d.Index):
			bad = append(bad, fmt.Sprintf("%s: interface %s is not unnumbered to the pod gateway", p, d.Name))
		case routes[netip.PrefixFrom(p.ip, 32)].ViaInterface != d.Index || !routes[netip.PrefixFrom(p.ip, 32)].Via:
			bad = append(bad, fmt.Sprintf("%s: no route %s/32 in VRF %d through %s", p, p.ip, n.cfg.Routing.PodVRFID, d.Name))
		case neigh[p.ip] != d.Index:
			bad = append(bad, fmt.Sprintf("%s: no neighbour %s on %s", p, p.ip, d.Name))
		}
	}
	for _, tag := range slices.Sorted(maps.Keys(byTag)) {
		for _, i := range byTag[tag] {
			bad = append(bad, fmt.Sprintf("interface %s tagged %q is left of a pod not running on %s", i.Name, tag, n.name))
		}
	}
	return bad
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// ipamRecords are IPAM's records of node in the contiv etcd: pod
// ("<namespace>/<name>") to address.
func (s *system) ipamRecords(ctx context.Context, node string) (map[string]string, error) {
	resp, err := s.etcdCli.Get(ctx, ipam.KeyPrefix(node), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), ipam.KeyPrefix(node))] = string(kv.Value)
	}
	return out, nil
}

// checkPods waits until every node's VPP holds exactly its running pods'
// wiring and IPAM's records in etcd are exactly the running pods with
// their addresses (no leak after deletes); then CNI CHECK passes for
// every sandbox. It returns how many pods run.
func (s *system) checkPods() int {
	s.t.Helper()
	var n int
	waitFor(s.t, time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pods, err := s.runningPods(ctx)
		if err != nil {
			return false, err.Error()
		}
		var bad []string
		for _, nd := range s.nodes {
			var here []wiredPod
			want := map[string]string{}
			for _, p := range pods {
				if p.node == nd.name {
					here = append(here, p)
					want[p.String()] = p.ip.String()
				}
			}
			bad = append(bad, wiringDiff(nd, here)...)
			got, err := s.ipamRecords(ctx, nd.name)
			if err != nil {
				return false, err.Error()
			}
			if !maps.Equal(got, want) {
				bad = append(bad, fmt.Sprintf("%s: IPAM's records in etcd %v, the running pods %v", nd.name, got, want))
			}
		}
		n = len(pods)
		return len(bad) == 0, strings.Join(bad, "\n")
	})
	// CNI CHECK of every sandbox, a few at a time.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, sb := range s.kubelet.running() {
		c := s.kubelet.cniOf(sb.node)
		if c == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			if err := sb.check(ctx, c); err != nil {
				s.t.Error(err)
			}
			s.figures.add(figCHECK, time.Since(start))
		})
	}
	wg.Wait()
	return n
}

// podChurn adds and deletes pods of a service while the service changes,
// in rounds: a pod deleted at once, one deleted gracefully and finalized
// (its sandbox torn down), one re-created at once under the name of the
// pod just deleted (a new sandbox of the same pod name: the same address
// may come back), a new one, and the service's type or port changed. Each
// round must converge to the render as every step, and then every running
// pod's wiring must be in its node's VPP and IPAM's records must be the
// running pods. At the end the service and its pods go: nothing of them
// may be left in VPP or IPAM.
func (s *system) podChurn() {
	kube := s.cp.kube
	pods := kube.CoreV1().Pods(testNamespace)
	const svc = "churn"
	nodeOf := func(i int) string { return fmt.Sprintf("node-%d", 1+i%2) }
	var live []string
	next := 0
	newPod := func(ctx context.Context, name string) error {
		_, err := pods.Create(ctx, pod(name, nodeOf(next), app(svc), "http", 8080), metav1.CreateOptions{})
		next++
		return err
	}
	fresh := func() string { return fmt.Sprintf("churn-%d", next) }
	s.step("churn: service + 4 pods", func(ctx context.Context) error {
		if _, err := kube.CoreV1().Services(testNamespace).Create(ctx, service(svc), metav1.CreateOptions{}); err != nil {
			return err
		}
		for range 4 {
			name := fresh()
			if err := newPod(ctx, name); err != nil {
				return err
			}
			live = append(live, name)
		}
		return nil
	}, s.count(svc, 4, isReady))
	s.t.Logf("churn: %d pods running and wired", s.checkPods())
	changes := []func(*corev1.Service){
		func(v *corev1.Service) { v.Spec.Type = corev1.ServiceTypeNodePort },
		func(v *corev1.Service) { v.Spec.Ports[0].Port = 8000 },
		func(v *corev1.Service) { v.Spec.Type, v.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 0 },
	}
	for round, change := range changes {
		s.step(fmt.Sprintf("churn: pods replaced while the service changes (round %d)", round+1), func(ctx context.Context) error {
			gone, graceful := live[0], live[1]
			live = live[2:]
			if err := pods.Delete(ctx, gone, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				return err
			}
			if err := pods.Delete(ctx, graceful, metav1.DeleteOptions{}); err != nil {
				return err
			}
			if err := s.updateService(ctx, svc, change); err != nil {
				return err
			}
			if err := s.kubelet.finalize(ctx, testNamespace, graceful); err != nil {
				return err
			}
			// The name of the pod deleted at once comes back (a new pod, a
			// new sandbox), beside a new one.
			if err := s.waitGone(ctx, gone); err != nil {
				return err
			}
			if err := newPod(ctx, gone); err != nil {
				return err
			}
			name := fresh()
			if err := newPod(ctx, name); err != nil {
				return err
			}
			live = append(live, gone, name)
			return nil
		}, s.count(svc, 4, isReady))
		s.t.Logf("churn round %d: %d pods running and wired", round+1, s.checkPods())
	}
	s.step("churn: service and its pods deleted", func(ctx context.Context) error {
		if err := kube.CoreV1().Services(testNamespace).Delete(ctx, svc, metav1.DeleteOptions{}); err != nil {
			return err
		}
		for _, name := range live {
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				return err
			}
		}
		return nil
	}, s.noSlices(svc))
	s.t.Logf("churn done: %d pods running and wired", s.checkPods())
	if n := s.kubelet.failedAdds(); n > 0 {
		s.t.Logf("CNI ADDs failed (and retried) so far: %d", n)
	}
}

// waitGone waits until pod name is gone from the API (its UID with it).
func (s *system) waitGone(ctx context.Context, name string) error {
	for {
		_, err := s.cp.kube.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s not gone: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
