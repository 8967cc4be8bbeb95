package service

import "slices"

// Topology-aware routing, as kube-proxy does it: the EndpointSlice
// controller turns spec.trafficDistribution into hints on the endpoints
// (hints.forNodes for PreferSameNode, hints.forZones for PreferSameZone and
// PreferClose); the proxy reads only the hints. A port's Cluster-policy
// backends are narrowed to this node's hints when every ready endpoint has
// a node hint and one names this node; else to this node's zone when every
// ready endpoint has a zone hint and one names this zone; else every
// endpoint is used. The Local policies ignore topology: they keep this
// node's endpoints whatever the hints say.

// topoMode is which hints narrow a port's backends.
type topoMode uint8

const (
	topoNone topoMode = iota
	topoSameZone
	topoSameNode
)

// topoFilter admits the candidates the topology mode leaves.
type topoFilter struct {
	mode       topoMode
	node, zone string
}

// admits tells whether candidate c may serve this node under the filter.
func (t topoFilter) admits(c *candidate) bool {
	switch t.mode {
	case topoSameNode:
		return slices.Contains(c.ep.NodeHints(), t.node)
	case topoSameZone:
		return slices.Contains(c.ep.ZoneHints(), t.zone)
	}
	return true
}

// topology chooses the filter of one port from its candidates' hints, and
// records that the service has hints (its backends depend on the zone).
func (b *builder) topology(cands []candidate, v *nodeView) topoFilter {
	allNode, allZone := true, true
	forNode, forZone := false, false
	ready := false
	for i := range cands {
		zones, nodes := cands[i].ep.ZoneHints(), cands[i].ep.NodeHints()
		if len(zones) > 0 || len(nodes) > 0 {
			b.d.hinted = true
		}
		if !cands[i].b.Ready {
			continue
		}
		ready = true
		if len(nodes) == 0 {
			allNode = false
		} else if slices.Contains(nodes, v.name) {
			forNode = true
		}
		if len(zones) == 0 {
			allZone = false
		} else if v.zone != "" && slices.Contains(zones, v.zone) {
			forZone = true
		}
	}
	f := topoFilter{node: v.name, zone: v.zone}
	switch {
	case !ready:
	case allNode && forNode:
		f.mode = topoSameNode
	case allZone && forZone:
		f.mode = topoSameZone
	}
	return f
}
