package service

import (
	"fmt"
	"slices"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// localPod is a pod of this node.
type localPod struct {
	ifName  string // "" while the pod has no known interface
	hostNet bool
	// wiredOnly: known as wired by the CNI (Params.Wired), its Pod
	// object not seen on this node (yet): the CNI's ADD may run before
	// the reflector's copy of the Pod reaches etcd.
	wiredOnly bool
}

// staticRoles are the roles of the configured interfaces.
func staticRoles(c Config) map[string]sr.InterfaceRole {
	const both = sr.RoleFrontend | sr.RoleBackend
	m := map[string]sr.InterfaceRole{}
	add := func(name string, r sr.InterfaceRole) {
		if name != "" {
			m[name] |= r
		}
	}
	add(c.VXLANBVI, both)
	if c.VXLANBVI == "" {
		add(c.MainInterface, both)
	} else {
		add(c.MainInterface, sr.RoleFrontend)
	}
	for _, n := range c.OtherInterfaces {
		add(n, sr.RoleFrontend)
	}
	add(c.HostInterconnect, both)
	return m
}

// user records (add) or forgets that service id has local pod k as a
// backend. A pod's backend role follows from the set of its users, so it
// can neither go negative nor stick.
func (p *Processor) user(k kubestate.Key, id sr.ServiceID, add bool) {
	if add {
		if !p.addUser(k, id) {
			return
		}
	} else {
		m := p.users[k]
		delete(m, id)
		if len(m) > 0 {
			return
		}
		delete(p.users, k)
	}
	if lp, ok := p.pods[k]; ok {
		p.refreshInterface(lp.ifName)
	}
}

// addUser records that service id has pod k as a backend; true when it is
// the pod's first user.
func (p *Processor) addUser(k kubestate.Key, id sr.ServiceID) bool {
	m := p.users[k]
	if m == nil {
		m = map[sr.ServiceID]struct{}{}
		p.users[k] = m
	}
	m[id] = struct{}{}
	return len(m) == 1
}

// podID is pod key k without its node: the processor knows this node's pods
// only, by namespace and name, as endpoints name them.
func podID(k kubestate.Key) kubestate.Key {
	k.Node = ""
	return k
}

func (p *Processor) podChanged(k kubestate.Key, pod *kubestate.Pod) {
	if pod == nil || pod.NodeName != p.name {
		p.wiredPod(k)
		return
	}
	p.setPod(k, p.lookup(k, pod.HostNetwork))
}

// forgetPod drops local pod k and the role it gave its interface.
func (p *Processor) forgetPod(k kubestate.Key) {
	lp, had := p.pods[k]
	if !had {
		return
	}
	delete(p.pods, k)
	p.unlink(lp.ifName, k)
	p.refreshInterface(lp.ifName)
}

// podInterface looks pod k's VPP interface up again (PodInterfaceEvent).
func (p *Processor) podInterface(k kubestate.Key) {
	lp, known := p.pods[k]
	switch {
	case known && lp.hostNet:
	case known && !lp.wiredOnly:
		p.setPod(k, p.lookup(k, false))
	default:
		p.wiredPod(k)
	}
}

// wiredPod: pod k, of no Pod object of this node, is a local pod while
// the CNI wired it here (Params.Wired) and VPP has its interface (the
// seed's ProcessNewPod: the CNI's ADD tells the processor at once, before
// the reflector's copy of the Pod reaches etcd); otherwise it is none.
// The Pod object, when it comes, takes over.
func (p *Processor) wiredPod(k kubestate.Key) {
	if p.wired != nil && p.wired.Wired(k.Namespace, k.Name) {
		if lp := p.lookup(k, false); lp.ifName != "" {
			lp.wiredOnly = true
			p.setPod(k, lp)
			return
		}
	}
	p.forgetPod(k)
}

// indexWired takes into a resync's indexes the wired pods the snapshot
// holds no object of (wiredPod's rule).
func (p *Processor) indexWired() {
	if p.wired == nil {
		return
	}
	for _, k := range p.wired.WiredPods() {
		k = podID(k)
		if _, ok := p.pods[k]; ok {
			continue
		}
		if lp := p.lookup(k, false); lp.ifName != "" {
			lp.wiredOnly = true
			p.pods[k] = lp
			p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
		}
	}
}

// lookup finds the interface of local pod k; host-network pods have none.
func (p *Processor) lookup(k kubestate.Key, hostNet bool) localPod {
	if hostNet {
		return localPod{hostNet: true}
	}
	name, ok := p.ifaces.InterfaceByTag(p.tag(k.Namespace, k.Name))
	if !ok {
		return localPod{}
	}
	return localPod{ifName: name}
}

// setPod records local pod k and updates the roles of its interfaces.
func (p *Processor) setPod(k kubestate.Key, lp localPod) {
	was, had := p.pods[k]
	p.pods[k] = lp
	if had && was.ifName == lp.ifName {
		return
	}
	if had {
		p.unlink(was.ifName, k)
		p.refreshInterface(was.ifName)
	}
	if lp.ifName != "" {
		p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
		p.refreshInterface(lp.ifName)
	}
}

func (p *Processor) unlink(ifName string, k kubestate.Key) {
	if ifName == "" {
		return
	}
	ks := slices.DeleteFunc(p.ifPods[ifName], func(x kubestate.Key) bool { return x == k })
	if len(ks) == 0 {
		delete(p.ifPods, ifName)
	} else {
		p.ifPods[ifName] = ks
	}
}

// role is what interface name is: configured roles, frontend for a local
// pod's interface, backend too while a service has the pod as a backend.
func (p *Processor) role(name string) sr.InterfaceRole {
	r := p.static[name]
	for _, k := range p.ifPods[name] {
		r |= sr.RoleFrontend
		if len(p.users[k]) > 0 {
			r |= sr.RoleBackend
		}
	}
	return r
}

// refreshInterface tells renderers when the role of name changed.
func (p *Processor) refreshInterface(name string) {
	if name == "" {
		return
	}
	r := p.role(name)
	if r == p.roles[name] {
		return
	}
	if r == 0 {
		delete(p.roles, name)
	} else {
		p.roles[name] = r
	}
	for i, rd := range p.renderers {
		if err := rd.UpdateInterface(name, r); err != nil {
			p.errs = append(p.errs, fmt.Errorf("renderer %d: interface %s: %w", i, name, err))
		}
	}
}
