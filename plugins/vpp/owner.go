package vpp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
)

// One VPP, one owner. The agent that manages a VPP marks it, in VPP
// itself, with the tag of local0 (sw_if_index 0, which every VPP has and
// no CNI tags): "contiv:" + cluster name + "/" + node name, the cluster
// name being the agent's configured clusterName. Both parts come from the
// configuration, so the mark survives what happens to etcd (a restore or a
// new etcd changes its cluster ID, not the mark), and two clusters tell
// their agents apart by their names (etcd's cluster ID does not: it is a
// hash of the peer URLs and token, equal for identically configured
// clusters). The marker lives as long as VPP's state (a restart loses
// both) and any client reads it back with sw_interface_dump.
// ASSUMPTION: VPP 25.02 tags local0 as any interface
// (sw_interface_tag_add_del checks only that the index exists; the corpus
// records tags on other interfaces only) and its dump returns the tag.
//
// Agents before clusterName wrote "contiv@" + etcd cluster ID + "/" + node
// (legacy marks). OwnerOf reads both; IsLegacyOwnerTag tells a legacy mark
// of a given node, which that node's upgraded agent takes for its own.

// ownerPrefix starts an owner marker; legacyOwnerPrefix started the marker
// of agents before clusterName.
const (
	ownerPrefix       = "contiv:"
	legacyOwnerPrefix = "contiv@"
)

// OwnerTag is the marker of the agent of node in cluster (its configured
// cluster name): "contiv:" + cluster + "/" + node, within VPP's 63 bytes (a
// longer one keeps its start and ends with "~" and a hash of the whole, so
// that it stays distinct).
func OwnerTag(cluster, node string) string {
	return fitTag(ownerPrefix + cluster + "/" + node)
}

// fitTag is tag within VPP's 63 bytes: a longer one keeps its start and
// ends with "~" and a hash of the whole.
func fitTag(tag string) string {
	if len(tag) <= maxTag {
		return tag
	}
	sum := sha256.Sum256([]byte(tag))
	suffix := "~" + hex.EncodeToString(sum[:8])
	return tag[:maxTag-len(suffix)] + suffix
}

// OwnerOf is the owner a local0 tag names ("cluster/node"; for a legacy
// mark "<etcd cluster ID>/node"), false when the tag is no owner marker.
func OwnerOf(tag string) (string, bool) {
	owner, ok := strings.CutPrefix(tag, ownerPrefix)
	if !ok {
		owner, ok = strings.CutPrefix(tag, legacyOwnerPrefix)
	}
	return owner, ok && owner != ""
}

// IsLegacyOwnerTag tells whether tag is the legacy mark ("contiv@" + etcd
// cluster ID + "/" + node, shortened as OwnerTag shortens) that the agent
// of node wrote, whatever the etcd cluster ID was.
func IsLegacyOwnerTag(tag, node string) bool {
	rest, ok := strings.CutPrefix(tag, legacyOwnerPrefix)
	if !ok {
		return false
	}
	id, _, ok := strings.Cut(rest, "/") // the ID is hex: no "/" in it
	return ok && tag == fitTag(legacyOwnerPrefix+id+"/"+node)
}

// ReadOwner reads local0's tag ("" when it has none).
func (c *Conn) ReadOwner(ctx context.Context) (string, error) {
	tag := ""
	// Index 0 would mean "all" (FACTS §2): all are read, local0 kept.
	err := c.dump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)}, func(m api.Message) error {
		if d, ok := m.(*interfaces.SwInterfaceDetails); ok && d.SwIfIndex == 0 {
			tag = d.Tag
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("reading VPP's owner: %w", err)
	}
	return tag, nil
}

// MarkOwner tags local0 with tag, replacing the tag it had.
func (c *Conn) MarkOwner(ctx context.Context, tag string) error {
	err := c.invoke(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 0, Tag: tag}, &interfaces.SwInterfaceTagAddDelReply{})
	if err != nil {
		return fmt.Errorf("marking VPP's owner %q: %w", tag, err)
	}
	return nil
}
