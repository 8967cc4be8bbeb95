package offline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// ErrUnknownNode is returned by Render when no node ID is given and the
// node is not among the objects' Nodes, so its ID cannot be derived.
var ErrUnknownNode = errors.New("node not among the Nodes")

// Params are the inputs of an offline render.
type Params struct {
	// Objects are the cluster's objects, e.g. kubestate.LoadYAML of
	// manifests. A later object replaces an earlier one with the same key.
	Objects []kubestate.Object
	// Config is the agent's configuration; Config.NodeName names the node
	// rendered for and must be set, Config.Renderer the renderer rendered
	// through (nat44 when empty).
	Config contivconf.Config
	// NodeID is the node's cluster-wide ID. 0 derives it: the node's
	// position, from 1, among the Nodes of Objects sorted by name — the
	// IDs NodeSync gives when the nodes join in name order.
	NodeID uint32
	// Logger receives the parts' logs; nil discards them.
	Logger *slog.Logger
}

// Rendered is what an agent on one node would program, and the simulated
// VPP it was programmed into.
type Rendered struct {
	// Node is the node rendered for; NodeID its ID, derived when
	// Params.NodeID was 0.
	Node   string
	NodeID uint32
	// Plan is the node's address plan.
	Plan *addrplan.Plan
	// NodeIP is the node's VPP address (configured, or from the plan);
	// MgmtIPs are the InternalIP and ExternalIP addresses of its Node.
	NodeIP  netip.Prefix
	MgmtIPs []netip.Addr
	// MainInterface is the VPP name of the node's main NIC, where traffic
	// from outside the node enters.
	MainInterface string
	// Services are the ContivServices derived; Skipped what was left out.
	Services []*sr.ContivService
	Skipped  []service.Skip
	// Renderer is the renderer rendered through: contivconf.RendererNAT44
	// or contivconf.RendererCNAT.
	Renderer string
	// Desired is the desired NAT44 state; Applied what the simulated VPP
	// holds after the apply step. They differ only by Failures. Both are
	// nil when rendered through cnat.
	Desired, Applied *nat44.State
	// Failures are the objects the simulated VPP refused; Conflicts the
	// frontends claimed by more than one service (NAT44 only).
	Failures  []nat44.Failure
	Conflicts []nat44.Conflict
	// Subsets are the frontends served by a subset of their endpoints
	// (NAT44 only).
	Subsets []nat44.SubsetStatus
	// CNAT is what the cnat renderer programmed; nil with nat44.
	CNAT *CNATRendered

	vpp *sim.VPP
}

// CNATRendered is what the cnat renderer would program on a node.
type CNATRendered struct {
	// Desired are the translations wanted, sorted by key; Applied those
	// the simulated VPP holds after the apply step.
	Desired, Applied []*cnat.Translation
	// DesiredNode is the node configuration wanted; AppliedNode the one
	// applied.
	DesiredNode, AppliedNode *cnat.Node
	// Failures are the objects the simulated VPP refused; Conflicts the
	// frontends claimed by more than one service.
	Failures  []cnat.Failure
	Conflicts []cnat.Conflict
}

// Translate asks the simulated VPP's NAT44 translation oracle what it does
// with a packet. An empty Ingress means the main NIC.
func (r *Rendered) Translate(p sim.Packet) sim.Result {
	if p.Ingress == "" {
		p.Ingress = r.MainInterface
	}
	return r.vpp.Translate(p)
}

// TranslateCNAT asks the simulated VPP's cnat trace what it does with a
// packet (meaningful when rendered through cnat). An empty Ingress means
// the main NIC.
func (r *Rendered) TranslateCNAT(p sim.Packet) sim.CnatResult {
	if p.Ingress == "" {
		p.Ingress = r.MainInterface
	}
	return r.vpp.CnatTrace(p)
}

// staticNode is a node's identity fixed at render time.
type staticNode struct {
	name string
	id   uint32
	ips  []netip.Addr
}

func (n staticNode) NodeName() string      { return n.name }
func (n staticNode) NodeID() uint32        { return n.id }
func (n staticNode) NodeIPs() []netip.Addr { return n.ips }

// Render runs the agent's pipeline offline for one node: the address plan
// from the node's ID, the service processor over the objects, the renderer
// Config.Renderer names (NAT44 by default, or cnat) and its apply step
// into a fresh simulated VPP whose pod interfaces are made as the
// simulated CNI makes them. It uses neither etcd nor a real VPP, and the
// same inputs give the same result.
func Render(ctx context.Context, p Params) (*Rendered, error) {
	cfg := p.Config
	if cfg.NodeName == "" {
		return nil, errors.New("render: no node name")
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	objs := make(map[kubestate.Key]kubestate.Object, len(p.Objects))
	for _, o := range p.Objects {
		objs[o.Key()] = o
	}
	id, node, err := nodeIDOf(cfg.NodeName, p.NodeID, objs)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	plan, err := addrplan.NewPlan(nodepipeline.IPAMConfig(cfg), id)
	if err != nil {
		return nil, fmt.Errorf("render: ipam: %w", err)
	}
	var mgmt []netip.Addr
	if node != nil {
		if mgmt, err = noderegistry.MgmtIPs(node); err != nil {
			return nil, fmt.Errorf("render: node %s: %w", node.Name, err)
		}
	}
	// The parts of an agent this render needs: its configuration and plan,
	// and the simulated VPP with the NICs a node's VPP has.
	// The simulator's warnings that it forwards nothing are no news here.
	v := sim.New(sim.Options{})
	n := &nodepipeline.Node{Config: cfg, Plan: plan}
	nodeIfs := simnode.Interfaces(n)
	n.MainInterface = nodeIfs[0].Name
	if err := simnode.EnsureInterfaces(v, nodeIfs); err != nil {
		return nil, fmt.Errorf("render: simulated VPP: %w", err)
	}
	v.CreateTable(cfg.Routing.PodVRFID) // as the agent's simulated node (Handlers)
	// This node's own addresses, as NodeSync's record gives them to the
	// agent's service processor: management and VPP (IPv4, then IPv6).
	ips := slices.Clone(mgmt)
	for _, ip := range []netip.Prefix{n.IP(), n.IP6()} {
		if ip.IsValid() {
			ips = append(ips, ip.Addr())
		}
	}

	vc := vpp.Config{Adapter: v}
	if cfg.Renderer == contivconf.RendererCNAT {
		vc.ExtraMessages = vpp.CNATMessages()
	}
	conn := vpp.New(vc)
	conn.Start(ctx)
	defer conn.Close()
	if err := conn.WaitConnected(ctx); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	ifaces := vpp.NewInterfaces(conn, nil)
	// No CNATStore: a fresh simulated VPP holds no cnat configuration.
	pl, err := nodepipeline.Build(nodepipeline.Params{
		Node:               *n,
		Ports:              nodepipeline.Ports{NAT44: vpp.NewNAT44(conn, ifaces, log), CNAT: vpp.NewCNAT(conn, ifaces, log)},
		ThisNode:           staticNode{name: cfg.NodeName, id: id, ips: ips},
		Interfaces:         ifaces,
		ProxyHealthAddress: cfg.HTTP.ProxyHealthAddress,
		ServiceLog:         log,
		RendererLog:        log,
	})
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	proc, r, nr, cr := pl.Processor, pl.Renderer, pl.NAT44, pl.CNAT
	ev := &controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{Objects: objs}}
	cni := simnode.NewCNI(v, simnode.Beside{Node: cfg.NodeName, Tag: cfg.NAT44.InterfaceTag, Refresh: ifaces.Refresh, PodVRF: cfg.Routing.PodVRFID})
	if err := cni.Resync(ctx, ev); err != nil {
		return nil, fmt.Errorf("render: pod interfaces: %w", err)
	}
	if err := proc.Resync(ctx, ev); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if err := r.Apply(ctx, true); err != nil {
		return nil, fmt.Errorf("render: apply: %w", err)
	}
	out := &Rendered{
		Node:          cfg.NodeName,
		NodeID:        id,
		Plan:          plan,
		NodeIP:        n.IP(),
		MgmtIPs:       mgmt,
		MainInterface: n.MainInterface,
		Services:      proc.Services(),
		Skipped:       proc.Skipped(),
		Renderer:      contivconf.RendererNAT44,
		vpp:           v,
	}
	if cr != nil {
		out.Renderer = contivconf.RendererCNAT
		out.CNAT = &CNATRendered{
			Desired: cr.Desired(), Applied: cr.Applied(), DesiredNode: cr.DesiredNode(), AppliedNode: cr.AppliedNode(),
			Failures: cr.Failures(), Conflicts: cr.Conflicts(),
		}
		return out, nil
	}
	out.Desired, out.Applied = nr.Desired(), nr.Applied()
	out.Failures, out.Conflicts, out.Subsets = nr.Failures(), nr.Conflicts(), nr.Subsets()
	return out, nil
}

// nodeIDOf returns the ID of node name (given, or its position among the
// Nodes of objs sorted by name) and its Node object, nil when objs has none.
func nodeIDOf(name string, given uint32, objs map[kubestate.Key]kubestate.Object) (uint32, *kubestate.Node, error) {
	var names []string
	var node *kubestate.Node
	for k, o := range objs {
		if k.Resource != kubestate.ResNode {
			continue
		}
		names = append(names, k.Name)
		if k.Name == name {
			node, _ = o.(*kubestate.Node)
		}
	}
	if given != 0 {
		return given, node, nil
	}
	slices.Sort(names)
	i, found := slices.BinarySearch(names, name)
	if !found {
		return 0, nil, fmt.Errorf("%w: %q is not one of the %d Nodes given (%v); give its node ID", ErrUnknownNode, name, len(names), names)
	}
	return uint32(i + 1), node, nil
}
