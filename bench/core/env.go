package core

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// MainNIC is the main NIC the agent gives the simulated VPP when the
// configuration names none.
const MainNIC = nodepipeline.SimulatedMainNIC

// Env is node 1 of W(N) under the default configuration: what its
// agent would derive from contivconf and IPAM.
type Env struct {
	Config contivconf.Config
	Plan   *addrplan.Plan
}

func NewEnv() (*Env, error) {
	cfg := contivconf.Defaults()
	cfg.NodeName = workload.NodeName(workload.ThisNode)
	plan, err := addrplan.NewPlan(nodepipeline.IPAMConfig(cfg), workload.ThisNode)
	if err != nil {
		return nil, fmt.Errorf("address plan of node 1: %w", err)
	}
	return &Env{Config: cfg, Plan: plan}, nil
}

// Node is node 1 as the agent configures its pipeline, through renderer
// (nat44 or cnat): the main NIC is the configured one, or the simulated
// VPP's.
func (e *Env) Node(renderer string) nodepipeline.Node {
	cfg := e.Config
	cfg.Renderer = renderer
	return nodepipeline.Node{Config: cfg, Plan: e.Plan, MainInterface: cmp.Or(cfg.ForNode(cfg.NodeName).MainInterface.Name, MainNIC)}
}

// RendererConfig is the NAT44 configuration the agent builds for node 1.
func (e *Env) RendererConfig() nat44.Config {
	n := e.Node(contivconf.RendererNAT44)
	return n.NAT44Config()
}

// PodInterface is the name and tag of a local pod's interface, as the
// agent's simulated CNI makes them.
func (e *Env) PodInterface(namespace, pod string) (name, tag string) {
	return simnode.PodInterface(namespace, pod), e.Config.NAT44.InterfaceTag(namespace, pod)
}

// node1 is what NodeSync tells the processor about node 1.
type node1 struct{}

func (node1) NodeName() string { return workload.NodeName(workload.ThisNode) }
func (node1) NodeID() uint32   { return workload.ThisNode }
func (node1) NodeIPs() []netip.Addr {
	return []netip.Addr{workload.VppIP(workload.ThisNode), workload.MgmtIP(workload.ThisNode)}
}

// TagTable is an interface table holding every local pod's interface.
type TagTable map[string]string

// InterfaceByTag is the interface tagged tag.
func (t TagTable) InterfaceByTag(tag string) (string, bool) {
	name, ok := t[tag]
	return name, ok
}

// PodTable is the interface table of W's local pods.
func (e *Env) PodTable(w *workload.Workload) TagTable {
	t := TagTable{}
	for _, p := range w.Pods {
		name, tag := e.PodInterface(p.Namespace, p.Name)
		t[tag] = name
	}
	return t
}

// Pipeline is node 1's service pipeline: the processor feeding the
// renderer (NAT44 or cnat), which is the apply step, as in the agent.
type Pipeline struct {
	Proc *service.Processor
	nat  *nat44.Renderer
	cnat *cnat.Renderer
}

// NAT44 is the pipeline's NAT44 renderer (nil under cnat).
func (p *Pipeline) NAT44() *nat44.Renderer { return p.nat }

// CNAT is the pipeline's cnat renderer (nil under NAT44).
func (p *Pipeline) CNAT() *cnat.Renderer { return p.cnat }

// firstOf counts failures and describes the first.
func firstOf[F any](fs []F) (int, string) {
	if len(fs) == 0 {
		return 0, ""
	}
	return len(fs), fmt.Sprintf("%+v", fs[0])
}

// NewPipeline is node 1's pipeline with the NAT44 renderer.
func (e *Env) NewPipeline(vpp nat44.VPP, ifaces service.InterfaceLookup) (*Pipeline, error) {
	return e.build(contivconf.RendererNAT44, nodepipeline.Ports{NAT44: vpp}, ifaces)
}

// NewCNATPipeline is node 1's pipeline with the cnat renderer.
func (e *Env) NewCNATPipeline(vpp cnat.VPP, ifaces service.InterfaceLookup) (*Pipeline, error) {
	return e.build(contivconf.RendererCNAT, nodepipeline.Ports{CNAT: vpp}, ifaces)
}

// build is node 1's pipeline through renderer, built by the agent's
// builder with the agent's configuration of it (proxy health included).
func (e *Env) build(renderer string, ports nodepipeline.Ports, ifaces service.InterfaceLookup) (*Pipeline, error) {
	b, err := nodepipeline.Build(nodepipeline.Params{
		Node:               e.Node(renderer),
		Ports:              ports,
		ThisNode:           node1{},
		Interfaces:         ifaces,
		ProxyHealthAddress: e.Config.HTTP.ProxyHealthAddress,
	})
	if err != nil {
		return nil, err
	}
	return &Pipeline{Proc: b.Processor, nat: b.NAT44, cnat: b.CNAT}, nil
}

// Resync takes in a full snapshot and applies it in full.
func (p *Pipeline) Resync(ctx context.Context, snap *controller.Snapshot) error {
	if err := p.Proc.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: snap}); err != nil {
		return err
	}
	return p.Apply(ctx, true)
}

// Batch takes in events the processor handles and applies what changed,
// as one controller batch does.
func (p *Pipeline) Batch(ctx context.Context, evs ...controller.Event) error {
	for _, ev := range evs {
		if !p.Proc.HandlesEvent(ev) {
			continue
		}
		if err := p.Proc.Update(ctx, ev); err != nil {
			return err
		}
	}
	return p.Apply(ctx, false)
}

func (p *Pipeline) Apply(ctx context.Context, full bool) error {
	if p.nat != nil {
		return p.nat.Apply(ctx, full)
	}
	return p.cnat.Apply(ctx, full)
}

// Check fails when VPP refused objects: the figures would then describe
// less work than W(N) asks for. It is called outside measured sections.
func (p *Pipeline) Check() error {
	n, first := 0, ""
	if p.nat != nil {
		n, first = firstOf(p.nat.Failures())
	} else {
		n, first = firstOf(p.cnat.Failures())
	}
	if n > 0 {
		return fmt.Errorf("objects VPP refused: %d, first %s", n, first)
	}
	return nil
}

// Events are W(N)'s inputs as the controller hands them over, every
// object decoded from its stored bytes: the base snapshot, the churn as
// changes, and node 101 joining.
type Events struct {
	Snap  *controller.Snapshot
	Churn []*controller.ChangeEvent
	// churnSvc is the service each churn change touches.
	ChurnSvc []int
	// undo reverts the churn, last change first.
	Undo []*controller.ChangeEvent
	Join []controller.Event
}

// decoded is o as the controller's watcher delivers it: decoded from its
// stored bytes, with none of its memory shared with o.
func decoded[T kubestate.Object](o T) (T, error) {
	var zero T
	b, err := kubestate.Encode(o)
	if err != nil {
		return zero, err
	}
	d, err := kubestate.Decode(o.Key(), b)
	if err != nil {
		return zero, err
	}
	return d.(T), nil
}

// NewEvents decodes W(N)'s base snapshot and node 101's join; the churn is
// decoded apart (DecodeChurn), so that a measurement can decode it just
// before it runs, as the watcher would.
func NewEvents(w *workload.Workload) (*Events, error) {
	objs := w.Objects()
	for k, o := range objs {
		d, err := decoded(o)
		if err != nil {
			return nil, err
		}
		objs[k] = d
	}
	ev := &Events{Snap: &controller.Snapshot{Revision: 1, Objects: objs}}
	node, rec := workload.JoinNode()
	n, err := decoded(node)
	if err != nil {
		return nil, err
	}
	vn, err := decoded(rec)
	if err != nil {
		return nil, err
	}
	ev.Join = []controller.Event{
		&controller.ChangeEvent{Key: n.Key(), New: n},
		&controller.ChangeEvent{Key: vn.Key(), New: vn},
		&controller.NodeUpdate{Name: vn.Name, New: vn},
	}
	return ev, nil
}

// DecodeChurn decodes the churn and its undoing; each change's Prev is the
// object the change before left under its key.
func (ev *Events) DecodeChurn(w *workload.Workload) error {
	cur := map[kubestate.Key]kubestate.Object{}
	step := func(next *kubestate.EndpointSlice) (*controller.ChangeEvent, error) {
		d, err := decoded(next)
		if err != nil {
			return nil, err
		}
		// The key is the decoded object's, as the watcher's is: strings
		// just made, not the workload's, built long before.
		k := d.Key()
		prev, ok := cur[k]
		if !ok {
			prev = ev.Snap.Objects[k]
		}
		cur[k] = d
		return &controller.ChangeEvent{Key: k, Prev: prev, New: d}, nil
	}
	cs := w.Churn()
	ev.Churn, ev.ChurnSvc, ev.Undo = make([]*controller.ChangeEvent, 0, len(cs)), make([]int, 0, len(cs)), make([]*controller.ChangeEvent, 0, len(cs))
	for _, c := range cs {
		ch, err := step(c.New)
		if err != nil {
			return err
		}
		ev.Churn = append(ev.Churn, ch)
		ev.ChurnSvc = append(ev.ChurnSvc, c.S)
	}
	for i := len(cs) - 1; i >= 0; i-- {
		ch, err := step(cs[i].Prev)
		if err != nil {
			return err
		}
		ev.Undo = append(ev.Undo, ch)
	}
	return nil
}

// AllEvents is NewEvents and DecodeChurn.
func AllEvents(w *workload.Workload) (*Events, error) {
	ev, err := NewEvents(w)
	if err != nil {
		return nil, err
	}
	return ev, ev.DecodeChurn(w)
}

// AgentConfig is the agent's configuration of node 1 for the figure named
// figure, one that runs the whole agent: etcd at endpoint, its state in dir
// (a new temporary directory that remove removes), a free HTTP port, no
// proxy health endpoint, quiet logs.
func (e *Env) AgentConfig(endpoint, figure string) (cfg contivconf.Config, dir string, remove func(), err error) {
	if dir, err = os.MkdirTemp("", "contiv-bench-"+figure+"-"); err != nil {
		return cfg, "", nil, err
	}
	remove = func() { _ = os.RemoveAll(dir) }
	cfg = e.Config
	cfg.Etcd.Endpoints = []string{"http://" + endpoint}
	cfg.NodeSync.StateFile = filepath.Join(dir, "node-id")
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.HTTP.ProxyHealthAddress = "off"
	cfg.Log.Level = "warn"
	if err := cfg.Validate(); err != nil {
		remove()
		return cfg, "", nil, fmt.Errorf("%s: agent configuration: %w", figure, err)
	}
	return cfg, dir, remove, nil
}
