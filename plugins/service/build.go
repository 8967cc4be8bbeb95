package service

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// maxAffinityTimeout is the largest ClientIP timeout Kubernetes accepts (1 day).
const maxAffinityTimeout = 86400

// nodeView is what the derivation needs to know about this node.
type nodeView struct {
	name string
	id   uint32
	// ips are this node's own addresses, sorted and unique.
	ips []netip.Addr
	// podNet is this node's pod subnet, allPods the pod range of the cluster.
	podNet, allPods netip.Prefix
	// zone is this node's topology.kubernetes.io/zone label ("" when unset).
	zone string
}

// equal tells whether v and w are the same view.
func (v *nodeView) equal(w *nodeView) bool {
	return v.name == w.name && v.id == w.id && slices.Equal(v.ips, w.ips) &&
		v.podNet == w.podNet && v.allPods == w.allPods && v.zone == w.zone
}

// own tells whether ip is one of this node's own addresses.
func (v *nodeView) own(ip netip.Addr) bool {
	_, ok := slices.BinarySearchFunc(v.ips, ip, netip.Addr.Compare)
	return ok
}

// locate tells whether a backend at ip is outside the cluster's pod range
// (host network), and whether it runs on this node. As in kube-proxy, the
// endpoint's nodeName decides; only an endpoint without one is judged by
// its address: in this node's pod subnet, or a host-network backend on one
// of this node's own addresses.
func (v *nodeView) locate(ip netip.Addr, nodeName string) (local, host bool) {
	host = !v.allPods.Contains(ip)
	if nodeName != "" && v.name != "" {
		return nodeName == v.name, host
	}
	return v.podNet.Contains(ip) || host && v.own(ip), host
}

// localNode is the renderers' view of this node.
func (v *nodeView) localNode() sr.LocalNode {
	return sr.LocalNode{Name: v.name, ID: v.id, IPs: slices.Clone(v.ips)}
}

// derived is what build derives from one service and its slices.
type derived struct {
	// out is nil when the service is not rendered.
	out *sr.ContivService
	// pods are this node's pods among the backends, sorted and unique.
	pods []kubestate.Key
	// skips are what was left out, sorted.
	skips []Skip
	// hostNet is set when an endpoint is outside the pod range: its
	// locality depends on this node's own addresses.
	hostNet bool
	// hinted is set when an endpoint has topology hints: the backends then
	// depend on this node's zone.
	hinted bool
}

// maxScratch bounds the candidates a scratch buffer keeps between builds.
const maxScratch = 4096

// base is what a Service alone gives: its ContivService without backends
// (nil when the service is not rendered) and the Service's skips, sorted.
// A slice change re-derives only the backends on top of it. Any output
// derived from a base can stand for it (derive ignores the backends of
// out): the processor keeps its current output there, rather than a
// ContivService of its own.
type base struct {
	out   *sr.ContivService
	skips []Skip
	// fresh is set while out is deriveBase's own, handed to no one: the
	// first derivation completes it instead of copying it.
	fresh bool
}

// deriveBase derives the base of a service. It is a pure function.
func deriveBase(svc *kubestate.Service) base {
	if svc == nil {
		return base{}
	}
	b := builder{id: sr.ServiceID{Namespace: svc.Namespace, Name: svc.Name}, svc: svc}
	out := b.service()
	slices.SortFunc(b.d.skips, compareSkips)
	return base{out: out, skips: b.d.skips, fresh: out != nil}
}

// derive adds to bs the backends from the service's EndpointSlices, as seen
// from this node; the backends bs.out may hold are ignored. It is a pure
// function: nothing it is given is modified or kept, except immutable
// values (strings, and bs's IP slices, which the result may share), and a
// fresh base, whose output becomes the result's (bs.fresh is cleared).
// scratch, when not nil, is a buffer derive may use; it is cleared before
// derive returns.
func derive(bs *base, eps []*kubestate.EndpointSlice, v *nodeView, scratch *[]candidate) derived {
	if bs.out == nil {
		return derived{skips: bs.skips}
	}
	b := builder{id: bs.out.ID, scratch: scratch}
	out := bs.out
	if bs.fresh {
		bs.fresh = false
	} else {
		out = newOutput(bs.out)
	}
	local := out.ExternalPolicy == sr.PolicyLocal || out.InternalPolicy == sr.PolicyLocal
	for i := range out.Ports {
		b.backends(&out.Ports[i], eps, v, local)
	}
	d := b.d
	d.out = out
	if len(d.pods) > 1 {
		slices.SortFunc(d.pods, compareKeys)
		d.pods = slices.Compact(d.pods)
	}
	if len(d.skips) == 0 {
		d.skips = bs.skips
	} else {
		d.skips = append(slices.Clone(bs.skips), d.skips...)
		slices.SortFunc(d.skips, compareSkips)
		d.skips = slices.Compact(d.skips)
	}
	return d
}

// newOutput copies tmpl without its backends. A service with one port, as
// most have, gets its ContivService and its port in one allocation, side by
// side in memory, with its cluster IP when it has one (in the room the size
// class leaves: 288 bytes either way); other shapes share tmpl's cluster IPs.
// The cluster IP lies before the port, whose backends come last: a copy
// reads neither the template's backends nor, half the time (as the
// allocation falls on cache lines), its fifth line.
func newOutput(tmpl *sr.ContivService) *sr.ContivService {
	return place(tmpl, tmpl.Ports, tmpl.ClusterIPs)
}

// place copies tmpl with ports instead of its own, without backends, as
// newOutput does; cluster, the cluster IPs, are copied into the output's
// allocation with its port, else the copy keeps tmpl's.
func place(tmpl *sr.ContivService, ports []sr.Port, cluster []netip.Addr) *sr.ContivService {
	var out *sr.ContivService
	switch {
	case len(ports) == 1 && len(cluster) == 1:
		one := new(struct {
			svc  sr.ContivService
			ip   [1]netip.Addr
			port [1]sr.Port
		})
		one.svc, one.ip[0], one.port[0] = *tmpl, cluster[0], frontOf(&ports[0])
		out = &one.svc
		out.Ports, out.ClusterIPs = one.port[:], one.ip[:]
	case len(ports) == 1:
		one := new(struct {
			svc  sr.ContivService
			port [1]sr.Port
		})
		one.svc, one.port[0] = *tmpl, frontOf(&ports[0])
		out = &one.svc
		out.Ports = one.port[:]
	default:
		out = new(sr.ContivService)
		*out = *tmpl
		out.Ports = make([]sr.Port, len(ports))
		for i := range ports {
			out.Ports[i] = frontOf(&ports[i])
		}
	}
	return out
}

// frontOf is p without its backends.
func frontOf(p *sr.Port) sr.Port {
	return sr.Port{Name: p.Name, Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort}
}

// build derives the ContivService of one Service from the service and its
// EndpointSlices: deriveBase then derive.
func build(svc *kubestate.Service, eps []*kubestate.EndpointSlice, v *nodeView, scratch *[]candidate) derived {
	bs := deriveBase(svc)
	return derive(&bs, eps, v, scratch)
}

// builder holds the state of one derivation.
type builder struct {
	// d collects the result.
	d  derived
	id sr.ServiceID
	// svc is set while deriving the base.
	svc     *kubestate.Service
	scratch *[]candidate
}

// skipSvc records a skip concerning the Service itself.
func (b *builder) skipSvc(port string, r Reason, detail string) {
	b.skip(b.svc.Key(), port, r, detail)
}

func (b *builder) skip(obj kubestate.Key, port string, r Reason, detail string) {
	b.d.skips = append(b.d.skips, Skip{Service: b.id, Object: obj, Port: port, Reason: r, Detail: detail})
}

// service derives everything but the backends; nil when the service is not
// rendered.
func (b *builder) service() *sr.ContivService {
	s := b.svc
	switch {
	case s.Type == "ExternalName":
		b.skipSvc("", ReasonExternalName, "")
		return nil
	case s.ProxyName() != "":
		b.skipSvc("", ReasonOtherProxy, strconv.Quote(s.ProxyName()))
		return nil
	case len(s.ClusterIPs) > 0 && s.ClusterIPs[0] == "None":
		b.skipSvc("", ReasonHeadless, "")
		return nil
	}
	lb := false
	switch s.Type {
	case "", "ClusterIP", "NodePort":
	case "LoadBalancer":
		lb = true
	default:
		b.skipSvc("", ReasonInvalidValue, "type "+strconv.Quote(s.Type))
		return nil
	}
	// Built on the stack, then copied out in one allocation (place).
	out := sr.ContivService{
		ID:      sr.ServiceID{Namespace: s.Namespace, Name: s.Name},
		Created: s.Created,
	}
	var ports [4]sr.Port
	var cips [2]netip.Addr
	cluster := b.addrs(cips[:0], s.ClusterIPs, "clusterIP")
	ext := b.addrs(nil, s.ExternalIPs(), "externalIP")
	if lb {
		out.LoadBalancerIPs = sortAddrs(b.addrs(nil, s.LBIngressIPs(), "loadBalancer ingress IP"))
		ext = append(ext, out.LoadBalancerIPs...)
		for _, ip := range s.LBProxyIPs() {
			b.skipSvc("", ReasonIPModeProxy, "loadBalancer ingress IP "+ip+" (ipMode Proxy: the load balancer delivers to the nodes)")
		}
	}
	out.ExternalIPs = sortAddrs(ext)
	cluster = sortAddrs(cluster)
	if len(cluster) == 0 && len(out.ExternalIPs) == 0 {
		b.skipSvc("", ReasonNoFrontend, "")
		return nil
	}
	out.ExternalPolicy = b.policy(s.ExternalTrafficPolicy, "externalTrafficPolicy")
	out.InternalPolicy = b.policy(s.InternalTrafficPolicy, "internalTrafficPolicy")
	switch s.SessionAffinity {
	case "", "None":
	case "ClientIP":
		t := s.SessionAffinityTimeout()
		switch {
		case t == 0:
			t = kubestate.DefaultSessionAffinityTimeout
		case t < 0 || t > maxAffinityTimeout:
			b.skipSvc("", ReasonInvalidValue, "sessionAffinityTimeout "+strconv.Itoa(int(t))+" (want 1..86400; default used)")
			t = kubestate.DefaultSessionAffinityTimeout
		}
		out.AffinityTimeout = uint32(t)
	default:
		b.skipSvc("", ReasonInvalidValue, "sessionAffinity "+strconv.Quote(s.SessionAffinity)+" ignored")
	}
	ps := b.ports(ports[:0], s.Type == "NodePort" || lb)
	if len(ps) == 0 {
		b.skipSvc("", ReasonNoPorts, "")
		return nil
	}
	if lb {
		b.loadBalancer(&out)
	}
	o := place(&out, ps, cluster)
	if o.ClusterIPs == nil && len(cluster) > 0 {
		o.ClusterIPs = slices.Clone(cluster) // off the stack
	}
	return o
}

// loadBalancer derives the health-check NodePort and the source ranges of
// a LoadBalancer service. As in kube-proxy, only the Local external policy
// has a health check. Source ranges are kept for inspection and reported:
// neither renderer filters by source, so they are not enforced.
func (b *builder) loadBalancer(out *sr.ContivService) {
	s := b.svc
	if hc := s.HealthCheckNodePort(); hc != 0 && out.ExternalPolicy == sr.PolicyLocal {
		if hc < 0 || hc > 65535 {
			b.skipSvc("", ReasonInvalidPort, "healthCheckNodePort "+strconv.Itoa(int(hc)))
		} else {
			out.HealthCheckNodePort = uint16(hc)
		}
	}
	for _, r := range s.LoadBalancerSourceRanges() {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			b.skipSvc("", ReasonInvalidValue, "loadBalancerSourceRanges "+strconv.Quote(r))
			continue
		}
		out.SourceRanges = append(out.SourceRanges, p.Masked())
	}
	if len(out.SourceRanges) == 0 {
		return
	}
	slices.SortFunc(out.SourceRanges, comparePrefixes)
	out.SourceRanges = slices.Compact(out.SourceRanges)
	var list strings.Builder
	for i, p := range out.SourceRanges {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(p.String())
	}
	b.skipSvc("", ReasonSourceRangesNotEnforced, "loadBalancerSourceRanges "+list.String()+notEnforced+NotEnforcedCNAT)
}

// notEnforced separates the ranges from the reason in the detail of a
// ReasonSourceRangesNotEnforced skip.
const notEnforced = " NOT enforced: "

// NotEnforcedCNAT is why the cnat renderer does not enforce source ranges.
const NotEnforcedCNAT = "the cnat renderer translates before any input ACL could filter; every source reaches the service"

func comparePrefixes(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// addrs appends the addresses of ss to dst; invalid ones are skipped.
func (b *builder) addrs(dst []netip.Addr, ss []string, what string) []netip.Addr {
	if dst == nil && len(ss) > 0 {
		dst = make([]netip.Addr, 0, len(ss))
	}
	for _, s := range ss {
		ip, ok := parseIP(s)
		if !ok {
			b.skipSvc("", ReasonInvalidIP, what+" "+strconv.Quote(s))
			continue
		}
		dst = append(dst, ip)
	}
	return dst
}

func (b *builder) policy(s, what string) sr.TrafficPolicy {
	switch s {
	case "", "Cluster":
		return sr.PolicyCluster
	case "Local":
		return sr.PolicyLocal
	}
	b.skipSvc("", ReasonInvalidValue, what+" "+strconv.Quote(s)+" (Cluster used)")
	return sr.PolicyCluster
}

// ports validates the service's ports and appends them to out; they are
// returned sorted by name.
func (b *builder) ports(out []sr.Port, nodePorts bool) []sr.Port {
	in := b.svc.Ports
	for i, sp := range in {
		if dup := slices.IndexFunc(in[:i], func(o kubestate.ServicePort) bool { return o.Name == sp.Name }); dup >= 0 {
			b.skipSvc(sp.Name, ReasonDuplicatePort, "name used by an earlier port")
			continue
		}
		proto, r := parseProtocol(sp.Protocol)
		if r != 0 {
			b.skipSvc(sp.Name, r, "protocol "+strconv.Quote(sp.Protocol))
			continue
		}
		if sp.Port < 1 || sp.Port > 65535 {
			b.skipSvc(sp.Name, ReasonInvalidPort, "port "+strconv.Itoa(int(sp.Port)))
			continue
		}
		if sp.NodePort < 0 || sp.NodePort > 65535 {
			b.skipSvc(sp.Name, ReasonInvalidPort, "nodePort "+strconv.Itoa(int(sp.NodePort)))
			continue
		}
		p := sr.Port{Name: sp.Name, Protocol: proto, Port: uint16(sp.Port)}
		if nodePorts {
			p.NodePort = uint16(sp.NodePort)
		}
		if slices.ContainsFunc(out, func(o sr.Port) bool { return o.Protocol == p.Protocol && o.Port == p.Port }) {
			b.skipSvc(sp.Name, ReasonDuplicatePort, p.Protocol.String()+" "+strconv.Itoa(int(p.Port))+" used by an earlier port")
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b sr.Port) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func compareKeys(a, b kubestate.Key) int {
	return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
