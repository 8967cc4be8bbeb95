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
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

// entry is the state of one service: its inputs and what was derived.
// What most services lack is behind one pointer: an entry is 64 bytes,
// one cache line, the first a change of the service reads. Its ID is the
// key it is indexed under (and its output's, see id).
type entry struct {
	svc *kubestate.Service
	// slices are the service's EndpointSlices, sorted by name; one, as
	// most services have, is held in first.
	slices []*kubestate.EndpointSlice
	first  [1]*kubestate.EndpointSlice
	// out is the output of the last derivation, nil when the service is
	// not rendered. It also stands for the base that derivation started
	// from (see base), which is derived from svc alone, when svc changes.
	out *sr.ContivService
	// rare holds the skips and local pods, nil when there are none.
	rare *rare
	// hostNet and hinted are the last derivation's (see derived).
	hostNet, hinted bool
}

// id is the service's ID: its output's when it is rendered (the strings
// of its Service, which a change reads there anyway), else its Service's,
// else the one its slices name.
func (e *entry) id() sr.ServiceID {
	switch {
	case e.out != nil:
		return e.out.ID
	case e.svc != nil:
		return sr.ServiceID{Namespace: e.svc.Namespace, Name: e.svc.Name}
	case len(e.slices) > 0:
		return sr.ServiceID{Namespace: e.slices[0].Namespace, Name: e.slices[0].ServiceName}
	}
	return sr.ServiceID{}
}

// rare is the part of an entry most services leave empty.
type rare struct {
	baseSkips []Skip // the base's
	pods      []kubestate.Key
	skips     []Skip
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
	d := derived{out: e.out, hostNet: e.hostNet, hinted: e.hinted}
	if r := e.rare; r != nil {
		d.pods, d.skips = r.pods, r.skips
	}
	return d
}

// set records derivation d from a base with skips baseSkips.
func (e *entry) set(baseSkips []Skip, d derived) {
	e.out, e.hostNet, e.hinted = d.out, d.hostNet, d.hinted
	switch {
	case len(baseSkips) == 0 && len(d.pods) == 0 && len(d.skips) == 0:
		e.rare = nil
	case e.rare == nil:
		e.rare = &rare{baseSkips: baseSkips, pods: d.pods, skips: d.skips}
	default:
		*e.rare = rare{baseSkips: baseSkips, pods: d.pods, skips: d.skips}
	}
}

// unchanged tells whether e, an entry just indexed, has the inputs o had:
// the same Service and EndpointSlices (objects are immutable: the same
// pointer, the same value). Its derivation would then give o's again,
// unless the Service has source ranges and the renderer's reason for not
// enforcing them may have changed.
func (p *Processor) unchanged(o, e *entry) bool {
	if o.svc != e.svc || !slices.Equal(o.slices, e.slices) {
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
	if e.slices == nil {
		e.slices = e.first[:0]
	}
	e.slices = slices.Insert(e.slices, i, s)
}

// find returns the place of slice name among e's slices, and whether it
// is there.
func (e *entry) find(name string) (int, bool) {
	return slices.BinarySearchFunc(e.slices, name, sliceByName)
}

// at returns the place of slice name among e's slices, which hold it. The
// only slice of an entry is found without reading it (cold memory).
func (e *entry) at(name string) int {
	if len(e.slices) == 1 {
		return 0
	}
	i, _ := e.find(name)
	return i
}

// index takes the resync's objects into the indexes. It returns the
// entries with a Service, with their IDs, in no order (see sortEntries).
// It walks the objects as listed when the event has them: in the order
// they were decoded into memory, and each under its own key.
func (p *Processor) index(ev *controller.ResyncEvent) []keyedEntry {
	objs := ev.State.Objects
	ix := indexer{p: p, ks: make([]keyedEntry, 0, len(objs)/2)}
	if ev.Listed != nil {
		for _, o := range ev.Listed {
			ix.add(o)
		}
	} else {
		for k, o := range objs {
			if p.matches(k, o) {
				ix.add(o)
			}
		}
	}
	for _, e := range ix.several {
		slices.SortFunc(e.slices, compareSlices)
	}
	return ix.ks
}

// indexer is index's state.
type indexer struct {
	p       *Processor
	ks      []keyedEntry
	several []*entry // the entries with more than one slice
}

// add takes o, stored under its own key, into the indexes.
func (ix *indexer) add(o kubestate.Object) {
	p := ix.p
	switch o := o.(type) {
	case *kubestate.Service:
		id := sr.ServiceID{Namespace: o.Namespace, Name: o.Name}
		e := p.entry(id)
		e.svc = o
		ix.ks = append(ix.ks, keyedEntry{prefix(id.Namespace), prefix(id.Name), id, e})
	case *kubestate.EndpointSlice:
		if o.ServiceName != "" {
			e := p.entry(sr.ServiceID{Namespace: o.Namespace, Name: o.ServiceName})
			e.addSlice(len(e.slices), o)
			p.slices[sliceName{o.Namespace, o.Name}] = e
			if len(e.slices) == 2 {
				ix.several = append(ix.several, e)
			}
		}
	case *kubestate.Node:
		if o.Name == p.name {
			p.view.zone = o.Zone
		}
	case *kubestate.Pod:
		if o.NodeName == p.name {
			k := podID(o.Key())
			lp := p.lookup(k, o.HostNetwork)
			p.pods[k] = lp
			if lp.ifName != "" {
				p.ifPods[lp.ifName] = append(p.ifPods[lp.ifName], k)
			}
		}
	}
}

// matches tells whether o, stored under k in a snapshot, is the model k
// names, stored under its own key (as). A nil o is absent.
func (p *Processor) matches(k kubestate.Key, o kubestate.Object) bool {
	var ok bool
	switch k.Resource {
	case kubestate.ResService:
		_, ok = as[*kubestate.Service](p, k, o)
	case kubestate.ResEndpointSlice:
		_, ok = as[*kubestate.EndpointSlice](p, k, o)
	case kubestate.ResNode:
		_, ok = as[*kubestate.Node](p, k, o)
	case kubestate.ResPod:
		_, ok = as[*kubestate.Pod](p, k, o)
	}
	return ok && o != nil
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
		e = new(entry)
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
	e.svc = s
	b := p.deriveBase(s)
	p.refresh(id, e, &b)
}

// sliceChanged takes in slice k, new or changed (nil s: deleted), and
// moves it to the service it now names. prev is the slice it replaces as
// the event says (nil: none).
func (p *Processor) sliceChanged(k sliceName, s, prev *kubestate.EndpointSlice) {
	if e, i := p.holding(s, prev); e != nil {
		e.slices[i] = s
		p.refresh(sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName}, e, nil)
		return
	}
	owner, known := p.slices[k]
	has := s != nil && s.ServiceName != ""
	var id sr.ServiceID
	if known {
		id = owner.id()
	}
	// The slice's namespace is its service's: only the name can differ.
	if known && (!has || id.Name != s.ServiceName) {
		i := owner.at(k.name)
		owner.slices = slices.Delete(owner.slices, i, i+1)
		delete(p.slices, k)
		p.refresh(id, owner, nil)
		known = false
	}
	if !has {
		return
	}
	if known {
		owner.slices[owner.at(k.name)] = s
	} else {
		id = sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName}
		owner = p.entry(id)
		i, _ := owner.find(k.name)
		owner.addSlice(i, s)
		p.slices[k] = owner
	}
	p.refresh(id, owner, nil)
}

// holding is the entry of the service s names and the place of prev among
// its slices, when it holds prev (nil when not): the common change, a
// slice changed and its service the same, is found through the index of
// services, whose key's bytes (the service's name) a change of the slices
// index would read too, to tell whether the slice moved. The slices are
// told apart by pointer (the processor holds the objects it was given, as
// the events' Prev are), without reading them.
func (p *Processor) holding(s, prev *kubestate.EndpointSlice) (*entry, int) {
	if s == nil || prev == nil || s.ServiceName == "" {
		return nil, 0
	}
	e := p.services[sr.ServiceID{Namespace: s.Namespace, Name: s.ServiceName}]
	if e == nil {
		return nil, 0
	}
	i := slices.Index(e.slices, prev)
	if i < 0 {
		return nil, 0
	}
	return e, i
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
		d = derive(nb, e.slices, &p.view, &p.scratch)
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
	if e.hostNet != old.hostNet {
		if e.hostNet {
			p.hostNet[id] = struct{}{}
		} else {
			delete(p.hostNet, id)
		}
	}
	if e.hinted != old.hinted {
		if e.hinted {
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
	if e.svc == nil && len(e.slices) == 0 {
		delete(p.services, id)
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("service derived", "service", id.String(), "rendered", e.out != nil, "slices", len(e.slices))
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
		p.log.Log(context.Background(), s.Reason.level(), s.Reason.logMessage(),
			"service", s.Service.String(), "object", s.Object.String(), "port", s.Port,
			"reason", s.Reason.String(), "detail", s.Detail)
	}
}

func serviceID(k kubestate.Key) sr.ServiceID {
	return sr.ServiceID{Namespace: k.Namespace, Name: k.Name}
}

// sortEntries sorts the entries index returned by their IDs. It compares
// the first bytes of the IDs, copied beside each entry, before the IDs
// themselves: most comparisons then read no string, scattered in memory.
func sortEntries(ks []keyedEntry) {
	slices.SortFunc(ks, func(a, b keyedEntry) int {
		if a.ns != b.ns {
			return cmp.Compare(a.ns, b.ns)
		}
		// Most IDs share their namespace, one interned string: == tells it
		// without reading the bytes.
		if x, y := a.id.Namespace, b.id.Namespace; x != y {
			return strings.Compare(x, y)
		}
		if a.name != b.name {
			return cmp.Compare(a.name, b.name)
		}
		return strings.Compare(a.id.Name, b.id.Name)
	})
}

// keyedEntry is an entry with its ID and the prefixes of the ID's strings.
type keyedEntry struct {
	ns, name uint64 // prefixes
	id       sr.ServiceID
	e        *entry
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
	if !p.rangesEnforced || !slices.ContainsFunc(b.skips, func(s Skip) bool { return s.Reason == ReasonSourceRangesNotEnforced }) {
		return b // nothing the renderer's answer would change: not asked
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
