package kubestate

import (
	"encoding/json"
	"net/netip"
	"slices"
)

// Endpoint is one endpoint of an EndpointSlice, held compactly (48 bytes;
// a cluster holds ten for each service): its only address as 16 bytes,
// its node name and target namespace as handles of interned names, its
// conditions and a target kind of "Pod" as bits, and what few endpoints
// have (several addresses, an address not in its usual text, another
// target kind, topology hints) behind one pointer. Read it through its
// methods; build one from its fields spelled out, EndpointFields, which is
// also its stored (JSON) form. The conditions are resolved at conversion:
// an unset ready counts as ready, an unset serving as ready.
type Endpoint struct {
	// addr is the endpoint's one address when bits has fAddr4 (its first
	// 4 bytes) or fAddr6.
	addr [16]byte
	// targetName is targetRef.name (a decoded slice's names share one
	// allocation).
	targetName string
	// more holds what few endpoints have; nil when the endpoint has none.
	more *endpointMore
	// node is the handle of the node name.
	node name
	// bits is the handle of the target namespace << 8 | the flags below.
	bits uint32
}

// The flags of Endpoint.bits.
const (
	fReady = 1 << iota
	fServing
	fTerminating
	fPod   // targetKind is "Pod"
	fAddr4 // one IPv4 address, in addr
	fAddr6 // one IPv6 address, in addr

	flagBits = 8
)

// endpointMore is what few endpoints have.
type endpointMore struct {
	// addresses are the endpoint's addresses when they are not one
	// address in its usual text (netip.Addr.String's, without a zone):
	// none (nil or empty), several, or one that is not such an address.
	addresses []string
	kind      string // the target kind, when neither "" nor "Pod"
	// nodeName and namespace are the names the table had no room for.
	nodeName, namespace string
	zones, nodes        []string // the topology hints
}

// EndpointFields are the fields of an Endpoint spelled out: its stored
// form, and what an Endpoint is built from (Endpoint) and read into
// (Endpoint.Fields).
type EndpointFields struct {
	Addresses   []string `json:"addresses"`
	Ready       bool     `json:"ready,omitempty"`
	Serving     bool     `json:"serving,omitempty"`
	Terminating bool     `json:"terminating,omitempty"`
	NodeName    string   `json:"nodeName,omitempty"`
	// TargetKind, TargetNamespace and TargetName are the endpoint's targetRef.
	TargetKind      string `json:"targetKind,omitempty"`
	TargetNamespace string `json:"targetNamespace,omitempty"`
	TargetName      string `json:"targetName,omitempty"`
	// HintZones and HintNodes are hints.forZones and hints.forNodes: the
	// zones and nodes that should use this endpoint (topology-aware routing).
	HintZones []string `json:"hintZones,omitempty"`
	HintNodes []string `json:"hintNodes,omitempty"`
}

// Endpoint builds the compact endpoint of f, interning its names. The
// endpoint holds f's slices of hints when it has them.
func (f EndpointFields) Endpoint() Endpoint {
	var e Endpoint
	e.set(&f, f.Addresses, nameFor)
	return e
}

// set makes e the endpoint of f with the addresses addrs (f's own are not
// read; the endpoint holds a copy of addrs when it needs them), looking
// names up with nameOf.
func (e *Endpoint) set(f *EndpointFields, addrs []string, nameOf func(string) (name, bool)) {
	more := func() *endpointMore {
		if e.more == nil {
			e.more = new(endpointMore)
		}
		return e.more
	}
	var bits uint32
	for _, c := range [...]struct {
		on   bool
		flag uint32
	}{{f.Ready, fReady}, {f.Serving, fServing}, {f.Terminating, fTerminating}} {
		if c.on {
			bits |= c.flag
		}
	}
	if len(addrs) == 1 {
		if a, flag, ok := compactAddr(addrs[0]); ok {
			e.addr, bits = a, bits|flag
		}
	}
	if bits&(fAddr4|fAddr6) == 0 && addrs != nil {
		m := more()
		m.addresses = make([]string, len(addrs))
		copy(m.addresses, addrs)
	}
	switch f.TargetKind {
	case "":
	case "Pod":
		bits |= fPod
	default:
		more().kind = canonical(f.TargetKind)
	}
	var ok bool
	if e.node, ok = nameOf(f.NodeName); !ok {
		more().nodeName = f.NodeName
	}
	ns, ok := nameOf(f.TargetNamespace)
	if !ok {
		more().namespace = f.TargetNamespace
	}
	e.bits = uint32(ns)<<flagBits | bits
	e.targetName = f.TargetName
	if f.HintZones != nil || f.HintNodes != nil {
		m := more()
		m.zones, m.nodes = f.HintZones, f.HintNodes
		for _, hs := range [][]string{m.zones, m.nodes} {
			for i := range hs {
				intern(&hs[i])
			}
		}
	}
}

// Fields returns e's fields spelled out.
func (e *Endpoint) Fields() EndpointFields {
	f := EndpointFields{
		Addresses: e.Addresses(),
		Ready:     e.Ready(), Serving: e.Serving(), Terminating: e.Terminating(),
		NodeName:   e.NodeName(),
		TargetKind: e.TargetKind(), TargetNamespace: e.TargetNamespace(), TargetName: e.targetName,
	}
	if m := e.more; m != nil {
		f.HintZones, f.HintNodes = m.zones, m.nodes
	}
	return f
}

// Edit changes e through its fields (a copy of them: e's slices are not
// changed in place, and neither are those of another copy of e).
func (e *Endpoint) Edit(edit func(*EndpointFields)) {
	f := e.Fields()
	f.Addresses = slices.Clone(f.Addresses)
	f.HintZones, f.HintNodes = slices.Clone(f.HintZones), slices.Clone(f.HintNodes)
	edit(&f)
	*e = f.Endpoint()
}

// Ready, Serving and Terminating are e's conditions.
func (e *Endpoint) Ready() bool       { return e.bits&fReady != 0 }
func (e *Endpoint) Serving() bool     { return e.bits&fServing != 0 }
func (e *Endpoint) Terminating() bool { return e.bits&fTerminating != 0 }

// NodeName is the node the endpoint is on; "" when not known.
func (e *Endpoint) NodeName() string {
	if e.node == 0 && e.more != nil {
		return e.more.nodeName
	}
	return e.node.String()
}

// TargetKind, TargetNamespace and TargetName are e's targetRef.
func (e *Endpoint) TargetKind() string {
	switch {
	case e.bits&fPod != 0:
		return "Pod"
	case e.more != nil:
		return e.more.kind
	}
	return ""
}

func (e *Endpoint) TargetNamespace() string {
	if h := name(e.bits >> flagBits); h != 0 || e.more == nil {
		return h.String()
	}
	return e.more.namespace
}

func (e *Endpoint) TargetName() string { return e.targetName }

// NumAddresses is the number of e's addresses.
func (e *Endpoint) NumAddresses() int {
	switch {
	case e.bits&(fAddr4|fAddr6) != 0:
		return 1
	case e.more != nil:
		return len(e.more.addresses)
	}
	return 0
}

// Addr returns e's address when e has one address in its usual text,
// held as such: what netip.ParseAddr gives for that text. Otherwise
// (false) read the addresses as text (Address).
func (e *Endpoint) Addr() (netip.Addr, bool) {
	switch {
	case e.bits&fAddr4 != 0:
		return netip.AddrFrom4([4]byte(e.addr[:4])), true
	case e.bits&fAddr6 != 0:
		return netip.AddrFrom16(e.addr), true
	}
	return netip.Addr{}, false
}

// Address returns e's i-th address as text.
func (e *Endpoint) Address(i int) string {
	if a, ok := e.Addr(); ok && i == 0 {
		return a.String()
	}
	return e.more.addresses[i]
}

// Addresses returns e's addresses as text (a new slice when e holds its
// address as an address, else the one e holds: do not change it).
func (e *Endpoint) Addresses() []string {
	if a, ok := e.Addr(); ok {
		return []string{a.String()}
	}
	if e.more == nil {
		return nil
	}
	return e.more.addresses
}

// ZoneHints are e's hints.forZones; nil when it has none.
func (e *Endpoint) ZoneHints() []string {
	if e.more == nil {
		return nil
	}
	return e.more.zones
}

// NodeHints are e's hints.forNodes; nil when it has none.
func (e *Endpoint) NodeHints() []string {
	if e.more == nil {
		return nil
	}
	return e.more.nodes
}

// MarshalJSON stores e as its fields.
func (e Endpoint) MarshalJSON() ([]byte, error) { return json.Marshal(e.Fields()) }

// UnmarshalJSON reads e from its fields; null leaves e as it is.
func (e *Endpoint) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var f EndpointFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*e = f.Endpoint()
	return nil
}

// equal tells whether e and o hold the same value (an empty slice the
// same as none). Equal names have equal handles, and an address held as
// such is never held as text.
func (e *Endpoint) equal(o *Endpoint) bool {
	if e.addr != o.addr || e.node != o.node || e.bits != o.bits || e.targetName != o.targetName {
		return false
	}
	var none endpointMore
	m, n := e.more, o.more
	if m == nil {
		m = &none
	}
	if n == nil {
		n = &none
	}
	return slices.Equal(m.addresses, n.addresses) && m.kind == n.kind &&
		m.nodeName == n.nodeName && m.namespace == n.namespace &&
		slices.Equal(m.zones, n.zones) && slices.Equal(m.nodes, n.nodes)
}
