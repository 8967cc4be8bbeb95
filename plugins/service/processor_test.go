package service

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

func podM(name, node, ip string) *kubestate.Pod {
	return &kubestate.Pod{Namespace: "default", Name: name, NodeName: node, IPs: []string{ip}}
}

func svcKey(name string) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResService, Namespace: "default", Name: name}
}

func sliceKey(name string) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: "default", Name: name}
}

// podKey is the key of pod name of this node (node-1).
func podKey(name string) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResPod, Node: "node-1", Namespace: "default", Name: name}
}

// wantState fails unless the rig's state (checked against a resync) is want.
func wantState(t *testing.T, r *rig, want string) {
	t.Helper()
	if got := r.check(); got != want {
		t.Fatalf("state:\n%s\nwant:\n%s", got, want)
	}
}

func TestNewRefusesMissingDependencies(t *testing.T) {
	_, err := New(Params{Renderers: []sr.Renderer{nil}})
	if !errors.Is(err, ErrMissingDependency) {
		t.Fatalf("err = %v, want ErrMissingDependency", err)
	}
	for _, name := range []string{"Node", "Subnets", "Interfaces", "Renderers[0]"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestStaticInterfaceRoles(t *testing.T) {
	overlay := staticRoles(Config{MainInterface: "eth0", OtherInterfaces: []string{"eth1"}, HostInterconnect: "tap0", VXLANBVI: "bvi0"})
	want := map[string]sr.InterfaceRole{"eth0": sr.RoleFrontend, "eth1": sr.RoleFrontend,
		"tap0": sr.RoleFrontend | sr.RoleBackend, "bvi0": sr.RoleFrontend | sr.RoleBackend}
	if !mapsEqual(overlay, want) {
		t.Errorf("with overlay: %v, want %v", overlay, want)
	}
	flat := staticRoles(Config{MainInterface: "eth0", HostInterconnect: "tap0"})
	want = map[string]sr.InterfaceRole{"eth0": sr.RoleFrontend | sr.RoleBackend, "tap0": sr.RoleFrontend | sr.RoleBackend}
	if !mapsEqual(flat, want) {
		t.Errorf("without overlay: %v, want %v", flat, want)
	}
}

func mapsEqual(a, b map[string]sr.InterfaceRole) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSliceBeforeServiceRenderedWhenServiceArrives(t *testing.T) {
	r := newRig(t)
	r.resync()
	r.put(sliceM("web", "web-a", ready("10.1.2.5", "")))
	wantState(t, r, "if eth0 frontend,backend\nnode node-1 id=1 ips=10.20.0.1,192.168.16.1\n")
	r.put(svcM("web"))
	wantState(t, r, `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
if eth0 frontend,backend
node node-1 id=1 ips=10.20.0.1,192.168.16.1
`)
	// Deleting the service keeps the slice: the service comes back whole.
	r.del(svcKey("web"))
	r.check()
	r.put(svcM("web"))
	if got := r.check(); !strings.Contains(got, "backend 10.1.2.5:8080") {
		t.Fatalf("slice lost with its service:\n%s", got)
	}
}

func TestSliceMovesBetweenServices(t *testing.T) {
	r := newRig(t)
	r.resync()
	r.put(svcM("a", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.1"} }),
		svcM("b", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.2"} }),
		sliceM("a", "x", ready("10.1.2.5", "")))
	r.put(sliceM("b", "x", ready("10.1.2.5", "")))
	wantState(t, r, `svc default/a cluster=10.96.0.1
  port http TCP 80
svc default/b cluster=10.96.0.2
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
if eth0 frontend,backend
node node-1 id=1 ips=10.20.0.1,192.168.16.1
`)
	// Without its service-name label a slice belongs to no service.
	r.put(sliceM("", "x", ready("10.1.2.5", "")))
	if strings.Contains(r.check(), "backend 10.1.2.5") {
		t.Fatal("an unlabelled slice still serves")
	}
}

// TestChangeTouchesOneService: a slice change derives one service and makes
// one renderer call; an equal result makes none.
func TestChangeTouchesOneService(t *testing.T) {
	r := newRig(t)
	for i, name := range []string{"a", "b", "c"} {
		ip := "10.96.0." + string(rune('1'+i))
		r.state[svcKey(name)] = svcM(name, func(s *kubestate.Service) { s.ClusterIPs = []string{ip} })
		r.state[sliceKey(name)] = sliceM(name, name, ready("10.1.2.5", ""))
	}
	r.resync()
	if r.p.builds != 3 || r.rec.calls != 1 {
		t.Fatalf("resync: %d builds, %d renderer calls; want 3 builds and one Resync", r.p.builds, r.rec.calls)
	}
	builds, calls := r.p.builds, r.rec.calls
	r.put(sliceM("b", "b", ready("10.1.2.5", ""), ready("10.1.2.6", "")))
	if r.p.builds-builds != 1 || r.rec.calls-calls != 1 {
		t.Fatalf("one slice change: %d builds, %d renderer calls; want 1 and 1", r.p.builds-builds, r.rec.calls-calls)
	}
	builds, calls = r.p.builds, r.rec.calls
	// A change that does not change the result (another endpoint that is
	// not ready) derives again but calls no renderer.
	r.put(sliceM("b", "b", ready("10.1.2.5", ""), ready("10.1.2.6", ""), notReady("10.1.2.7")))
	if r.p.builds-builds != 1 || r.rec.calls != calls {
		t.Fatalf("no-op change: %d builds, %d renderer calls; want 1 and 0", r.p.builds-builds, r.rec.calls-calls)
	}
	r.check()
}

func TestOtherNodesTouchNothing(t *testing.T) {
	r := newRig(t)
	r.state[svcKey("web")] = svcM("web", func(s *kubestate.Service) { s.Type, s.Ports[0].NodePort = "NodePort", 30080 })
	r.state[sliceKey("web")] = sliceM("web", "web", ready("192.168.16.1", ""), ready("10.1.2.5", ""))
	r.resync()
	builds, calls := r.p.builds, r.rec.calls
	join := &controller.NodeUpdate{Name: "node-101", New: &kubestate.VppNode{Name: "node-101", ID: 101, VppIPs: []string{"192.168.16.101/24"}}}
	if r.p.HandlesEvent(join) {
		t.Error("HandlesEvent(another node's update) = true")
	}
	if err := r.p.Update(context.Background(), join); err != nil {
		t.Fatal(err)
	}
	other := &controller.ChangeEvent{Key: podM("x", "node-2", "10.1.2.9").Key(), New: podM("x", "node-2", "10.1.2.9")}
	if r.p.HandlesEvent(other) {
		t.Error("HandlesEvent(a pod of another node) = true")
	}
	r.put(podM("x", "node-2", "10.1.2.9"))
	if r.p.builds != builds || r.rec.calls != calls {
		t.Fatalf("other nodes: %d builds and %d renderer calls, want none", r.p.builds-builds, r.rec.calls-calls)
	}
}

// TestOwnAddressChange: renderers learn this node's new addresses; only
// services with host-network endpoints are derived again, and a backend on
// an address the node lost is no longer local.
func TestOwnAddressChange(t *testing.T) {
	r := newRig(t)
	r.state[svcKey("host")] = svcM("host", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.1"} })
	r.state[sliceKey("host")] = sliceM("host", "host", ready("192.168.16.1", ""))
	r.state[svcKey("pods")] = svcM("pods", func(s *kubestate.Service) {
		s.ClusterIPs, s.Type, s.Ports[0].NodePort = []string{"10.96.0.2"}, "NodePort", 30080
	})
	r.state[sliceKey("pods")] = sliceM("pods", "pods", ready("10.1.1.5", ""), ready("10.1.2.5", ""))
	r.resync()
	builds := r.p.builds
	r.node.ips = []netip.Addr{netip.MustParseAddr("192.168.16.7")}
	ev := &controller.NodeUpdate{Name: "node-1", New: &kubestate.VppNode{Name: "node-1", ID: 1, VppIPs: []string{"192.168.16.7/24"}}}
	if !r.p.HandlesEvent(ev) {
		t.Fatal("HandlesEvent(this node's update) = false")
	}
	r.apply(ev)
	if got := r.p.builds - builds; got != 1 {
		t.Errorf("%d services derived, want 1 (the one with a host-network endpoint)", got)
	}
	wantState(t, r, `svc default/host cluster=10.96.0.1
  port http TCP 80
    backend 192.168.16.1:8080 host ready serving
svc default/pods cluster=10.96.0.2
  port http TCP 80 nodePort=30080
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
if eth0 frontend,backend
node node-1 id=1 ips=192.168.16.7
`)
	// The same addresses again: nothing happens.
	calls := r.rec.calls
	r.apply(ev)
	if r.rec.calls != calls {
		t.Error("an unchanged node update reached the renderers")
	}
}

// TestOwnIPv6Address: this node's IPv6 VPP address arriving from its
// record reaches the renderers beside the IPv4 one (their NodePort
// frontends), and a host-network IPv6 endpoint on it becomes local.
func TestOwnIPv6Address(t *testing.T) {
	r := newRig(t)
	r.state[svcKey("dual")] = svcM("dual", func(s *kubestate.Service) {
		s.ClusterIPs, s.Type, s.Ports[0].NodePort = []string{"10.96.0.2", "fd00:96::2"}, "NodePort", 30080
	})
	v4, v6 := sliceM("dual", "dual-4", ready("10.1.2.5", "")), sliceM("dual", "dual-6", ready("2001:db8:16::1", ""))
	v6.AddressType = "IPv6"
	r.state[v4.Key()], r.state[v6.Key()] = v4, v6
	r.resync()
	r.node.ips = append(r.node.ips, netip.MustParseAddr("2001:db8:16::1"))
	r.apply(&controller.NodeUpdate{Name: "node-1", New: &kubestate.VppNode{Name: "node-1", ID: 1,
		VppIPs: []string{"192.168.16.1/24", "2001:db8:16::1/64"}}})
	wantState(t, r, `svc default/dual cluster=10.96.0.2,fd00:96::2
  port http TCP 80 nodePort=30080
    backend 10.1.2.5:8080 ready serving
    backend [2001:db8:16::1]:8080 local host ready serving
if eth0 frontend,backend
node node-1 id=1 ips=10.20.0.1,192.168.16.1,2001:db8:16::1
`)
}

// The pod lifecycle cases: the reference processor's reference counts went
// negative or stuck (contiv-original.md 8.2). Each step is checked against
// a resync of the same state.
func TestPodInterfaces(t *testing.T) {
	const (
		fe   = "if tap-web-1 frontend\n"
		both = "if tap-web-1 frontend,backend\n"
	)
	base := func(t *testing.T) *rig {
		r := newRig(t)
		r.ifaces["default/web-1"] = "tap-web-1"
		r.resync()
		r.put(svcM("web"))
		return r
	}
	ifLines := func(r *rig) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(r.check(), "\n") {
			if strings.HasPrefix(l, "if tap") {
				b.WriteString(l)
			}
		}
		return b.String()
	}
	slice := func() *kubestate.EndpointSlice { return sliceM("web", "web-a", ready("10.1.1.5", "web-1")) }

	t.Run("pod then endpoints then endpoints gone then pod gone", func(t *testing.T) {
		r := base(t)
		r.put(podM("web-1", "node-1", "10.1.1.5"))
		if got := ifLines(r); got != fe {
			t.Fatalf("pod alone: %q, want %q", got, fe)
		}
		r.put(slice())
		if got := ifLines(r); got != both {
			t.Fatalf("pod serving: %q, want %q", got, both)
		}
		r.del(sliceKey("web-a"))
		if got := ifLines(r); got != fe {
			t.Fatalf("endpoints gone: %q, want %q", got, fe)
		}
		r.del(podKey("web-1"))
		if got := ifLines(r); got != "" {
			t.Fatalf("pod gone: %q, want nothing", got)
		}
	})
	t.Run("endpoints before the pod", func(t *testing.T) {
		r := base(t)
		r.put(slice())
		if got := ifLines(r); got != "" {
			t.Fatalf("no pod yet: %q", got)
		}
		r.put(podM("web-1", "node-1", "10.1.1.5"))
		if got := ifLines(r); got != both {
			t.Fatalf("pod arrived after its endpoints: %q, want %q", got, both)
		}
	})
	t.Run("pod deleted before its endpoints, then recreated with the same name", func(t *testing.T) {
		r := base(t)
		r.put(podM("web-1", "node-1", "10.1.1.5"), slice())
		r.del(podKey("web-1"))
		if got := ifLines(r); got != "" {
			t.Fatalf("pod deleted: %q, want nothing", got)
		}
		r.del(sliceKey("web-a"))
		r.check()
		r.put(podM("web-1", "node-1", "10.1.1.6"), sliceM("web", "web-a", ready("10.1.1.6", "web-1")))
		if got := ifLines(r); got != both {
			t.Fatalf("recreated pod: %q, want %q", got, both)
		}
		r.del(sliceKey("web-a"))
		if got := ifLines(r); got != fe {
			t.Fatalf("recreated pod without endpoints: %q, want %q (no stuck count)", got, fe)
		}
	})
	t.Run("pod scheduled here: the old key's delete comes after the new key's put", func(t *testing.T) {
		// What an agent watching every node's pods may take in when the
		// reflector moves a pod from its unscheduled key.
		r := base(t)
		pending := podM("web-1", "", "")
		r.put(pending, slice())
		placed := podM("web-1", "node-1", "10.1.1.5")
		r.change(placed.Key(), placed)
		r.change(pending.Key(), nil)
		if got := ifLines(r); got != both {
			t.Fatalf("after the move: %q, want %q", got, both)
		}
	})
	t.Run("pod recreated while its endpoints stay", func(t *testing.T) {
		r := base(t)
		r.put(podM("web-1", "node-1", "10.1.1.5"), slice())
		r.del(podKey("web-1"))
		r.put(podM("web-1", "node-1", "10.1.1.5"))
		if got := ifLines(r); got != both {
			t.Fatalf("recreated pod: %q, want %q", got, both)
		}
	})
	t.Run("two services share a pod", func(t *testing.T) {
		r := base(t)
		r.put(podM("web-1", "node-1", "10.1.1.5"), slice(),
			svcM("api", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.11"} }),
			sliceM("api", "api-a", ready("10.1.1.5", "web-1")))
		r.del(sliceKey("web-a"))
		if got := ifLines(r); got != both {
			t.Fatalf("one service left: %q, want %q", got, both)
		}
		r.del(svcKey("api"))
		if got := ifLines(r); got != fe {
			t.Fatalf("no service left: %q, want %q", got, fe)
		}
	})
	t.Run("interface appears after the pod", func(t *testing.T) {
		r := base(t)
		delete(r.ifaces, "default/web-1")
		r.put(podM("web-1", "node-1", "10.1.1.5"), slice())
		if got := ifLines(r); got != "" {
			t.Fatalf("no interface yet: %q", got)
		}
		r.ifaces["default/web-1"] = "tap-web-1"
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		if got := ifLines(r); got != both {
			t.Fatalf("interface appeared: %q, want %q", got, both)
		}
		delete(r.ifaces, "default/web-1")
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		if got := ifLines(r); got != "" {
			t.Fatalf("interface gone: %q", got)
		}
	})
	t.Run("CNI ADD before the Pod object", func(t *testing.T) {
		// The agent's pod manager wired the pod and told the processor
		// (issue 35) before the reflector's copy of the Pod reached etcd:
		// its interface has its roles at once, keeps them across a resync
		// (a fresh processor's too: check) until the object comes and
		// after it went while the pod is wired; with the interface gone,
		// or the pod unwired, it has none.
		r := base(t)
		r.put(slice())
		r.wired["default/web-1"] = true
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		if got := ifLines(r); got != both {
			t.Fatalf("wired, no Pod object yet: %q, want %q", got, both)
		}
		r.resync()
		if got := ifLines(r); got != both {
			t.Fatalf("after a resync, no Pod object yet: %q, want %q", got, both)
		}
		r.put(podM("web-1", "node-1", "10.1.1.5"))
		if got := ifLines(r); got != both {
			t.Fatalf("the Pod object came: %q, want %q", got, both)
		}
		r.del(podKey("web-1"))
		if got := ifLines(r); got != both {
			t.Fatalf("the Pod object went, the pod still wired: %q, want %q", got, both)
		}
		delete(r.wired, "default/web-1")
		delete(r.ifaces, "default/web-1")
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		if got := ifLines(r); got != "" {
			t.Fatalf("unwired: %q, want nothing", got)
		}
		// An interface tagged for a pod the CNI did not wire (another
		// CNI's, without cni.enabled) waits for the Pod object, as before.
		r.ifaces["default/web-1"] = "tap-web-1"
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		if got := ifLines(r); got != "" {
			t.Fatalf("not wired by this CNI, no object: %q, want nothing", got)
		}
	})
	t.Run("an interface VPP lost is reported lost, role or not", func(t *testing.T) {
		r := base(t)
		r.put(podM("web-1", "node-1", "10.1.1.5"), slice())
		// The CNI re-creates the interface: while it is gone the pod has
		// no interface, and its role is gone too.
		delete(r.ifaces, "default/web-1")
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		r.apply(&InterfaceEvent{Name: "tap-web-1", Lost: true, LostIndex: 7})
		r.ifaces["default/web-1"] = "tap-web-1"
		r.apply(&PodInterfaceEvent{Namespace: "default", Name: "web-1"})
		r.rec.reannounced = map[string]bool{"tap-web-1": true}
		r.apply(&InterfaceEvent{Name: "tap-web-1"})
		if got := ifLines(r); got != both {
			t.Fatalf("interface back: %q, want %q", got, both)
		}
		if rec := r.rec; !slices.Equal(rec.lost, []string{"tap-web-1@7"}) {
			t.Errorf("renderer told of lost interfaces %q, want [tap-web-1@7]", rec.lost)
		}
	})
	t.Run("host-network pods have no interface", func(t *testing.T) {
		r := base(t)
		p := podM("web-1", "node-1", "192.168.16.1")
		p.HostNetwork = true
		r.put(p, sliceM("web", "web-a", ready("192.168.16.1", "web-1")))
		if got := ifLines(r); got != "" {
			t.Fatalf("host-network pod: %q", got)
		}
	})
	t.Run("custom interface tag", func(t *testing.T) {
		r := newRig(t)
		r.cfg.PodInterfaceTag = func(ns, name string) string { return "pod:" + ns + ":" + name }
		r.p, r.rec = r.processor()
		r.ifaces["pod:default:web-1"] = "tap-web-1"
		r.resync()
		r.put(svcM("web"), podM("web-1", "node-1", "10.1.1.5"), slice())
		if got := ifLines(r); got != both {
			t.Fatalf("custom tag: %q, want %q", got, both)
		}
	})
}

// TestSameFrontendPassedThrough: two services claiming one VIP:port/proto
// are both handed to renderers; the NAT44 renderer picks the oldest.
func TestSameFrontendPassedThrough(t *testing.T) {
	r := newRig(t)
	r.resync()
	r.put(svcM("b"), svcM("a"))
	got := r.check()
	if !strings.Contains(got, "svc default/a cluster=10.96.0.10") || !strings.Contains(got, "svc default/b cluster=10.96.0.10") {
		t.Fatalf("both services must be passed through:\n%s", got)
	}
}

// TestRendererErrors: an error is returned wrapped, every renderer still
// gets every call, and the processor's state follows the input.
func TestRendererErrors(t *testing.T) {
	r := newRig(t)
	bad := newRecorder()
	bad.fail = errRender
	p, err := New(Params{Renderers: []sr.Renderer{bad, r.rec}, Node: r.node, Subnets: r.node, Interfaces: r.ifaces, Config: r.cfg})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	if err := p.Resync(context.Background(), r.snapshot()); !errors.Is(err, errRender) {
		t.Fatalf("resync err = %v, want errRender", err)
	}
	r.state[svcKey("web")] = svcM("web")
	err = p.Update(context.Background(), &controller.ChangeEvent{Key: svcKey("web"), New: svcM("web")})
	if !errors.Is(err, errRender) || !strings.Contains(err.Error(), "renderer 0: add default/web") {
		t.Fatalf("update err = %v, want errRender naming renderer and service", err)
	}
	if got, want := bad.dump(), r.check(); got != want {
		t.Fatalf("renderers got different calls:\n%s\n%s", got, want)
	}
	if err := p.Update(context.Background(), &PodInterfaceEvent{Namespace: "default", Name: "none"}); err != nil {
		t.Fatalf("errors must not stick to later events: %v", err)
	}
}

func TestResyncWithoutSnapshotKeepsState(t *testing.T) {
	r := newRig(t)
	r.state[svcKey("web")] = svcM("web")
	r.resync()
	err := r.p.Resync(context.Background(), &controller.ResyncEvent{Kind: controller.ResyncHealing})
	if !errors.Is(err, ErrNoSnapshot) || len(r.p.Services()) != 1 || r.rec.resyncs != 1 {
		t.Fatalf("err = %v, %d services, %d renderer resyncs; want ErrNoSnapshot and nothing touched", err, len(r.p.Services()), r.rec.resyncs)
	}
}

// TestMismatchedObjectIgnored: an object stored under another key (a bug
// upstream) is ignored, not taken for a delete.
func TestMismatchedObjectIgnored(t *testing.T) {
	r := newRig(t)
	r.state[svcKey("web")] = svcM("web")
	r.resync()
	calls := r.rec.calls
	for _, o := range []kubestate.Object{svcM("other"), podM("web", "node-1", "10.1.1.5")} {
		if err := r.p.Update(context.Background(), &controller.ChangeEvent{Key: svcKey("web"), New: o}); err != nil {
			t.Fatal(err)
		}
	}
	if r.rec.calls != calls || len(r.p.Services()) != 1 {
		t.Fatal("a mismatched object changed the state")
	}
}

func TestSkippedAndCounts(t *testing.T) {
	r := newRig(t)
	r.resync()
	r.put(svcM("web", func(s *kubestate.Service) {
		s.Ports = append(s.Ports, kubestate.ServicePort{Name: "sig", Protocol: "SCTP", Port: 3868})
	}), svcM("dns", func(s *kubestate.Service) { s.ClusterIPs = []string{"None"} }))
	want := "default/dns service/default/dns headless\ndefault/web service/default/web port=sig sctp-unsupported: protocol \"SCTP\"\n"
	if got := formatSkips(r.p.Skipped()); got != want {
		t.Fatalf("skipped:\n%s\nwant:\n%s", got, want)
	}
	c := r.p.SkipCounts()
	if c[ReasonSCTP] != 1 || c[ReasonHeadless] != 1 || len(c) != 2 {
		t.Fatalf("counts = %v", c)
	}
	r.put(svcM("web"))
	if c := r.p.SkipCounts(); c[ReasonSCTP] != 0 {
		t.Fatalf("a fixed service still counted: %v", c)
	}
	if !ReasonHeadless.Ignored() || ReasonSCTP.Ignored() || ReasonInvalidEndpoint.String() != "invalid-endpoint" {
		t.Fatal("reason classification")
	}
	j, err := json.Marshal(Skip{Reason: ReasonSCTP})
	if err != nil || !strings.Contains(string(j), `"Reason":"sctp-unsupported"`) {
		t.Fatalf("JSON of a skip: %s, %v", j, err)
	}
}

// TestResyncDerivesWhatChanged: a resync handing over the objects the
// processor holds (periodic and healing resyncs do) derives no service and
// hands renderers the outputs they hold; a new object, or this node seen
// otherwise (a zone changed while the watch was lost), derives again what
// it touches, and the result equals a fresh processor's.
func TestResyncDerivesWhatChanged(t *testing.T) {
	// local is a ready endpoint of pod on this node, hinted for zone.
	local := func(ip, pod, zone string) kubestate.Endpoint {
		e := hinted(ip, zones(zone), nil)
		e.Edit(func(f *kubestate.EndpointFields) { f.TargetKind, f.TargetName = "Pod", pod })
		return e
	}
	r := newRig(t)
	r.ifaces["default/web-1"] = "tap-web-1"
	node := &kubestate.Node{Name: "node-1", Zone: "zone-a"}
	r.state[node.Key()] = node
	for i, name := range []string{"a", "b", "c"} {
		ip := "10.96.0." + string(rune('1'+i))
		r.state[svcKey(name)] = svcM(name, func(s *kubestate.Service) { s.ClusterIPs = []string{ip} })
		r.state[sliceKey(name)] = sliceM(name, name, local("10.1.1.5", "web-1", "zone-a"), hinted("10.1.2.5", zones("zone-b"), nil))
	}
	r.resync()
	first := r.p.Services()
	builds := r.p.builds
	r.resync()
	if got := r.p.builds - builds; got != 0 {
		t.Errorf("resync of the same objects derived %d services, want 0", got)
	}
	if again := r.p.Services(); len(again) != 3 || again[0] != first[0] || again[2] != first[2] {
		t.Error("resync of the same objects made new outputs")
	}
	r.check()

	builds = r.p.builds
	r.state[sliceKey("b")] = sliceM("b", "b", local("10.1.1.5", "web-1", "zone-a"), hinted("10.1.2.5", zones("zone-b"), nil))
	r.resync()
	if got := r.p.builds - builds; got != 1 {
		t.Errorf("resync with one new slice derived %d services, want 1", got)
	}
	r.check()

	builds = r.p.builds
	r.state[node.Key()] = &kubestate.Node{Name: "node-1", Zone: "zone-b"}
	r.resync()
	if got := r.p.builds - builds; got != 3 {
		t.Errorf("resync with this node in another zone derived %d services, want 3", got)
	}
	r.check()
}

// resyncCapture is a renderer that keeps the services of the last resync.
type resyncCapture struct {
	counter
	services []*sr.ContivService
}

func (c *resyncCapture) Resync(d *sr.ResyncData) error { c.services = d.Services; return nil }

// TestResyncOrder: a resync hands renderers the services in the order of
// their IDs, namespaces and names compared as strings, whatever bytes
// they share.
func TestResyncOrder(t *testing.T) {
	r := newRig(t)
	capture := &resyncCapture{}
	p, err := New(Params{Renderers: []sr.Renderer{capture}, Node: r.node, Subnets: r.node, Interfaces: r.ifaces})
	if err != nil {
		t.Fatal(err)
	}
	ids := []sr.ServiceID{{Namespace: "kube-system-b", Name: "a"}, {Namespace: "kube-system-a", Name: "b"}, {Namespace: "kube-system", Name: "dns"},
		{Namespace: "default", Name: "web-frontend-1"}, {Namespace: "default", Name: "web-frontend"}, {Namespace: "default", Name: "web-frontend-0"},
		{Namespace: "default", Name: "web"}, {Namespace: "default", Name: "a"}, {Namespace: "defaults", Name: "a"}, {Namespace: "d", Name: "z"}}
	for i, id := range ids {
		s := svcM(id.Name, func(s *kubestate.Service) {
			s.Namespace, s.ClusterIPs = id.Namespace, []string{"10.96.0." + strconv.Itoa(i+1)}
		})
		r.state[s.Key()] = s
	}
	if err := p.Resync(context.Background(), r.snapshot()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range capture.services {
		got = append(got, s.ID.String())
	}
	want := []string{"d/z", "default/a", "default/web", "default/web-frontend", "default/web-frontend-0", "default/web-frontend-1",
		"defaults/a", "kube-system/dns", "kube-system-a/b", "kube-system-b/a"}
	if !slices.Equal(got, want) {
		t.Fatalf("resync order:\n%v\nwant\n%v", got, want)
	}
}
