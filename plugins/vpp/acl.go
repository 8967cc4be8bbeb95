package vpp

import (
	"context"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// The ACL plugin's calls for loadBalancerSourceRanges, as
// records-acl-routes/c1-nat44.jsonl shows them: acl_add_replace (acl_index
// ~0 creates, the tag names the owner; source ports 0-65535, destination
// port first = last; the final permit-all with both port ranges
// 0-65535), then acl_interface_set_acl_list with n_input = the list's
// length. ASSUMPTION: acl_dump and acl_interface_list_dump answer with the
// tag, rules and lists as sent (not recorded).

var _ nat44.ACLVPP = (*NAT44)(nil)

// DumpACLs implements nat44.ACLVPP: the ACLs tagged tag (acl_dump of all).
func (n *NAT44) DumpACLs(ctx context.Context, tag string) ([]nat44.SourceACL, error) {
	var out []nat44.SourceACL
	err := n.conn.dump(ctx, &acl.ACLDump{ACLIndex: noIndex}, func(m api.Message) error {
		d, ok := m.(*acl.ACLDetails)
		if !ok {
			return unexpected(m)
		}
		if d.Tag != tag {
			return nil
		}
		a := nat44.SourceACL{Index: d.ACLIndex, Tag: d.Tag}
		for _, r := range d.R {
			a.Rules = append(a.Rules, fromACLRule(r))
		}
		out = append(out, a)
		return nil
	})
	return out, classify(err, "dumping ACLs", false)
}

// AddReplaceACL implements nat44.ACLVPP.
func (n *NAT44) AddReplaceACL(ctx context.Context, a nat44.SourceACL) (uint32, error) {
	req := &acl.ACLAddReplace{ACLIndex: a.Index, Tag: a.Tag, Count: uint32(len(a.Rules))}
	for _, r := range a.Rules {
		req.R = append(req.R, aclRule(r))
	}
	reply := &acl.ACLAddReplaceReply{}
	err := n.conn.invoke(ctx, req, reply)
	n.log.Debug("ACL add/replace", "index", a.Index, "tag", a.Tag, "rules", len(a.Rules), "got", reply.ACLIndex, "err", err)
	return reply.ACLIndex, classify(err, fmt.Sprintf("add/replace ACL %q", a.Tag), false)
}

// DeleteACL implements nat44.ACLVPP.
func (n *NAT44) DeleteACL(ctx context.Context, index uint32) error {
	err := n.conn.invoke(ctx, &acl.ACLDel{ACLIndex: index}, &acl.ACLDelReply{})
	return classify(err, fmt.Sprintf("delete ACL %d", index), false)
}

// InputACLs implements nat44.ACLVPP (acl_interface_list_dump of the
// interface).
func (n *NAT44) InputACLs(ctx context.Context, ifName string) ([]uint32, error) {
	idx, err := n.aclIfIndex(ctx, ifName)
	if err != nil {
		return nil, err
	}
	var out []uint32
	err = n.conn.dump(ctx, &acl.ACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(idx)}, func(m api.Message) error {
		d, ok := m.(*acl.ACLInterfaceListDetails)
		if !ok {
			return unexpected(m)
		}
		if uint32(d.SwIfIndex) == idx {
			out = append(out, d.Acls[:min(int(d.NInput), len(d.Acls))]...)
		}
		return nil
	})
	return out, classify(err, fmt.Sprintf("dumping the ACLs of %q", ifName), false)
}

// SetInputACLs implements nat44.ACLVPP (acl_interface_set_acl_list, input
// only).
func (n *NAT44) SetInputACLs(ctx context.Context, ifName string, acls []uint32) error {
	idx, err := n.aclIfIndex(ctx, ifName)
	if err != nil {
		return err
	}
	req := &acl.ACLInterfaceSetACLList{SwIfIndex: interface_types.InterfaceIndex(idx), Count: uint8(len(acls)),
		NInput: uint8(len(acls)), Acls: acls}
	err = n.conn.invoke(ctx, req, &acl.ACLInterfaceSetACLListReply{})
	n.log.Debug("input ACLs", "interface", ifName, "acls", acls, "err", err)
	return classify(err, fmt.Sprintf("input ACLs of %q", ifName), false)
}

func (n *NAT44) aclIfIndex(ctx context.Context, ifName string) (uint32, error) {
	idx, ok, err := n.ifaces.index(ctx, ifName)
	switch {
	case err != nil:
		return 0, fmt.Errorf("ACLs of interface %q: %w", ifName, err)
	case !ok:
		return 0, fmt.Errorf("ACLs of interface %q: %w: %w", ifName, nat44.ErrNoInterface, nat44.ErrInvalid)
	}
	return idx, nil
}

// aclRule is r as recorded: any source port; the destination port, or
// every port for protocol 0.
func aclRule(r nat44.ACLRule) acl_types.ACLRule {
	out := acl_types.ACLRule{
		IsPermit:               acl_types.ACLAction(r.Action),
		SrcPrefix:              aclPrefix(r.Src),
		DstPrefix:              aclPrefix(r.Dst),
		Proto:                  ip_types.IPProto(r.Proto),
		SrcportOrIcmptypeLast:  65535,
		DstportOrIcmpcodeFirst: r.Port,
		DstportOrIcmpcodeLast:  r.Port,
	}
	if r.Proto == 0 {
		out.DstportOrIcmpcodeFirst, out.DstportOrIcmpcodeLast = 0, 65535
	}
	return out
}

func fromACLRule(r acl_types.ACLRule) nat44.ACLRule {
	out := nat44.ACLRule{
		Action: nat44.ACLAction(r.IsPermit),
		Src:    fromACLPrefix(r.SrcPrefix),
		Dst:    fromACLPrefix(r.DstPrefix),
		Proto:  nat44.Protocol(r.Proto),
		Port:   r.DstportOrIcmpcodeFirst,
	}
	if r.Proto == 0 {
		out.Port = 0
	}
	return out
}

func aclPrefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())}
}

func fromACLPrefix(p ip_types.Prefix) netip.Prefix {
	pfx, err := fromAddress(p.Address).Prefix(int(p.Len))
	if err != nil {
		return netip.Prefix{}
	}
	return pfx
}

// ACLPluginName is the ACL plugin's file: VPP loads it unless its startup
// configuration disables it.
const ACLPluginName = "acl_plugin.so"

// ACLPlugin is the ACL plugin as an optional plugin (Config.OptionalPlugins)
// of the NAT44 renderer: it enforces loadBalancerSourceRanges with it, and
// without it programs everything else and reports the ranges not enforced.
func ACLPlugin() Plugin {
	return Plugin{Name: ACLPluginName, Messages: ACLMessages(),
		Without: "loadBalancerSourceRanges are NOT enforced (every source reaches the LoadBalancer IPs); everything else is programmed"}
}

// HasACLPlugin implements nat44.ACLVPP: the connected VPP has the ACL
// plugin (a plugin not in Config.OptionalPlugins counts as present).
func (n *NAT44) HasACLPlugin() bool { return n.conn.HasPlugin(ACLPluginName) }

// ACLMessages are the ACL plugin's messages the NAT44 renderer uses to
// enforce loadBalancerSourceRanges (ACLPlugin).
func ACLMessages() []api.Message {
	return []api.Message{
		&acl.ACLAddReplace{}, &acl.ACLAddReplaceReply{},
		&acl.ACLDel{}, &acl.ACLDelReply{},
		&acl.ACLDump{}, &acl.ACLDetails{},
		&acl.ACLInterfaceSetACLList{}, &acl.ACLInterfaceSetACLListReply{},
		&acl.ACLInterfaceListDump{}, &acl.ACLInterfaceListDetails{},
	}
}
