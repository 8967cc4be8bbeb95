package core

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/workload"
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
