package noderegistry

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"contiv.dev/vpp/kubestate"
)

// Change is one node's state before and after an update; nil means absent.
type Change struct {
	Name string
	Prev *kubestate.VppNode
	New  *kubestate.VppNode
}

// Nodes is the table of the cluster's nodes: NodeSync's records merged with
// the management addresses of the Kubernetes Node objects. A node is in the
// table while it has a record (so it has an ID); its management addresses
// are those of its Kubernetes Node when that is known, else the published
// ones. Addresses are kept sorted, in canonical text. Not safe for
// concurrent use.
type Nodes struct {
	records map[string]*kubestate.VppNode // canonical
	k8sMgmt map[string][]string           // by Kubernetes Node name, canonical
}

// NewNodes returns an empty table.
func NewNodes() *Nodes {
	return &Nodes{records: map[string]*kubestate.VppNode{}, k8sMgmt: map[string][]string{}}
}

// Reset rebuilds the table from full lists. Bad values are left out and
// reported; the rest is taken in.
func (t *Nodes) Reset(records []*kubestate.VppNode, nodes []*kubestate.Node) error {
	t.records = map[string]*kubestate.VppNode{}
	t.k8sMgmt = map[string][]string{}
	var errs []error
	for _, r := range records {
		rec, err := canonicalRecord(r.Name, r)
		errs = append(errs, err)
		if rec != nil {
			t.records[r.Name] = rec
		}
	}
	for _, n := range nodes {
		ips, err := MgmtIPs(n)
		errs = append(errs, err)
		t.k8sMgmt[n.Name] = addrStrings(ips)
	}
	return errors.Join(errs...)
}

// SetRecord takes in node name's record (nil: deleted) and returns the
// node's change, if any. Bad addresses are left out and reported; a record
// with ID 0 counts as absent.
func (t *Nodes) SetRecord(name string, rec *kubestate.VppNode) (Change, bool, error) {
	prev := t.view(name)
	var err error
	if rec == nil {
		delete(t.records, name)
	} else {
		var c *kubestate.VppNode
		if c, err = canonicalRecord(name, rec); c == nil {
			delete(t.records, name)
		} else {
			t.records[name] = c
		}
	}
	ch, changed := t.change(name, prev)
	return ch, changed, err
}

// SetK8sNode takes in Kubernetes Node name (nil: deleted) and returns the
// node's change, if any (only its management addresses can change). Bad
// addresses are left out and reported.
func (t *Nodes) SetK8sNode(name string, n *kubestate.Node) (Change, bool, error) {
	prev := t.view(name)
	var err error
	if n == nil {
		delete(t.k8sMgmt, name)
	} else {
		var ips []netip.Addr
		ips, err = MgmtIPs(n)
		t.k8sMgmt[name] = addrStrings(ips)
	}
	ch, changed := t.change(name, prev)
	return ch, changed, err
}

// K8sMgmtIPs returns the management addresses of Kubernetes Node name, false
// if the Node is not known.
func (t *Nodes) K8sMgmtIPs(name string) ([]netip.Addr, bool) {
	ss, ok := t.k8sMgmt[name]
	if !ok {
		return nil, false
	}
	ips := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		ips = append(ips, netip.MustParseAddr(s)) // canonical: parsed before
	}
	return ips, true
}

// MgmtOwners returns, sorted, the nodes whose management addresses hold
// ip: those of their Kubernetes Node, or, for a node whose Kubernetes Node
// is not known, those its record published.
func (t *Nodes) MgmtOwners(ip netip.Addr) []string {
	s := ip.Unmap().String()
	var out []string
	for name, ips := range t.k8sMgmt {
		if slices.Contains(ips, s) {
			out = append(out, name)
		}
	}
	for name, r := range t.records {
		if _, ok := t.k8sMgmt[name]; !ok && slices.Contains(r.MgmtIPs, s) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Get returns a copy of node name's state.
func (t *Nodes) Get(name string) (*kubestate.VppNode, bool) {
	v := t.view(name)
	return v, v != nil
}

// Record returns a copy of node name's record as stored (published
// management addresses, not the Kubernetes Node's).
func (t *Nodes) Record(name string) (*kubestate.VppNode, bool) {
	r, ok := t.records[name]
	if !ok {
		return nil, false
	}
	return cloneNode(r), true
}

// All returns a copy of every node, by ID.
func (t *Nodes) All() []*kubestate.VppNode {
	out := make([]*kubestate.VppNode, 0, len(t.records))
	for _, name := range slices.Sorted(maps.Keys(t.records)) {
		out = append(out, t.view(name))
	}
	slices.SortStableFunc(out, func(a, b *kubestate.VppNode) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Len is the number of nodes.
func (t *Nodes) Len() int { return len(t.records) }

// view is node name's merged state, a fresh copy; nil without a record.
func (t *Nodes) view(name string) *kubestate.VppNode {
	r, ok := t.records[name]
	if !ok {
		return nil
	}
	v := cloneNode(r)
	if mgmt, ok := t.k8sMgmt[name]; ok {
		v.MgmtIPs = slices.Clone(mgmt)
	}
	return v
}

func (t *Nodes) change(name string, prev *kubestate.VppNode) (Change, bool) {
	next := t.view(name)
	if equalNodes(prev, next) {
		return Change{}, false
	}
	return Change{Name: name, Prev: prev, New: next}, true
}

// canonicalRecord checks rec and returns its canonical copy, nil if it
// cannot be used at all.
func canonicalRecord(name string, rec *kubestate.VppNode) (*kubestate.VppNode, error) {
	if rec.Name != name {
		return nil, fmt.Errorf("record of node %s names node %q: %w", name, rec.Name, ErrCorrupt)
	}
	if rec.ID == 0 {
		return nil, fmt.Errorf("record of node %s holds ID 0: %w", name, ErrCorrupt)
	}
	a, err := RecordAddresses(rec)
	vpp, mgmt := a.canonical()
	return &kubestate.VppNode{Name: name, ID: rec.ID, VppIPs: vpp, MgmtIPs: mgmt}, err
}

func addrStrings(ips []netip.Addr) []string {
	_, s := Addresses{MgmtIPs: ips}.canonical()
	return s
}

func cloneNode(n *kubestate.VppNode) *kubestate.VppNode {
	return &kubestate.VppNode{Name: n.Name, ID: n.ID, VppIPs: slices.Clone(n.VppIPs), MgmtIPs: slices.Clone(n.MgmtIPs)}
}

func equalNodes(a, b *kubestate.VppNode) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.ID == b.ID && slices.Equal(a.VppIPs, b.VppIPs) && slices.Equal(a.MgmtIPs, b.MgmtIPs)
}

// String describes a change for logs.
func (c Change) String() string {
	desc := func(n *kubestate.VppNode) string {
		if n == nil {
			return "none"
		}
		return fmt.Sprintf("id=%d vpp=[%s] mgmt=[%s]", n.ID, strings.Join(n.VppIPs, " "), strings.Join(n.MgmtIPs, " "))
	}
	return fmt.Sprintf("node %s: %s -> %s", c.Name, desc(c.Prev), desc(c.New))
}
