package nodesync

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// An address clash: this node's VPP address, which the address plan derives
// from its node ID, is another node's management address (its Kubernetes
// Node's InternalIP or ExternalIP). Two agents started at once can take
// each other's expected IDs, and a node-interconnect range that overlaps
// the host network then gives one node's VPP the address of another's
// host, and nothing else says so. The handler checks after every change of
// the table or of this node's VPP addresses, logs a warning when a clash
// appears (and when it is gone), and WriteStatus lists the clashes.

// checkClashes finds the clashes now and logs when they changed. It takes
// h.mu.
func (h *Handler) checkClashes() {
	h.mu.Lock()
	now := h.clashesLocked()
	was := h.clashes
	h.clashes = now
	h.mu.Unlock()
	switch {
	case slices.Equal(now, was):
	case len(now) > 0:
		h.log.Warn("nodesync: this node's VPP address is another node's address: check ipam.nodeInterconnectCIDR against the nodes' network and this node's ID",
			"node", h.p.NodeName, "id", h.ID(), "clashes", strings.Join(now, "; "))
	default:
		h.log.Info("nodesync: this node's VPP addresses clash with no other node's address any more", "node", h.p.NodeName)
	}
}

// clashesLocked lists the clashes, one sentence each; h.mu is held.
func (h *Handler) clashesLocked() []string {
	var own []netip.Addr
	if h.vppIPs != nil {
		for _, p := range h.vppIPs {
			own = append(own, p.Addr())
		}
	} else if rec, ok := h.table.Record(h.p.NodeName); ok {
		for _, s := range rec.VppIPs {
			if p, err := netip.ParsePrefix(s); err == nil {
				own = append(own, p.Addr())
			}
		}
	}
	var out []string
	for _, ip := range own {
		for _, name := range h.table.MgmtOwners(ip) {
			if name != h.p.NodeName {
				out = append(out, fmt.Sprintf("this node's VPP address %s (node ID %d) is node %s's address", ip, h.id, name))
			}
		}
	}
	return out
}
