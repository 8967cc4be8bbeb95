package sim

import (
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
)

// The ACL plugin (acl_plugin.so) as FACTS §8 and
// records-acl-routes/c1-*.jsonl show it: ACLs in a pool (indices from 0,
// freed ones reused), each interface's input list, the replies -6 and
// -142, and the input ACLs' verdict on a packet before NAT (Trace).

// errACLInUse is VPP's "Inbound ACL in use" (-142).
const errACLInUse api.VPPApiError = -142

// ACL is one ACL as the sim holds it.
type ACL struct {
	Index uint32
	Tag   string
	Rules []acl_types.ACLRule
}

// aclState is the plugin's state.
type aclState struct {
	pool []*ACL // nil: a free index
	// input are the input ACL lists by sw_if_index.
	input map[uint32][]uint32
}

func (a *aclState) reset() { *a = aclState{input: map[uint32][]uint32{}} }

func (a *aclState) get(i uint32) *ACL {
	if int(i) < len(a.pool) {
		return a.pool[i]
	}
	return nil
}

// inUse tells whether an interface's input list holds ACL i.
func (a *aclState) inUse(i uint32) bool {
	for _, l := range a.input {
		if slices.Contains(l, i) {
			return true
		}
	}
	return false
}

// aclAddReplace creates an ACL (acl_index ~0, at the lowest free index) or
// replaces one. ASSUMPTION: replacing an index that holds no ACL answers
// -6 (not recorded).
func (v *VPP) aclAddReplace(req *acl.ACLAddReplace) []api.Message {
	r := &acl.ACLAddReplaceReply{ACLIndex: noIndex}
	a := &v.acls
	if req.ACLIndex != noIndex {
		old := a.get(req.ACLIndex)
		if old == nil {
			return reply(r, api.NO_SUCH_ENTRY)
		}
		old.Tag, old.Rules = req.Tag, slices.Clone(req.R)
		r.ACLIndex = req.ACLIndex
		return reply(r, 0)
	}
	i := slices.Index(a.pool, nil)
	if i < 0 {
		i = len(a.pool)
		a.pool = append(a.pool, nil)
	}
	a.pool[i] = &ACL{Index: uint32(i), Tag: req.Tag, Rules: slices.Clone(req.R)}
	r.ACLIndex = uint32(i)
	return reply(r, 0)
}

// aclDel deletes an ACL: -142 while an interface uses it, -6 when missing.
func (v *VPP) aclDel(req *acl.ACLDel) []api.Message {
	r := &acl.ACLDelReply{}
	a := &v.acls
	switch {
	case a.get(req.ACLIndex) == nil:
		return reply(r, api.NO_SUCH_ENTRY)
	case a.inUse(req.ACLIndex):
		return reply(r, errACLInUse)
	}
	a.pool[req.ACLIndex] = nil
	return reply(r, 0)
}

// aclInterfaceSetACLList sets an interface's lists (the first n_input
// input). ASSUMPTION: an unknown interface answers -2, an unknown ACL in
// the list -6 (nothing changed); output lists are accepted and not kept.
func (v *VPP) aclInterfaceSetACLList(req *acl.ACLInterfaceSetACLList) []api.Message {
	r := &acl.ACLInterfaceSetACLListReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	for _, i := range req.Acls {
		if v.acls.get(i) == nil {
			return reply(r, api.NO_SUCH_ENTRY)
		}
	}
	n := min(int(req.NInput), len(req.Acls))
	if n == 0 {
		delete(v.acls.input, idx)
	} else {
		v.acls.input[idx] = slices.Clone(req.Acls[:n])
	}
	return reply(r, 0)
}

// aclInterfaceAddDel adds an ACL to the end of an interface's input list
// or removes it: add twice -142, unknown ACL -6, remove missing -6.
// ASSUMPTION: output lists are not modelled (is_input false answers 0).
func (v *VPP) aclInterfaceAddDel(req *acl.ACLInterfaceAddDel) []api.Message {
	r := &acl.ACLInterfaceAddDelReply{}
	idx := uint32(req.SwIfIndex)
	if _, ok := v.ifaces[idx]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	if !req.IsInput {
		return reply(r, 0)
	}
	l := v.acls.input[idx]
	has := slices.Contains(l, req.ACLIndex)
	switch {
	case req.IsAdd && v.acls.get(req.ACLIndex) == nil:
		return reply(r, api.NO_SUCH_ENTRY)
	case req.IsAdd && has:
		return reply(r, errACLInUse)
	case req.IsAdd:
		v.acls.input[idx] = append(slices.Clip(l), req.ACLIndex)
	case !has:
		return reply(r, api.NO_SUCH_ENTRY)
	default:
		l = slices.DeleteFunc(slices.Clone(l), func(i uint32) bool { return i == req.ACLIndex })
		if len(l) == 0 {
			delete(v.acls.input, idx)
		} else {
			v.acls.input[idx] = l
		}
	}
	return reply(r, 0)
}

// aclDump lists one ACL (or all, acl_index ~0) in index order.
// ASSUMPTION (not recorded): details carry the tag and rules as given.
func (v *VPP) aclDump(req *acl.ACLDump) []api.Message {
	var out []api.Message
	for _, a := range v.acls.pool {
		if a != nil && (req.ACLIndex == noIndex || req.ACLIndex == a.Index) {
			out = append(out, &acl.ACLDetails{ACLIndex: a.Index, Tag: a.Tag, Count: uint32(len(a.Rules)), R: slices.Clone(a.Rules)})
		}
	}
	return out
}

// aclInterfaceListDump lists the interfaces with ACLs, or one interface
// by index. An existing interface asked by index answers its details, with
// an empty list when it has no ACL (records-e2evpp: host-eth1 before any
// ACL was set). ASSUMPTION (not recorded): sw_if_index ~0 lists only the
// interfaces with a list; an unknown index answers nothing.
func (v *VPP) aclInterfaceListDump(req *acl.ACLInterfaceListDump) []api.Message {
	details := func(i uint32) api.Message {
		l := v.acls.input[i]
		return &acl.ACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i),
			Count: uint8(len(l)), NInput: uint8(len(l)), Acls: slices.Clone(l)}
	}
	if req.SwIfIndex != interface_types.InterfaceIndex(noIndex) {
		if _, ok := v.ifaces[uint32(req.SwIfIndex)]; !ok {
			return nil
		}
		return []api.Message{details(uint32(req.SwIfIndex))}
	}
	var out []api.Message
	idxs := make([]uint32, 0, len(v.acls.input))
	for i := range v.acls.input {
		idxs = append(idxs, i)
	}
	slices.Sort(idxs)
	for _, i := range idxs {
		out = append(out, details(i))
	}
	return out
}

// ACLs lists the ACLs, by index.
func (v *VPP) ACLs() []ACL {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []ACL
	for _, a := range v.acls.pool {
		if a != nil {
			out = append(out, ACL{Index: a.Index, Tag: a.Tag, Rules: slices.Clone(a.Rules)})
		}
	}
	return out
}

// InputACLs lists the input ACLs of an interface, in order.
func (v *VPP) InputACLs(ifName string) []uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := v.ifaceByName(ifName)
	if i == nil {
		return nil
	}
	return slices.Clone(v.acls.input[i.index])
}

// aclVerdictLocked applies the input ACLs of the packet's ingress
// interface, before NAT (FACTS §8: acl-plugin-in-ip4-fa runs before
// nat44-ed-out2in): the first matching rule of the first ACL in the list
// that has one decides; no match in any ACL denies (the plugin's default).
// denied is false when the interface has no input ACL. Called with mu held.
func (v *VPP) aclVerdictLocked(p Packet) (denied bool, why string) {
	idx, ok := v.ifaceIndex(p.Ingress)
	if !ok || len(v.acls.input[idx]) == 0 {
		return false, ""
	}
	for _, ai := range v.acls.input[idx] {
		a := v.acls.get(ai)
		if a == nil {
			continue
		}
		for ri, r := range a.Rules {
			if ruleMatches(r, p) {
				if r.IsPermit == acl_types.ACL_ACTION_API_DENY {
					return true, fmt.Sprintf("denied by input ACL %d (%q) rule %d on %s", ai, a.Tag, ri, p.Ingress)
				}
				return false, ""
			}
		}
	}
	return true, fmt.Sprintf("no rule of the input ACLs on %s matched (the ACL plugin denies)", p.Ingress)
}

// ruleMatches tells whether an ACL rule matches a packet (source and
// destination prefixes, protocol 0 = any, destination port range for TCP
// and UDP). ASSUMPTION: the source port range is not checked (the agent
// always sends 0-65535).
func ruleMatches(r acl_types.ACLRule, p Packet) bool {
	in := func(pfx netip.Prefix, a netip.Addr) bool { return pfx.Bits() == 0 || pfx.Contains(a) }
	src, err1 := netip.ParsePrefix(r.SrcPrefix.String())
	dst, err2 := netip.ParsePrefix(r.DstPrefix.String())
	if err1 != nil || err2 != nil || !in(src.Masked(), p.Src) || !in(dst.Masked(), p.Dst) {
		return false
	}
	if r.Proto == 0 {
		return true
	}
	if uint8(r.Proto) != uint8(p.Proto) {
		return false
	}
	return p.DstPort >= r.DstportOrIcmpcodeFirst && p.DstPort <= r.DstportOrIcmpcodeLast
}

// AddInputACL creates an ACL and appends it to an interface's input list,
// as another tool sharing VPP would (tests of the agent's ownership).
func (v *VPP) AddInputACL(ifName, tag string, rules []acl_types.ACLRule) (uint32, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := v.ifaceByName(ifName)
	if i == nil {
		return 0, fmt.Errorf("no interface %q", ifName)
	}
	r := v.aclAddReplace(&acl.ACLAddReplace{ACLIndex: noIndex, Tag: tag, R: rules})[0].(*acl.ACLAddReplaceReply)
	v.acls.input[i.index] = append(slices.Clip(v.acls.input[i.index]), r.ACLIndex)
	return r.ACLIndex, nil
}
