package nat44

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"contiv.dev/vpp/servicerenderer"
)

// loadBalancerSourceRanges under NAT44-ED (FACTS §8): VPP's ACL plugin
// on the main NIC's input runs before NAT44-ED's out2in, so an input ACL
// sees the LoadBalancer IP itself. The agent owns one ACL, found by its
// tag (SourceACLTag); it never reads, changes or deletes another, and
// leaves other ACLs of the interface's list in place, after its own.

// ACLAction is what an ACL rule does with the packets it matches.
type ACLAction uint8

// The ACL actions (VPP's numbering).
const (
	ACLDeny ACLAction = iota
	ACLPermit
	// ACLPermitReflect permits and lets the replies and the rest of the
	// connection through; a replace of the ACL keeps established
	// connections only with it (FACTS §8: plain permit stalls them).
	ACLPermitReflect
)

// ACLRule is one rule of the source-range ACL: source and destination
// prefixes, protocol (0: any) and destination port (0 with protocol 0).
type ACLRule struct {
	Action ACLAction
	Src    netip.Prefix
	Dst    netip.Prefix
	Proto  Protocol
	Port   uint16
}

// SourceACL is the agent's ACL as VPP holds it or as wanted.
type SourceACL struct {
	// Index is VPP's ACL index (NoACL: not created).
	Index uint32
	Tag   string
	Rules []ACLRule
}

// NoACL is the index of an ACL VPP does not hold yet (acl_index ~0 creates).
const NoACL = ^uint32(0)

// ACLVPP is what enforcing source ranges needs from VPP (the ACL plugin).
// A VPP of the renderer that does not implement it enforces nothing.
type ACLVPP interface {
	// HasACLPlugin tells whether VPP has loaded the ACL plugin now:
	// without it no ACL call is made (the ranges are reported as not
	// enforced elsewhere), and a full apply after VPP gained it enforces.
	HasACLPlugin() bool
	// DumpACLs reads the ACLs tagged tag.
	DumpACLs(ctx context.Context, tag string) ([]SourceACL, error)
	// AddReplaceACL creates (Index NoACL) or replaces an ACL; it returns
	// its index.
	AddReplaceACL(ctx context.Context, a SourceACL) (uint32, error)
	DeleteACL(ctx context.Context, index uint32) error
	// InputACLs reads the input ACL list of an interface; SetInputACLs
	// sets it. Both wrap ErrNoInterface when VPP lacks the interface.
	InputACLs(ctx context.Context, ifName string) ([]uint32, error)
	SetInputACLs(ctx context.Context, ifName string, acls []uint32) error
}

// SourceACLTag is the tag of the agent's source-range ACL.
func SourceACLTag(prefix string) string { return prefix + "lbsr" }

// SourceRangeRules are the rules one service adds to the ACL: for each
// IPv4 LoadBalancer IP and TCP/UDP port, permit+reflect from each IPv4
// source range, then deny from everywhere else. ExternalIPs, NodePorts
// and cluster IPs are not filtered (kube-proxy's scope). Nil when the
// service has no source range.
func SourceRangeRules(svc *servicerenderer.ContivService) []ACLRule {
	if svc == nil || len(svc.SourceRanges) == 0 {
		return nil
	}
	var out []ACLRule
	for _, ip := range svc.LoadBalancerIPs {
		ip, ok := frontendIPv4(ip)
		if !ok {
			continue
		}
		dst := netip.PrefixFrom(ip, 32)
		for i := range svc.Ports {
			p := &svc.Ports[i]
			if (p.Protocol != servicerenderer.TCP && p.Protocol != servicerenderer.UDP) || p.Port == 0 {
				continue
			}
			for _, src := range svc.SourceRanges {
				if src.Addr().Unmap().Is4() {
					src = netip.PrefixFrom(src.Addr().Unmap(), min(src.Bits(), 32)).Masked()
					out = append(out, ACLRule{Action: ACLPermitReflect, Src: src, Dst: dst, Proto: p.Protocol, Port: p.Port})
				}
			}
			out = append(out, ACLRule{Action: ACLDeny, Src: netip.PrefixFrom(netip.IPv4Unspecified(), 0), Dst: dst, Proto: p.Protocol, Port: p.Port})
		}
	}
	return out
}

// permitAll is the ACL's last rule: everything else passes.
var permitAll = ACLRule{Action: ACLPermit, Src: netip.PrefixFrom(netip.IPv4Unspecified(), 0), Dst: netip.PrefixFrom(netip.IPv4Unspecified(), 0)}

// BuildSourceACL is the whole ACL from the services' rules (by service
// ID, sorted): their rules in ID order, then permit-all. Nil when no
// service has rules.
func BuildSourceACL(tag string, rules map[servicerenderer.ServiceID][]ACLRule) *SourceACL {
	if len(rules) == 0 {
		return nil
	}
	ids := make([]servicerenderer.ServiceID, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b servicerenderer.ServiceID) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	a := &SourceACL{Index: NoACL, Tag: tag}
	for _, id := range ids {
		a.Rules = append(a.Rules, rules[id]...)
	}
	a.Rules = append(a.Rules, permitAll)
	return a
}

// setSourceRules records a service's source-range rules (nil: none); the
// caller holds mu.
func (r *Renderer) setSourceRules(id servicerenderer.ServiceID, rules []ACLRule) {
	if slices.Equal(r.sourceRules[id], rules) {
		return
	}
	if rules == nil {
		delete(r.sourceRules, id)
	} else {
		r.sourceRules[id] = rules
	}
	r.aclDirty = true
}

// applySourceACL makes VPP hold the wanted source-range ACL first on
// Config.SourceRangeInterface's input list, other ACLs of the list kept
// after it: read back on a full apply (nothing written when it is as
// wanted), replaced in one acl_add_replace when the rules change (its
// permits reflect, so established connections survive), removed from the
// list and deleted when no service wants one. A missing interface waits
// (retried on the next full apply).
func (r *Renderer) applySourceACL(ctx context.Context, full bool) error {
	av := r.aclVPP
	ok := av != nil
	if ok && !av.HasACLPlugin() {
		// Nothing to read or write; what VPP holds is unknown (a restart
		// with the plugin starts empty), read back on the next full apply.
		r.mu.Lock()
		r.aclDirty, r.aclKnown, r.aclApplied = true, false, nil
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	ifName := r.cfg.SourceRangeInterface
	if !ok || ifName == "" || (!full && !r.aclDirty) {
		r.mu.Unlock()
		return nil
	}
	tag := SourceACLTag(r.cfg.TagPrefix)
	want := BuildSourceACL(tag, r.sourceRules)
	r.aclDirty = false
	applied, known := r.aclApplied, r.aclKnown
	r.mu.Unlock()
	err := r.syncSourceACL(ctx, av, ifName, want, applied, known && !full)
	if err != nil {
		r.mu.Lock()
		r.aclDirty, r.aclKnown = true, false
		r.mu.Unlock()
		if errors.Is(err, ErrNoInterface) {
			r.log.Debug("source-range ACL waits for its interface", "interface", ifName)
			return nil
		}
		return fmt.Errorf("loadBalancerSourceRanges ACL: %w", err)
	}
	return nil
}

// syncSourceACL is applySourceACL's VPP part; applied is trusted when
// known, else read back.
func (r *Renderer) syncSourceACL(ctx context.Context, av ACLVPP, ifName string, want, applied *SourceACL, known bool) error {
	var list []uint32
	listKnown := false
	if !known {
		acls, err := av.DumpACLs(ctx, want.tagOr(SourceACLTag(r.cfg.TagPrefix)))
		if err != nil {
			return err
		}
		applied = nil
		if len(acls) > 0 {
			applied = &acls[0]
			for _, extra := range acls[1:] {
				// ASSUMPTION: a second ACL with the agent's tag is a
				// leftover of a crashed apply: deleted when unused.
				r.log.Warn("second source-range ACL with the agent's tag", "index", extra.Index)
			}
		}
		if list, err = av.InputACLs(ctx, ifName); err != nil {
			return err
		}
		listKnown = true
	}
	record := func(a *SourceACL) {
		r.mu.Lock()
		r.aclApplied, r.aclKnown = a, true
		r.mu.Unlock()
	}
	if want == nil {
		if applied == nil {
			record(nil)
			return nil
		}
		if !listKnown {
			var err error
			if list, err = av.InputACLs(ctx, ifName); err != nil {
				return err
			}
		}
		if slices.Contains(list, applied.Index) {
			rest := slices.DeleteFunc(slices.Clone(list), func(i uint32) bool { return i == applied.Index })
			if err := av.SetInputACLs(ctx, ifName, rest); err != nil {
				return err
			}
		}
		if err := av.DeleteACL(ctx, applied.Index); err != nil {
			return err
		}
		record(nil)
		return nil
	}
	w := *want
	if applied != nil {
		w.Index = applied.Index
	}
	if applied == nil || !slices.Equal(applied.Rules, w.Rules) {
		idx, err := av.AddReplaceACL(ctx, w)
		if err != nil {
			return err
		}
		w.Index = idx
	}
	if known && applied != nil {
		// Placed first on the list when it was created.
		record(&w)
		return nil
	}
	if !listKnown {
		var err error
		if list, err = av.InputACLs(ctx, ifName); err != nil {
			return err
		}
	}
	if len(list) == 0 || list[0] != w.Index {
		rest := slices.DeleteFunc(slices.Clone(list), func(i uint32) bool { return i == w.Index })
		if len(rest) > 0 {
			r.log.Warn("other ACLs on the source-range interface's input come after the agent's, which ends with permit-all",
				"interface", ifName, "acls", rest)
		}
		if err := av.SetInputACLs(ctx, ifName, append([]uint32{w.Index}, rest...)); err != nil {
			return err
		}
	}
	record(&w)
	return nil
}

func (a *SourceACL) tagOr(tag string) string {
	if a != nil {
		return a.Tag
	}
	return tag
}

// SourceACLApplied is the agent's source-range ACL as VPP holds it, as
// far as the renderer knows (nil: none, or not read yet).
func (r *Renderer) SourceACLApplied() *SourceACL {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.aclApplied == nil {
		return nil
	}
	c := *r.aclApplied
	c.Rules = slices.Clone(c.Rules)
	return &c
}
