package simnode

import (
	"context"
	"errors"
	"net/netip"
	"strings"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// CNI stands in for the CNI when VPP is simulated: it gives every pod of
// this node a tap interface in the simulated VPP, tagged as the CNI would,
// so that local backends and frontends behave as on a real node. It runs
// before the service processor, which then finds the interfaces by tag. It
// is a controller handler.
type CNI struct {
	vpp  *sim.VPP
	node string
	tag  func(namespace, pod string) string
	// refresh re-reads the agent's interface table after a change.
	refresh func(context.Context) error
	// vrf is the pod VRF, where pod interfaces are.
	vrf uint32
}

var _ controller.Handler = (*CNI)(nil)

// NewCNI is the simulated CNI of node b.Node over v.
func NewCNI(v *sim.VPP, b Beside) *CNI {
	return &CNI{vpp: v, node: b.Node, tag: b.Tag, refresh: b.Refresh, vrf: b.PodVRF}
}

// Name implements controller.Handler.
func (c *CNI) Name() string { return "sim-cni" }

// HandlesEvent implements controller.Handler: pod changes.
func (c *CNI) HandlesEvent(ev controller.Event) bool {
	ch, ok := ev.(*controller.ChangeEvent)
	return ok && ch.Key.Resource == kubestate.ResPod
}

func (c *CNI) local(o kubestate.Object) bool {
	p, ok := o.(*kubestate.Pod)
	return ok && p.NodeName == c.node && !p.HostNetwork
}

// PodInterface is the name of the interface the CNI gives a pod.
func PodInterface(namespace, pod string) string { return "tap-" + namespace + "-" + pod }

// spec is the interface the CNI gives a local pod (PodSpec).
func (c *CNI) spec(namespace, name string, o kubestate.Object) sim.InterfaceSpec {
	p, _ := o.(*kubestate.Pod)
	return PodSpec(namespace, name, p, c.tag(namespace, name), c.vrf)
}

// PodSpec is the interface the simulated CNI gives pod namespace/name (p,
// when not nil, its object): tagged tag, in the pod VRF, with the pod's
// IPv4 address as a /32 (as a CNI that routes each pod).
func PodSpec(namespace, name string, p *kubestate.Pod, tag string, vrf uint32) sim.InterfaceSpec {
	s := sim.InterfaceSpec{Name: PodInterface(namespace, name), Tag: tag, VRF: vrf}
	if p != nil {
		for _, ip := range p.IPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				s.Address = netip.PrefixFrom(a, 32)
				break
			}
		}
	}
	return s
}

// Resync gives every local pod an interface and removes the others.
func (c *CNI) Resync(ctx context.Context, ev *controller.ResyncEvent) error {
	want := map[string]sim.InterfaceSpec{}
	for k, o := range ev.State.Objects {
		if k.Resource == kubestate.ResPod && c.local(o) {
			want[PodInterface(k.Namespace, k.Name)] = c.spec(k.Namespace, k.Name, o)
		}
	}
	var errs []error
	for _, i := range c.vpp.Interfaces() {
		if _, ok := want[i.Name]; !ok && strings.HasPrefix(i.Name, "tap-") {
			errs = append(errs, c.vpp.DelInterface(i.Name))
		}
	}
	have := map[string]bool{}
	for _, i := range c.vpp.Interfaces() {
		have[i.Name] = true
	}
	for name, spec := range want {
		if !have[name] {
			_, err := c.vpp.CreateInterface(spec)
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.refresh(ctx))
	return errors.Join(errs...)
}

// Update implements controller.Handler: a local pod gets its interface or
// loses it.
func (c *CNI) Update(ctx context.Context, ev controller.Event) error {
	ch := ev.(*controller.ChangeEvent)
	name := PodInterface(ch.Key.Namespace, ch.Key.Name)
	was, is := ch.Prev != nil && c.local(ch.Prev), ch.New != nil && c.local(ch.New)
	var err error
	switch {
	case is && !was:
		_, err = c.vpp.CreateInterface(c.spec(ch.Key.Namespace, ch.Key.Name, ch.New))
	case was && !is:
		err = c.vpp.DelInterface(name)
	default:
		return nil
	}
	return errors.Join(err, c.refresh(ctx))
}
