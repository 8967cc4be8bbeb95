package core

import (
	"context"
	"fmt"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

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
