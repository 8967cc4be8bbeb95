package service

import (
	"cmp"
	"slices"
	"strconv"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// The backends of a port: every endpoint of the service's slices that may
// serve it, one per IP and port, the ready ones (or the serving and
// terminating ones when none is), narrowed by topology (topology.go).

// candidate is one endpoint that may serve a port.
type candidate struct {
	b  sr.Backend
	ep *kubestate.Endpoint
	s  *kubestate.EndpointSlice
}

// pod is the local pod the candidate targets; false when there is none.
func (c *candidate) pod() (kubestate.Key, bool) {
	e := c.ep
	if !c.b.Local || e.TargetKind() != "Pod" || e.TargetName() == "" {
		return kubestate.Key{}, false
	}
	ns := e.TargetNamespace()
	if ns == "" {
		ns = c.s.Namespace
	}
	return kubestate.Key{Resource: kubestate.ResPod, Namespace: ns, Name: e.TargetName()}, true
}

// compareCandidates sorts by IP and port; among candidates of one IP:port
// (one endpoint listed by two slices) the best comes first: ready, then serving, then not
// terminating, then the target; the first wins.
func compareCandidates(x, y candidate) int {
	if c := x.b.IP.Compare(&y.b.IP); c != 0 {
		return c
	}
	if c := cmp.Compare(x.b.Port, y.b.Port); c != 0 {
		return c
	}
	if x.b.Ready != y.b.Ready {
		return boolFirst(x.b.Ready)
	}
	if x.b.Serving != y.b.Serving {
		return boolFirst(x.b.Serving)
	}
	if x.b.Terminating != y.b.Terminating {
		return boolFirst(!x.b.Terminating)
	}
	xp, _ := x.pod()
	yp, _ := y.pod()
	return compareKeys(xp, yp)
}

func boolFirst(b bool) int {
	if b {
		return -1
	}
	return 1
}

// backends fills in the backends of port p from the slices.
func (b *builder) backends(p *sr.Port, ss []*kubestate.EndpointSlice, v *nodeView, local bool) {
	n := 0
	for _, s := range ss {
		n += len(s.Endpoints)
	}
	if n == 0 {
		return
	}
	var cands []candidate
	if b.scratch != nil && cap(*b.scratch) >= n {
		cands = (*b.scratch)[:0]
	} else {
		cands = make([]candidate, 0, n)
	}
	for _, s := range ss {
		cands = b.sliceCandidates(cands, p, s, v)
	}
	if len(cands) > 0 {
		cands = sortCandidates(cands)
		topo := b.topology(cands, v)
		ready, localReady := 0, 0
		for i := range cands {
			if c := &cands[i]; c.b.Ready {
				if topo.admits(c) {
					ready++
				}
				if c.b.Local {
					localReady++
				}
			}
		}
		p.Backends = b.pick(cands, ready, false, topo)
		if local {
			p.LocalBackends = b.pick(cands, localReady, true, topoFilter{})
		}
	}
	if b.scratch != nil && cap(cands) <= maxScratch {
		clear(cands[:cap(cands)])
		*b.scratch = cands[:0]
	}
}

// sortCandidates sorts cands and keeps the best of each IP and port.
// Candidates of distinct IPs and ports already in order (the usual case)
// are left as they are.
func sortCandidates(cands []candidate) []candidate {
	for i := 1; i < len(cands); i++ {
		x, y := &cands[i-1].b, &cands[i].b
		if c := x.IP.Compare(&y.IP); c > 0 || c == 0 && x.Port >= y.Port {
			slices.SortFunc(cands, compareCandidates)
			return slices.CompactFunc(cands, func(x, y candidate) bool { return x.b.IP == y.b.IP && x.b.Port == y.b.Port })
		}
	}
	return cands
}

// pick selects the ready candidates (only local ones when onlyLocal, only
// those topo admits), or the serving-and-terminating ones when none is
// ready (ready counts the ready ones among those considered), and records
// the local pods used.
func (b *builder) pick(cands []candidate, ready int, onlyLocal bool, topo topoFilter) []sr.Backend {
	take := func(c *candidate) bool {
		if onlyLocal && !c.b.Local || !topo.admits(c) {
			return false
		}
		if ready > 0 {
			return c.b.Ready
		}
		return c.b.Serving && c.b.Terminating
	}
	n := ready
	if n == 0 {
		for i := range cands {
			if take(&cands[i]) {
				n++
			}
		}
		if n == 0 {
			return nil
		}
	}
	out := make([]sr.Backend, 0, n)
	for i := range cands {
		c := &cands[i]
		if !take(c) {
			continue
		}
		out = append(out, c.b)
		if k, ok := c.pod(); ok && !slices.Contains(b.d.pods, k) {
			b.d.pods = append(b.d.pods, k)
		}
	}
	return out
}

// sliceCandidates appends the endpoints of slice s that may serve port p.
func (b *builder) sliceCandidates(dst []candidate, p *sr.Port, s *kubestate.EndpointSlice, v *nodeView) []candidate {
	key := s.Key()
	var want4, want6 bool
	switch s.AddressType {
	case "IPv4":
		want4 = true
	case "IPv6":
		want6 = true
	case "":
		want4, want6 = true, true
	case "FQDN":
		return dst // not for a proxy, as in kube-proxy
	default:
		b.skip(key, "", ReasonInvalidSlice, "addressType "+strconv.Quote(s.AddressType))
		return dst
	}
	port := -1
	for i := range s.Ports {
		sp := &s.Ports[i]
		if sp.Name != p.Name {
			continue
		}
		proto, r := parseProtocol(sp.Protocol)
		if r != 0 || proto != p.Protocol {
			continue // not this port: name and protocol both must match
		}
		if sp.Port < 1 || sp.Port > 65535 {
			b.skip(key, sp.Name, ReasonInvalidPort, "endpoint port "+strconv.Itoa(int(sp.Port)))
			return dst
		}
		port = int(sp.Port)
		break
	}
	if port < 0 {
		return dst
	}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		ready, serving, terminating := e.Ready(), e.Serving(), e.Terminating()
		if !ready && !(serving && terminating) {
			continue
		}
		if e.NumAddresses() == 0 {
			b.skip(key, "", ReasonInvalidEndpoint, "endpoint without address")
			continue
		}
		ip, ok := e.Addr() // held as an address: no text to parse
		if ok {
			ok = usableIP(ip)
		} else {
			ip, ok = parseIP(e.Address(0))
		}
		if !ok {
			b.skip(key, "", ReasonInvalidEndpoint, "address "+strconv.Quote(e.Address(0)))
			continue
		}
		if ip.Is4() && !want4 || ip.Is6() && !want6 {
			b.skip(key, "", ReasonInvalidEndpoint, "address "+e.Address(0)+" in an "+s.AddressType+" slice")
			continue
		}
		c := candidate{b: sr.Backend{
			IP: sr.IPOf(ip), Port: uint16(port),
			Ready: ready, Serving: serving, Terminating: terminating,
		}, ep: e, s: s}
		c.b.Local, c.b.HostNetwork = v.locate(ip, e.NodeName())
		if c.b.HostNetwork {
			b.d.hostNet = true
		}
		dst = append(dst, c)
	}
	return dst
}
