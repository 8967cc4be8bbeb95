package agent

import (
	"path/filepath"
	"strconv"
	"time"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/prefetch"
	"contiv.dev/vpp/agent/readiness"
	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// buildPipeline builds the service pipeline (nodepipeline): the renderer
// the configuration names (renderer: nat44, the default, or cnat) fed by
// the service processor, then by the health-check server; and tells
// readiness which interfaces the renderer's configuration waits for.
func (a *Agent) buildPipeline() (*nodepipeline.Pipeline, error) {
	n := a.node()
	a.rejectAnyTable = n.RejectAnyTable
	if a.cfg.Renderer != contivconf.RendererCNAT {
		if _, why := n.SNAT(); why != "" {
			a.log.Warn("nat44.natExternalTraffic is true but NO SOURCE NAT is configured: traffic from pods to outside the cluster leaves untranslated", "why", why)
		}
	}
	ports := nodepipeline.Ports{}
	rlog := a.log.With("part", "nat44")
	if a.cfg.Renderer == contivconf.RendererCNAT {
		ports.CNAT = vpp.NewCNAT(a.conn, a.ifaces, a.log.With("part", "cnat-client"))
		// VPP's cnat features cannot be read back: the record of what
		// was enabled survives agent restarts beside the node ID.
		ports.CNATStore = cnat.FileStore{Path: filepath.Join(filepath.Dir(a.cfg.NodeSync.StateFile), "cnat-node.json")}
		rlog = a.log.With("part", "cnat")
	} else {
		nc := n.NAT44Config()
		var vrfs []uint32
		if nc.ServiceCIDR.IsValid() { // the renderer's DumpRoutes
			vrfs = []uint32{nc.PodVRF, nc.MainVRF}
		}
		a.prefetch = prefetch.New(vpp.NewNAT44(a.conn, a.ifaces, a.log.With("part", "nat44-client")), a.conn, a.ownerTag(), vrfs,
			nc.SessionLimit, a.log.With("part", "nat44-client"))
		ports.NAT44 = a.prefetch
	}
	p, err := nodepipeline.Build(nodepipeline.Params{
		Node:                    *n,
		Ports:                   ports,
		ThisNode:                thisNode{h: a.nodes, addrs: &a.rd.Addrs},
		Interfaces:              a.ifaces,
		Wired:                   wiredPods{a},
		Beside:                  []sr.Renderer{a.par.hc},
		SourceRangesNotEnforced: a.sourceRangesNotEnforced,
		ProxyHealthAddress:      a.par.proxyAddr,
		ServiceLog:              a.log.With("part", "service"),
		RendererLog:             rlog,
	})
	if err != nil {
		return nil, err
	}
	if r := p.CNAT; r != nil {
		ifs := waitingFor(r.Pending, func(p cnat.PendingInterface) readiness.Waiting {
			return readiness.Waiting{Name: p.Name, Since: p.Since}
		})
		tables := waitingFor(r.PendingTables, func(p cnat.PendingTable) readiness.Waiting { return table(p.VRF, p.Since) })
		a.rd.Pending = func() []readiness.Waiting { return append(ifs(), tables()...) }
	}
	if r := p.NAT44; r != nil {
		ifs := waitingFor(r.Pending, func(p nat44.PendingInterface) readiness.Waiting {
			return readiness.Waiting{Name: p.Name, Since: p.Since}
		})
		tables := waitingFor(r.PendingTables, func(p nat44.PendingTable) readiness.Waiting { return table(p.VRF, p.Since) })
		a.rd.Pending = func() []readiness.Waiting { return append(ifs(), tables()...) }
		a.rd.Held = r.Held
	}
	a.renderer, a.cnat, a.proc = p.NAT44, p.CNAT, p.Processor
	return p, nil
}

// table is a FIB table some routes wait for.
func table(vrf uint32, since time.Time) readiness.Waiting {
	return readiness.Waiting{Name: strconv.FormatUint(uint64(vrf), 10), Since: since, What: "FIB table"}
}

// waitingFor turns a renderer's list of pending interfaces into
// readiness's.
func waitingFor[P any](pending func() []P, conv func(P) readiness.Waiting) func() []readiness.Waiting {
	return func() []readiness.Waiting {
		var out []readiness.Waiting
		for _, p := range pending() {
			out = append(out, conv(p))
		}
		return out
	}
}

func cnatView(r *cnat.Renderer) any {
	if r == nil {
		return nil
	}
	return restapi.CNATView{
		Desired: r.Desired(), Applied: r.Applied(), DesiredNode: r.DesiredNode(), AppliedNode: r.AppliedNode(),
		Failures: r.Failures(), Conflicts: r.Conflicts(), Pending: r.Pending(), Stats: r.Stats(),
	}
}
