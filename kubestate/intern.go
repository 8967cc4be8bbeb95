package kubestate

import (
	"slices"
	"unique"
)

// compact makes a freshly decoded object smaller without changing its
// value: the strings many objects repeat (namespaces, node names, target
// kinds, port names, protocols, types and policies) become canonical
// copies (unique.Make: the runtime's intern table, so there is no state
// here), and the endpoints array loses the room the decoder's appends left
// in it. A cluster's 100 000 endpoints then share a few copies of "Pod",
// their namespaces and node names instead of holding one each.
//
// The runtime forgets a canonical copy once nothing holds its handle, and
// nothing does after compact returns: objects decoded after a garbage
// collection may hold a new copy of a value. Sharing is thus per
// collection cycle, which still leaves a handful of copies of each value.
// Names, IPs and other values that rarely repeat are left alone.
func compact(o Object) {
	switch o := o.(type) {
	case *Service:
		intern(&o.Namespace)
		intern(&o.Type)
		intern(&o.ExternalTrafficPolicy)
		intern(&o.InternalTrafficPolicy)
		intern(&o.SessionAffinity)
		for i := range o.Ports {
			p := &o.Ports[i]
			intern(&p.Name)
			intern(&p.Protocol)
			intern(&p.TargetPort)
		}
	case *EndpointSlice:
		intern(&o.Namespace)
		intern(&o.AddressType)
		for i := range o.Ports {
			intern(&o.Ports[i].Name)
			intern(&o.Ports[i].Protocol)
		}
		if cap(o.Endpoints) > len(o.Endpoints) {
			o.Endpoints = slices.Clone(o.Endpoints)
		}
		for i := range o.Endpoints {
			e := &o.Endpoints[i]
			intern(&e.NodeName)
			intern(&e.TargetKind)
			intern(&e.TargetNamespace)
			for j := range e.HintZones {
				intern(&e.HintZones[j])
			}
			for j := range e.HintNodes {
				intern(&e.HintNodes[j])
			}
		}
	case *Pod:
		intern(&o.Namespace)
		intern(&o.NodeName)
		intern(&o.HostIP)
	}
}

// intern replaces *s by its canonical copy.
func intern(s *string) {
	if *s != "" {
		*s = unique.Make(*s).Value()
	}
}
