package service

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// entry is the state of one service: its inputs and what was derived.
// What most services lack is behind one pointer: an entry is 64 bytes,
// one cache line, the one a change of the service reads first.
type entry struct {
	// id holds the strings of the Service, when there is one, as the ID of
	// its output does: reading one brings the other into the cache.
	id  sr.ServiceID
	svc *kubestate.Service
	// first is the service's EndpointSlice when it has exactly one, as
	// most services have; several are in rare.slices.
	first [1]*kubestate.EndpointSlice
	// out is the output of the last derivation, nil when the service is
	// not rendered. It also stands for the base that derivation started
	// from (see base), which is derived from svc alone, when svc changes.
	out *sr.ContivService
	// rare holds what most services lack, nil when there is none of it.
	rare *rare
}

// rare is the part of an entry most services leave empty.
type rare struct {
	// slices are the service's EndpointSlices, sorted by name, when it has
	// more than one.
	slices    []*kubestate.EndpointSlice
	baseSkips []Skip // the base's
	pods      []kubestate.Key
	skips     []Skip
	// hostNet and hinted are the last derivation's (see derived).
	hostNet, hinted bool
}

// slices are the service's EndpointSlices, sorted by name.
func (e *entry) slices() []*kubestate.EndpointSlice {
	switch {
	case e.rare != nil && e.rare.slices != nil:
		return e.rare.slices
	case e.first[0] != nil:
		return e.first[:]
	}
	return nil
}

// setSlices makes ss the service's EndpointSlices.
func (e *entry) setSlices(ss []*kubestate.EndpointSlice) {
	e.first[0] = nil
	switch {
	case len(ss) == 1:
		e.first[0] = ss[0]
		ss = nil
	case len(ss) == 0:
		ss = nil
	}
	if ss != nil || e.rare != nil {
		e.moreOf().slices = ss
	}
	e.tidy()
}

// moreOf returns e's rare part, allocated when nil.
func (e *entry) moreOf() *rare {
	if e.rare == nil {
		e.rare = new(rare)
	}
	return e.rare
}

// tidy drops e's rare part when it holds nothing.
func (e *entry) tidy() {
	if r := e.rare; r != nil && r.slices == nil && len(r.baseSkips) == 0 && len(r.pods) == 0 &&
		len(r.skips) == 0 && !r.hostNet && !r.hinted {
		e.rare = nil
	}
}

// base is the base the entry's output was derived from.
func (e *entry) base() base {
	b := base{out: e.out}
	if e.rare != nil {
		b.skips = e.rare.baseSkips
	}
	return b
}

// derived is the entry's last derivation.
func (e *entry) derived() derived {
	d := derived{out: e.out}
	if r := e.rare; r != nil {
		d.pods, d.skips, d.hostNet, d.hinted = r.pods, r.skips, r.hostNet, r.hinted
	}
	return d
}

// set records derivation d from a base with skips baseSkips.
func (e *entry) set(baseSkips []Skip, d derived) {
	e.out = d.out
	if len(baseSkips) == 0 && len(d.pods) == 0 && len(d.skips) == 0 && !d.hostNet && !d.hinted && e.rare == nil {
		return
	}
	r := e.moreOf()
	r.baseSkips, r.pods, r.skips, r.hostNet, r.hinted = baseSkips, d.pods, d.skips, d.hostNet, d.hinted
	e.tidy()
}

// hostNet and hinted are the last derivation's (see derived).
func (e *entry) hostNet() bool { return e.rare != nil && e.rare.hostNet }
func (e *entry) hinted() bool  { return e.rare != nil && e.rare.hinted }

// unchanged tells whether e, an entry just indexed, has the inputs o had:
// the same Service and EndpointSlices (objects are immutable: the same
// pointer, the same value). Its derivation would then give o's again,
// unless the Service has source ranges and the renderer's reason for not
// enforcing them may have changed.
func (p *Processor) unchanged(o, e *entry) bool {
	if o.svc != e.svc || !slices.Equal(o.slices(), e.slices()) {
		return false
	}
	return len(e.svc.LoadBalancerSourceRanges()) == 0 || !p.rangesEnforced || p.rangesWhy == nil
}

// skips are what the last derivation left out.
func (e *entry) skips() []Skip {
	if e.rare == nil {
		return nil
	}
	return e.rare.skips
}

// sliceName is an EndpointSlice's key without its resource, which is
// always the same: half the bytes to hash and compare.
type sliceName struct{ namespace, name string }

func sliceNameOf(k kubestate.Key) sliceName { return sliceName{k.Namespace, k.Name} }

// addSlice inserts s at place i of e's slices.
func (e *entry) addSlice(i int, s *kubestate.EndpointSlice) {
	ss := e.slices()
	if len(ss) == 0 {
		e.first[0] = s
		return
	}
	// Into a new array: first's is the entry's own.
	e.setSlices(slices.Insert(slices.Clip(ss), i, s))
}

// find returns the place of slice name among e's slices, and whether it
// is there.
func (e *entry) find(name string) (int, bool) {
	return slices.BinarySearchFunc(e.slices(), name, sliceByName)
}

// at returns the place of slice name among e's slices, which hold it. The
// only slice of an entry is found without reading it (cold memory).
func (e *entry) at(name string) int {
	if e.first[0] != nil {
		return 0
	}
	i, _ := e.find(name)
	return i
}

// index takes the snapshot's objects into the indexes.
func (p *Processor) index(objs map[kubestate.Key]kubestate.Object) {
	var several []*entry // the entries with more than one slice
	for k, o := range objs {
		switch k.Resource {
		case kubestate.ResService:
			if s, ok := as[*kubestate.Service](p, k, o); ok && s != nil {
				id := sr.ServiceID{Namespace: s.Namespace, Name: s.Name}
				e := p.entry(id)
				e.id, e.svc = id, s
			}
		case kubestate.ResEndpointSlice:
			if s, ok := as[*kubestate.EndpointSlice](p, k, o); ok && s != nil && s.ServiceName != "" {
				e := p.entry(sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName})
				e.addSlice(len(e.slices()), s)
				p.slices[sliceName{s.Namespace, s.Name}] = e
				if len(e.slices()) == 2 {
					several = append(several, e)
				}
			}
		case kubestate.ResNode:
			if n, ok := as[*kubestate.Node](p, k, o); ok && n != nil && n.Name == p.name {
				p.view.zone = n.Zone
			}
		case kubestate.ResPod:
			if pod, ok := as[*kubestate.Pod](p, k, o); ok && pod != nil && pod.NodeName == p.name {
				k := podID(k)
				lp := p.lookup(k, pod.HostNetwork)
				p.pods[k] = lp
				if lp.ifName != "" {
					p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
				}
			}
		}
	}
	for _, e := range several {
		slices.SortFunc(e.slices(), compareSlices)
	}
}

// as returns o as the model k names (nil for nil); false after logging
// when o is another model or stored under another key, which the codec
// never produces: the event is then ignored rather than taken for a delete.
func as[T kubestate.Object](p *Processor, k kubestate.Key, o kubestate.Object) (T, bool) {
	var zero T
	if o == nil {
		return zero, true
	}
	t, ok := o.(T)
	if !ok || o.Key() != k {
		p.log.Error("object does not match its key: ignored", "key", k.String(), "object", o.Key().String())
		return zero, false
	}
	return t, true
}

// entry returns the entry of id, creating it.
func (p *Processor) entry(id sr.ServiceID) *entry {
	e := p.services[id]
	if e == nil {
		e = &entry{id: id}
		p.services[id] = e
	}
	return e
}

func (p *Processor) serviceChanged(id sr.ServiceID, s *kubestate.Service) {
	e := p.services[id]
	if e == nil {
		if s == nil {
			return
		}
		e = p.entry(id)
	}
	if s != nil {
		e.id = id
	}
	e.svc = s
	b := p.deriveBase(s)
	p.refresh(id, e, &b)
}

// sliceChanged takes in slice k, new or changed (nil s: deleted), and
// moves it to the service it now names.
func (p *Processor) sliceChanged(k sliceName, s *kubestate.EndpointSlice) {
	owner, known := p.slices[k]
	has := s != nil && s.ServiceName != ""
	// The slice's namespace is its service's: only the name can differ.
	if known && (!has || owner.id.Name != s.ServiceName) {
		i := owner.at(k.name)
		owner.setSlices(slices.Delete(owner.slices(), i, i+1))
		delete(p.slices, k)
		p.refresh(owner.id, owner, nil)
		known = false
	}
	if !has {
		return
	}
	if known {
		owner.slices()[owner.at(k.name)] = s
	} else {
		owner = p.entry(sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName})
		i, _ := owner.find(k.name)
		owner.addSlice(i, s)
		p.slices[k] = owner
	}
	p.refresh(owner.id, owner, nil)
}

// refresh derives service id again, from base nb when the Service changed
// (nil: the base is the entry's), and tells renderers what changed.
func (p *Processor) refresh(id sr.ServiceID, e *entry, nb *base) {
	old := e.derived()
	// The previous output stands for the base unless the service changed.
	sameBase := nb == nil && old.out != nil
	if nb == nil {
		b := e.base()
		nb = &b
	}
	var d derived
	if e.svc != nil {
		d = derive(nb, e.slices(), &p.view, &p.scratch)
		p.builds++
	}
	switch {
	case old.out == nil && d.out == nil:
	case old.out == nil:
		p.call(id, "add", func(r sr.Renderer) error { return r.AddService(d.out) })
	case d.out == nil:
		p.call(id, "delete", func(r sr.Renderer) error { return r.DeleteService(old.out) })
	case sameBase && sameBackends(old.out, d.out) || !sameBase && old.out.Equal(d.out):
		d.out = old.out // renderers hold this one
	default:
		p.call(id, "update", func(r sr.Renderer) error { return r.UpdateService(old.out, d.out) })
	}
	e.set(nb.skips, d)
	if d.hostNet != old.hostNet {
		if d.hostNet {
			p.hostNet[id] = struct{}{}
		} else {
			delete(p.hostNet, id)
		}
	}
	if d.hinted != old.hinted {
		if d.hinted {
			p.hinted[id] = struct{}{}
		} else {
			delete(p.hinted, id)
		}
	}
	if !slices.Equal(old.pods, d.pods) {
		for _, k := range old.pods {
			if _, ok := slices.BinarySearchFunc(d.pods, k, compareKeys); !ok {
				p.user(k, id, false)
			}
		}
		for _, k := range d.pods {
			if _, ok := slices.BinarySearchFunc(old.pods, k, compareKeys); !ok {
				p.user(k, id, true)
			}
		}
	}
	if !slices.Equal(old.skips, d.skips) {
		p.logSkips(old.skips, d.skips)
	}
	if e.svc == nil && len(e.slices()) == 0 {
		delete(p.services, id)
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("service derived", "service", id.String(), "rendered", e.out != nil, "slices", len(e.slices()))
	}
}

// sameBackends tells whether two outputs of one base, which differ in
// their backends only, have the same backends.
func sameBackends(a, b *sr.ContivService) bool {
	for i := range a.Ports {
		x, y := &a.Ports[i], &b.Ports[i]
		if !slices.Equal(x.Backends, y.Backends) || !slices.Equal(x.LocalBackends, y.LocalBackends) {
			return false
		}
	}
	return true
}

// call calls every renderer, collecting errors.
func (p *Processor) call(id sr.ServiceID, op string, f func(sr.Renderer) error) {
	for i, r := range p.renderers {
		if err := f(r); err != nil {
			p.errs = append(p.errs, fmt.Errorf("renderer %d: %s %s: %w", i, op, id, err))
		}
	}
}

// logSkips logs the skips in now that were not in was.
func (p *Processor) logSkips(was, now []Skip) {
	for _, s := range now {
		if _, ok := slices.BinarySearchFunc(was, s, compareSkips); ok {
			continue
		}
		p.log.Log(context.Background(), s.Reason.level(), "service input skipped",
			"service", s.Service.String(), "object", s.Object.String(), "port", s.Port,
			"reason", s.Reason.String(), "detail", s.Detail)
	}
}

func serviceID(k kubestate.Key) sr.ServiceID {
	return sr.ServiceID{Namespace: k.Namespace, Name: k.Name}
}

// sortedEntries returns the entries with a Service, in the order of their
// IDs. The sort compares the first bytes of the IDs, copied beside each
// entry, before the IDs themselves: most comparisons then read neither
// the entry nor its strings, scattered in memory.
func (p *Processor) sortedEntries() []*entry {
	type keyed struct {
		ns, name uint64 // prefixes
		e        *entry
	}
	ks := make([]keyed, 0, len(p.services))
	for _, e := range p.services {
		if e.svc != nil {
			ks = append(ks, keyed{prefix(e.id.Namespace), prefix(e.id.Name), e})
		}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.ns != b.ns {
			return cmp.Compare(a.ns, b.ns)
		}
		// Most IDs share their namespace, one interned string: == tells it
		// without reading the bytes.
		if x, y := a.e.id.Namespace, b.e.id.Namespace; x != y {
			return strings.Compare(x, y)
		}
		if a.name != b.name {
			return cmp.Compare(a.name, b.name)
		}
		return strings.Compare(a.e.id.Name, b.e.id.Name)
	})
	es := make([]*entry, len(ks))
	for i := range ks {
		es[i] = ks[i].e
	}
	return es
}

// prefix is the first 8 bytes of s, big-endian, zero-padded: two strings
// whose prefixes differ compare as their prefixes do.
func prefix(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

func compareIDs(a, b sr.ServiceID) int {
	// Most IDs share their namespace, one interned string: == tells it
	// without reading the bytes.
	if a.Namespace != b.Namespace {
		return strings.Compare(a.Namespace, b.Namespace)
	}
	return strings.Compare(a.Name, b.Name)
}

func compareSlices(a, b *kubestate.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) }

func sliceByName(s *kubestate.EndpointSlice, name string) int { return cmp.Compare(s.Name, name) }

// deriveBase is deriveBase, without the "not enforced" report of source
// ranges when the renderer enforces them, and with the renderer's reason
// when it could but cannot now.
func (p *Processor) deriveBase(svc *kubestate.Service) base {
	b := deriveBase(svc)
	if !p.rangesEnforced {
		return b
	}
	why := ""
	if p.rangesWhy != nil {
		why = p.rangesWhy()
	}
	if why == "" {
		b.skips = slices.DeleteFunc(b.skips, func(s Skip) bool { return s.Reason == ReasonSourceRangesNotEnforced })
		return b
	}
	for i := range b.skips {
		if s := &b.skips[i]; s.Reason == ReasonSourceRangesNotEnforced {
			ranges, _, _ := strings.Cut(s.Detail, notEnforced)
			s.Detail = ranges + notEnforced + why
		}
	}
	return b
}
