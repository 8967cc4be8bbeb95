package nodepipeline

import (
	"fmt"
	"log/slog"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// Renderer is what the pipeline needs of the renderer that programs
// services into VPP: the renderer API the processor calls, and the apply
// step the controller runs.
type Renderer interface {
	sr.Renderer
	controller.Applier
}

// Ports are the VPP ports the renderers program through: only the
// configured renderer's is used (and must be set).
type Ports struct {
	NAT44 nat44.VPP
	CNAT  cnat.VPP
	// CNATStore keeps the record of the cnat features enabled across
	// agent restarts (VPP cannot tell them); nil keeps none.
	CNATStore cnat.Store
}

// Params are what Build connects.
type Params struct {
	// Node is the node built for; Node.Config.Renderer names the renderer
	// (nat44 when empty).
	Node Node
	// Ports are the renderers' VPP ports.
	Ports Ports
	// ThisNode and Interfaces are the processor's view of the node's
	// identity (NodeSync) and of its pods' interfaces (VPP's table).
	ThisNode   service.ThisNode
	Interfaces service.InterfaceLookup
	// Wired, when set, is the pods the agent's pod manager wired
	// (service.Params.Wired).
	Wired service.WiredPods
	// Beside are further renderers the processor feeds after the services
	// renderer (the agent's service health-check server).
	Beside []sr.Renderer
	// SourceRangesNotEnforced tells why source ranges are not enforced now
	// (nil: Node.SourceRangesNotEnforced).
	SourceRangesNotEnforced func() string
	// ProxyHealthAddress is the listen address of the node's proxy health
	// endpoint, whose port the processor brings through VPP ("", "off" or
	// port 0: none).
	ProxyHealthAddress string
	// ServiceLog, RendererLog and PortLog receive the processor's, the
	// renderer's and its VPP port's logs; nil discards them.
	ServiceLog, RendererLog *slog.Logger
}

// Pipeline is one node's service pipeline.
type Pipeline struct {
	// Processor is the service processor, a controller handler.
	Processor *service.Processor
	// Renderer is the services renderer, the controller's apply step:
	// NAT44 or CNAT, whichever is set.
	Renderer Renderer
	NAT44    *nat44.Renderer
	CNAT     *cnat.Renderer
}

// Build makes the renderer p.Node's configuration names over its port,
// and the service processor feeding it (then p.Beside).
func Build(p Params) (*Pipeline, error) {
	n := &p.Node
	log := p.RendererLog
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := &Pipeline{}
	switch r := n.Config.Renderer; r {
	case contivconf.RendererCNAT:
		cr, err := cnat.New(cnat.Params{Config: n.CNATConfig(), VPP: p.Ports.CNAT, Store: p.Ports.CNATStore, Log: log})
		if err != nil {
			return nil, fmt.Errorf("cnat renderer: %w", err)
		}
		out.CNAT, out.Renderer = cr, cr
	case contivconf.RendererNAT44, "":
		nr, err := nat44.New(nat44.Params{Config: n.NAT44Config(), VPP: p.Ports.NAT44, Log: log})
		if err != nil {
			return nil, fmt.Errorf("nat44 renderer: %w", err)
		}
		out.NAT44, out.Renderer = nr, nr
	default:
		return nil, fmt.Errorf("unknown renderer %q (want nat44 or cnat)", r)
	}
	proc, err := service.New(service.Params{
		Logger:     p.ServiceLog,
		Renderers:  append([]sr.Renderer{out.Renderer}, p.Beside...),
		Node:       p.ThisNode,
		Subnets:    n.Plan,
		Interfaces: p.Interfaces,
		Wired:      p.Wired,
		Config:     n.ServiceConfig(p.SourceRangesNotEnforced, p.ProxyHealthAddress),
	})
	if err != nil {
		return nil, err
	}
	out.Processor = proc
	return out, nil
}
