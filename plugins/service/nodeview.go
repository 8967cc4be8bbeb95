package service

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// readNode reads this node's name, ID, own addresses and pod subnets.
func (p *Processor) readNode() nodeView {
	v := nodeView{
		name:    p.node.NodeName(),
		id:      p.node.NodeID(),
		podNet:  p.subnets.PodSubnetThisNode().Masked(),
		allPods: p.subnets.PodSubnetAllNodes().Masked(),
	}
	for _, ip := range p.node.NodeIPs() {
		if ip.IsValid() {
			v.ips = append(v.ips, ip)
		}
	}
	slices.SortFunc(v.ips, netip.Addr.Compare)
	v.ips = slices.Compact(v.ips)
	return v
}

// nodeChanged follows a NodeUpdate. Only this node's own addresses and
// subnets matter: when the addresses change, renderers are told (they own
// the NodePort frontends) and only services with host-network endpoints are
// derived again; other nodes' updates touch nothing.
func (p *Processor) nodeChanged(name string) {
	if name != p.name {
		return
	}
	was, now := p.view, p.readNode()
	now.zone = was.zone
	sameIPs := slices.Equal(was.ips, now.ips)
	sameNets := was.podNet == now.podNet && was.allPods == now.allPods
	if sameIPs && sameNets && was.id == now.id {
		return
	}
	p.view = now
	if !sameIPs || was.id != now.id {
		node := now.localNode()
		for i, r := range p.renderers {
			if err := r.UpdateLocalNode(node); err != nil {
				p.errs = append(p.errs, fmt.Errorf("renderer %d: local node: %w", i, err))
			}
		}
	}
	var ids []sr.ServiceID
	switch {
	case !sameNets:
		ids = slices.Collect(maps.Keys(p.services))
	case !sameIPs:
		ids = slices.Collect(maps.Keys(p.hostNet))
	}
	slices.SortFunc(ids, compareIDs)
	for _, id := range ids {
		if e := p.services[id]; e != nil {
			p.refresh(id, e, nil)
		}
	}
	p.log.Info("this node's addresses changed", "node", now.name, "ips", len(now.ips), "servicesDerived", len(ids))
}

// zoneChanged follows a change of this node's Node object: when its zone
// changed, only the services with topology hints are derived again.
func (p *Processor) zoneChanged(n *kubestate.Node) {
	zone := ""
	if n != nil {
		zone = n.Zone
	}
	if zone == p.view.zone {
		return
	}
	p.view.zone = zone
	ids := slices.SortedFunc(maps.Keys(p.hinted), compareIDs)
	for _, id := range ids {
		if e := p.services[id]; e != nil {
			p.refresh(id, e, nil)
		}
	}
	p.log.Info("this node's zone changed", "node", p.name, "zone", zone, "servicesDerived", len(ids))
}
