package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	sr "contiv.dev/vpp/servicerenderer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeNode stands for NodeSync and IPAM: this node's facts, changeable.
type fakeNode struct {
	name            string
	id              uint32
	ips             []netip.Addr
	podNet, allPods netip.Prefix
}

func (f *fakeNode) NodeName() string                { return f.name }
func (f *fakeNode) NodeID() uint32                  { return f.id }
func (f *fakeNode) NodeIPs() []netip.Addr           { return slices.Clone(f.ips) }
func (f *fakeNode) PodSubnetThisNode() netip.Prefix { return f.podNet }
func (f *fakeNode) PodSubnetAllNodes() netip.Prefix { return f.allPods }

// testNode is node-1: pod subnet 10.1.1.0/24 of 10.1.0.0/16, own IPs
// 192.168.16.1 (VPP) and 10.20.0.1 (management).
func testNode() *fakeNode {
	return &fakeNode{
		name: "node-1", id: 1,
		ips:     []netip.Addr{netip.MustParseAddr("192.168.16.1"), netip.MustParseAddr("10.20.0.1")},
		podNet:  netip.MustParsePrefix("10.1.1.0/24"),
		allPods: netip.MustParsePrefix("10.1.0.0/16"),
	}
}

// fakeInterfaces is the VPP layer's interface index: tag → interface.
type fakeInterfaces map[string]string

func (f fakeInterfaces) InterfaceByTag(tag string) (string, bool) {
	n, ok := f[tag]
	return n, ok
}

// fakeWired is the pod manager's wired pods: "namespace/name".
type fakeWired map[string]bool

func (f fakeWired) Wired(ns, name string) bool { return f[ns+"/"+name] }

func (f fakeWired) WiredPods() []kubestate.Key {
	var out []kubestate.Key
	for _, k := range slices.Sorted(maps.Keys(f)) {
		if f[k] {
			ns, name, _ := strings.Cut(k, "/")
			out = append(out, kubestate.Key{Resource: kubestate.ResPod, Namespace: ns, Name: name})
		}
	}
	return out
}

// recorder is a renderer that applies every call to its own copy of the
// state and notes every call that breaks the Renderer contract.
type recorder struct {
	services   map[sr.ServiceID]*sr.ContivService
	ifs        map[string]sr.InterfaceRole
	node       sr.LocalNode
	calls      int
	resyncs    int
	violations []string
	// fail, when set, is returned by every call (after recording it).
	fail error
	// lost lists the interfaces InterfaceLost was told about, as
	// "name@index".
	lost []string
	// reannounced allows an update to the role an interface has (how an
	// InterfaceEvent asks to apply what waited for it).
	reannounced map[string]bool
}

// InterfaceLost implements servicerenderer.InterfaceLoser.
func (r *recorder) InterfaceLost(name string, index uint32) {
	r.lost = append(r.lost, fmt.Sprintf("%s@%d", name, index))
}

func newRecorder() *recorder {
	return &recorder{services: map[sr.ServiceID]*sr.ContivService{}, ifs: map[string]sr.InterfaceRole{}}
}

var _ sr.Renderer = (*recorder)(nil)

func (r *recorder) violate(s string) { r.violations = append(r.violations, s) }

func (r *recorder) AddService(s *sr.ContivService) error {
	r.calls++
	if r.services[s.ID] != nil {
		r.violate("add of existing " + s.ID.String())
	}
	r.services[s.ID] = s
	return r.fail
}

func (r *recorder) UpdateService(old, s *sr.ContivService) error {
	r.calls++
	switch {
	case old.ID != s.ID:
		r.violate("update changes ID " + old.ID.String())
	case r.services[old.ID] != old:
		r.violate("update from a value the renderer was not given: " + old.ID.String())
	case old.Equal(s):
		r.violate("no-op update of " + s.ID.String())
	}
	r.services[s.ID] = s
	return r.fail
}

func (r *recorder) DeleteService(s *sr.ContivService) error {
	r.calls++
	if r.services[s.ID] != s {
		r.violate("delete of a value the renderer was not given: " + s.ID.String())
	}
	delete(r.services, s.ID)
	return r.fail
}

func (r *recorder) UpdateInterface(name string, role sr.InterfaceRole) error {
	r.calls++
	if r.ifs[name] == role && !r.reannounced[name] {
		r.violate("no-op interface update of " + name)
	}
	if role == 0 {
		delete(r.ifs, name)
	} else {
		r.ifs[name] = role
	}
	return r.fail
}

func (r *recorder) UpdateLocalNode(n sr.LocalNode) error {
	r.calls++
	r.node = n
	return r.fail
}

func (r *recorder) Resync(d *sr.ResyncData) error {
	r.calls++
	r.resyncs++
	if !slices.IsSortedFunc(d.Services, func(a, b *sr.ContivService) int { return compareIDs(a.ID, b.ID) }) {
		r.violate("resync services not sorted")
	}
	r.services = map[sr.ServiceID]*sr.ContivService{}
	for _, s := range d.Services {
		r.services[s.ID] = s
	}
	r.ifs = maps.Clone(d.Interfaces)
	r.node = d.Node
	return r.fail
}

// dump is the recorder's state as text.
func (r *recorder) dump() string {
	ids := slices.SortedFunc(maps.Keys(r.services), compareIDs)
	out := make([]*sr.ContivService, 0, len(ids))
	for _, id := range ids {
		out = append(out, r.services[id])
	}
	return dumpState(out, r.ifs, r.node)
}

// dumpState writes services, interfaces and node in the scenario format.
func dumpState(svcs []*sr.ContivService, ifs map[string]sr.InterfaceRole, node sr.LocalNode) string {
	var b strings.Builder
	for _, s := range svcs {
		b.WriteString(formatService(s))
	}
	for _, name := range slices.Sorted(maps.Keys(ifs)) {
		b.WriteString("if " + name + " " + formatRole(ifs[name]) + "\n")
	}
	b.WriteString("node " + node.Name + " id=" + strconv.Itoa(int(node.ID)) + " ips=" + joinAddrs(node.IPs) + "\n")
	return b.String()
}

// formatService is the compact text form of one ContivService:
//
//	svc <ns>/<name> [cluster=<ips>] [external=<ips>] [etp=Local] [itp=Local] [affinity=<s>] [created=<time>]
//	    [healthCheckNodePort=<n>] [sourceRanges=<cidrs>]
//	  port <name|-> <proto> <port> [nodePort=<n>]
//	    backend <ip:port> [local] [host] [ready] [serving] [terminating]
//	    localBackend <ip:port> ...      (Port.LocalBackends)
func formatService(s *sr.ContivService) string {
	var b strings.Builder
	b.WriteString("svc " + s.ID.String())
	if len(s.ClusterIPs) > 0 {
		b.WriteString(" cluster=" + joinAddrs(s.ClusterIPs))
	}
	if len(s.ExternalIPs) > 0 {
		b.WriteString(" external=" + joinAddrs(s.ExternalIPs))
	}
	if s.ExternalPolicy == sr.PolicyLocal {
		b.WriteString(" etp=Local")
	}
	if s.InternalPolicy == sr.PolicyLocal {
		b.WriteString(" itp=Local")
	}
	if s.AffinityTimeout > 0 {
		b.WriteString(" affinity=" + strconv.Itoa(int(s.AffinityTimeout)))
	}
	if !s.Created.IsZero() {
		b.WriteString(" created=" + s.Created.UTC().Format(time.RFC3339))
	}
	if s.HealthCheckNodePort != 0 {
		b.WriteString(" healthCheckNodePort=" + strconv.Itoa(int(s.HealthCheckNodePort)))
	}
	if len(s.SourceRanges) > 0 {
		r := make([]string, len(s.SourceRanges))
		for i, p := range s.SourceRanges {
			r[i] = p.String()
		}
		b.WriteString(" sourceRanges=" + strings.Join(r, ","))
	}
	b.WriteString("\n")
	for _, p := range s.Ports {
		name := p.Name
		if name == "" {
			name = "-"
		}
		b.WriteString("  port " + name + " " + p.Protocol.String() + " " + strconv.Itoa(int(p.Port)))
		if p.NodePort > 0 {
			b.WriteString(" nodePort=" + strconv.Itoa(int(p.NodePort)))
		}
		b.WriteString("\n")
		for _, be := range p.Backends {
			b.WriteString("    backend " + formatBackend(be) + "\n")
		}
		for _, be := range p.LocalBackends {
			b.WriteString("    localBackend " + formatBackend(be) + "\n")
		}
	}
	return b.String()
}

func formatBackend(be sr.Backend) string {
	s := netip.AddrPortFrom(be.IP.Addr(), be.Port).String()
	for _, f := range []struct {
		on   bool
		name string
	}{{be.Local, "local"}, {be.HostNetwork, "host"}, {be.Ready, "ready"}, {be.Serving, "serving"}, {be.Terminating, "terminating"}} {
		if f.on {
			s += " " + f.name
		}
	}
	return s
}

func formatRole(r sr.InterfaceRole) string {
	var parts []string
	if r&sr.RoleFrontend != 0 {
		parts = append(parts, "frontend")
	}
	if r&sr.RoleBackend != 0 {
		parts = append(parts, "backend")
	}
	return strings.Join(parts, ",")
}

func joinAddrs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ",")
}

// formatSkips is one line per skip: service object [port=<p>] reason detail.
func formatSkips(skips []Skip) string {
	var b strings.Builder
	for _, s := range skips {
		b.WriteString(s.Service.String() + " " + string(s.Object.Resource) + "/" + s.Object.ID())
		if s.Port != "" {
			b.WriteString(" port=" + s.Port)
		}
		b.WriteString(" " + s.Reason.String())
		if s.Detail != "" {
			b.WriteString(": " + s.Detail)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tb is what the rig needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// rig is a processor with a recorder, over a fake node and interfaces.
type rig struct {
	t      tb
	node   *fakeNode
	ifaces fakeInterfaces
	wired  fakeWired // the pods the CNI wired
	cfg    Config
	p      *Processor
	rec    *recorder
	// state is the cluster as the rig has applied it.
	state map[kubestate.Key]kubestate.Object
}

func newRig(t tb) *rig {
	r := &rig{t: t, node: testNode(), ifaces: fakeInterfaces{}, wired: fakeWired{}, cfg: Config{MainInterface: "eth0"},
		state: map[kubestate.Key]kubestate.Object{}}
	r.p, r.rec = r.processor()
	return r
}

// processor is a new processor over the rig's node and interfaces.
func (r *rig) processor() (*Processor, *recorder) {
	r.t.Helper()
	rec := newRecorder()
	p, err := New(Params{Renderers: []sr.Renderer{rec}, Node: r.node, Subnets: r.node, Interfaces: r.ifaces, Wired: r.wired, Config: r.cfg})
	if err != nil {
		r.t.Fatal(err)
	}
	return p, rec
}

func (r *rig) resync() {
	r.t.Helper()
	if err := r.p.Resync(context.Background(), r.snapshot()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) snapshot() *controller.ResyncEvent {
	return &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{Objects: maps.Clone(r.state)}}
}

// put applies objects as ChangeEvents, in order. A pod stored under
// another node's key first has that key deleted, as the reflector's move
// does.
func (r *rig) put(objs ...kubestate.Object) {
	r.t.Helper()
	for _, o := range objs {
		k := o.Key()
		if k.Resource == kubestate.ResPod {
			for old := range r.state {
				if old.Resource == kubestate.ResPod && old.ID() == k.ID() && old != k {
					r.change(old, nil)
				}
			}
		}
		r.change(k, o)
	}
}

// del applies deletions.
func (r *rig) del(keys ...kubestate.Key) {
	r.t.Helper()
	for _, k := range keys {
		r.change(k, nil)
	}
}

func (r *rig) change(k kubestate.Key, o kubestate.Object) {
	r.t.Helper()
	ev := &controller.ChangeEvent{Key: k, Prev: r.state[k], New: o}
	if o == nil {
		delete(r.state, k)
	} else {
		r.state[k] = o
	}
	r.apply(ev)
}

// apply hands ev to the processor when it declares it handles it.
func (r *rig) apply(ev controller.Event) {
	r.t.Helper()
	if !r.p.HandlesEvent(ev) {
		return
	}
	if err := r.p.Update(context.Background(), ev); err != nil {
		r.t.Fatal(err)
	}
}

// check fails unless the recorder is free of violations and equals what a
// fresh processor derives from the rig's state in one resync; it returns
// the state's text.
func (r *rig) check() string {
	r.t.Helper()
	if len(r.rec.violations) > 0 {
		r.t.Fatalf("renderer contract broken:\n%s", strings.Join(r.rec.violations, "\n"))
	}
	got := r.rec.dump()
	fresh, rec := r.processor()
	if err := fresh.Resync(context.Background(), r.snapshot()); err != nil {
		r.t.Fatal(err)
	}
	if len(rec.violations) > 0 {
		r.t.Fatalf("renderer contract broken by a resync:\n%s", strings.Join(rec.violations, "\n"))
	}
	if want := rec.dump(); got != want {
		r.t.Fatalf("incremental state differs from a resync:\n--- incremental\n%s--- resync\n%s", got, want)
	}
	if a, b := formatSkips(r.p.Skipped()), formatSkips(fresh.Skipped()); a != b {
		r.t.Fatalf("incremental skips differ from a resync:\n--- incremental\n%s--- resync\n%s", a, b)
	}
	if svcs := r.p.Services(); dumpState(svcs, r.rec.ifs, r.rec.node) != got {
		r.t.Fatalf("Services() differs from what the renderer holds")
	}
	if !maps.Equal(r.p.Interfaces(), r.rec.ifs) {
		r.t.Fatalf("Interfaces() = %v, renderer holds %v", r.p.Interfaces(), r.rec.ifs)
	}
	for _, s := range r.p.Services() {
		for _, p := range s.Ports {
			for _, set := range [][]sr.Backend{p.Backends, p.LocalBackends} {
				if why := unusable(set); why != "" {
					r.t.Fatalf("%s port %s: %s", s.ID, p.Name, why)
				}
			}
		}
	}
	return got
}

// unusable is the oracle of endpoint conditions, written apart from the
// derivation (which incremental and resync share): a set of backends holds
// ready endpoints only or, when it has none, serving-and-terminating ones
// only. An endpoint serving but neither ready nor terminating is never in it.
func unusable(set []sr.Backend) string {
	anyReady := slices.ContainsFunc(set, func(b sr.Backend) bool { return b.Ready })
	for _, b := range set {
		switch {
		case anyReady && !b.Ready:
			return "backend " + formatBackend(b) + " is not ready, beside ready ones"
		case !anyReady && !(b.Serving && b.Terminating):
			return "backend " + formatBackend(b) + " is neither ready nor serving and terminating"
		}
	}
	return ""
}

// errRender is what a failing renderer returns.
var errRender = errors.New("renderer down")
