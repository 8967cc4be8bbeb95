package cnat

import (
	"net/netip"
	"slices"
)

// OpKind names one kind of VPP call of the apply step.
type OpKind uint8

// The operation kinds, in the order an apply issues them.
const (
	// OpFeature enables or disables one feature on an interface.
	OpFeature OpKind = iota
	// OpSNATInterface adds or removes an interface to/from one SNAT table.
	OpSNATInterface
	// OpExcludePrefix adds or removes a prefix excluded from source NAT.
	OpExcludePrefix
	// OpPolicy sets the SNAT policy.
	OpPolicy
	// OpRoute adds or deletes a drop route.
	OpRoute
	// OpSNATAddresses sets the SNAT addresses: always the last node
	// operation, so that VPP holding them tells the node configuration is
	// complete (see Renderer.Apply).
	OpSNATAddresses
	// OpDeleteTranslation deletes a translation.
	OpDeleteTranslation
	// OpUpdateTranslation creates or updates a translation.
	OpUpdateTranslation
	// OpVerdictRoute adds or deletes a service's verdict route
	// (BuildRoutes).
	OpVerdictRoute
)

// String names the kind.
func (k OpKind) String() string {
	return [...]string{"feature", "snat-interface", "exclude-prefix", "snat-policy", "route", "snat-addresses",
		"delete-translation", "update-translation", "verdict-route"}[k]
}

// Op is one VPP call of the apply step; only the fields of its Kind are set.
type Op struct {
	Kind      OpKind
	Add       bool
	Interface string
	Feature   Feature
	Table     SNATTable
	Prefix    netip.Prefix
	Policy    SNATPolicy
	IP4, IP6  netip.Addr
	Route     Route
	// Translation is the one to update, or the one VPP holds to delete.
	Translation *Translation
	// ID is VPP's id of the translation to delete when HaveID is set (read
	// by the dump of this apply); otherwise the apply re-reads it by key
	// right before deleting (see Renderer.Apply).
	ID     uint32
	HaveID bool
}

// isRoute tells whether op adds or deletes a route.
func (op *Op) isRoute() bool { return op.Kind == OpRoute || op.Kind == OpVerdictRoute }

// DiffTranslation is the operations that make VPP hold desired where it
// holds applied (either may be nil): nothing when equal; an update when
// only paths or is_real_ip differ (VPP keeps the id, and every
// connection); a delete and a re-add when the LB type or flow hash differ
// (VPP ignores them on an update); a delete when nothing is desired.
func DiffTranslation(desired, applied *Translation) []Op {
	return appendDiffTranslation(nil, desired, applied, 0, false)
}

func appendDiffTranslation(ops []Op, desired, applied *Translation, id uint32, haveID bool) []Op {
	switch {
	case desired.Equal(applied):
		return ops
	case desired == nil:
		return append(ops, Op{Kind: OpDeleteTranslation, Translation: applied, ID: id, HaveID: haveID})
	case applied == nil:
		return append(ops, Op{Kind: OpUpdateTranslation, Translation: desired})
	case desired.LB != applied.LB || desired.FlowHash != applied.FlowHash:
		return append(ops, Op{Kind: OpDeleteTranslation, Translation: applied, ID: id, HaveID: haveID},
			Op{Kind: OpUpdateTranslation, Translation: desired})
	}
	return append(ops, Op{Kind: OpUpdateTranslation, Translation: desired})
}

// DiffNode is the operations that turn the applied node configuration into
// the desired one, in apply order: what goes first (features, tables,
// exclude prefixes, routes), then what comes (exclude prefixes, policy,
// tables, features, routes), the SNAT addresses last. A feature is enabled
// only where the applied state lacks it, so never twice.
func DiffNode(desired, applied *Node) []Op {
	names := map[string]struct{}{}
	for _, m := range []map[string]Feature{desired.Features, applied.Features} {
		for n := range m {
			names[n] = struct{}{}
		}
	}
	for _, m := range []map[string]Tables{desired.Tables, applied.Tables} {
		for n := range m {
			names[n] = struct{}{}
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	slices.Sort(list)
	return diffNode(nil, desired, applied, list, true)
}

// diffNode diffs the interfaces named (sorted) and, with global, the
// node-wide settings. Setting the SNAT addresses comes first and clearing
// them last: VPP 26.06 keeps the policy, the exclude prefixes and the
// interface tables in an entry that cnat_set_snat_addresses creates and
// clearing them frees (cnat_set_snat); before it exists the table calls
// answer FEATURE_DISABLED and the policy and prefix calls dereference
// nothing (a crash). VPP 25.02 keeps them apart: any order works there.
func diffNode(ops []Op, desired, applied *Node, names []string, global bool) []Op {
	snat := global && (unspec4(desired.SNAT4) != unspec4(applied.SNAT4) || unspec6(desired.SNAT6) != unspec6(applied.SNAT6))
	clearing := unspec4(desired.SNAT4).IsUnspecified() && unspec6(desired.SNAT6).IsUnspecified()
	if snat && !clearing {
		ops = append(ops, Op{Kind: OpSNATAddresses, IP4: desired.SNAT4, IP6: desired.SNAT6})
	}
	for _, n := range names {
		for _, f := range slices.Backward(AllFeatures) {
			if applied.Features[n]&f != 0 && desired.Features[n]&f == 0 {
				ops = append(ops, Op{Kind: OpFeature, Interface: n, Feature: f})
			}
		}
		for _, t := range allTables {
			if applied.Tables[n].Has(t) && !desired.Tables[n].Has(t) {
				ops = append(ops, Op{Kind: OpSNATInterface, Interface: n, Table: t})
			}
		}
	}
	if global {
		ops = diffRoutes(ops, applied.Routes, desired.Routes, false)
		for _, p := range applied.Exclude {
			if _, ok := slices.BinarySearchFunc(desired.Exclude, p, comparePrefix); !ok {
				ops = append(ops, Op{Kind: OpExcludePrefix, Prefix: p})
			}
		}
		for _, p := range desired.Exclude {
			if _, ok := slices.BinarySearchFunc(applied.Exclude, p, comparePrefix); !ok {
				ops = append(ops, Op{Kind: OpExcludePrefix, Prefix: p, Add: true})
			}
		}
		if desired.Policy != applied.Policy {
			ops = append(ops, Op{Kind: OpPolicy, Policy: desired.Policy})
		}
	}
	for _, n := range names {
		for _, t := range allTables {
			if desired.Tables[n].Has(t) && !applied.Tables[n].Has(t) {
				ops = append(ops, Op{Kind: OpSNATInterface, Interface: n, Table: t, Add: true})
			}
		}
		for _, f := range AllFeatures {
			if desired.Features[n]&f != 0 && applied.Features[n]&f == 0 {
				ops = append(ops, Op{Kind: OpFeature, Interface: n, Feature: f, Add: true})
			}
		}
	}
	if global {
		ops = diffRoutes(ops, desired.Routes, applied.Routes, true)
	}
	if snat && clearing {
		ops = append(ops, Op{Kind: OpSNATAddresses, IP4: desired.SNAT4, IP6: desired.SNAT6})
	}
	return ops
}

// diffRoutes appends an OpRoute (add or delete) for each route of from
// that to lacks (both sorted). A route to holds another on the same prefix
// and VRF of is not deleted: the add of that one replaces its path, as
// VPP replaces it (c2-nat44.jsonl; a delete after the add would delete
// the new route, a delete before it would leave a window without one).
// ASSUMPTION: the replace leaves no moment without a route (VPP updates
// the entry's path list in place; not measured packet by packet).
func diffRoutes(ops []Op, from, to []Route, add bool) []Op {
	for _, rt := range from {
		if _, ok := slices.BinarySearchFunc(to, rt, Route.Compare); ok || !add && slices.ContainsFunc(to, rt.samePlace) {
			continue
		}
		ops = append(ops, Op{Kind: OpRoute, Route: rt, Add: add})
	}
	return ops
}

// unspec4 and unspec6 are the address VPP holds for a, unset being the
// unspecified address.
func unspec4(a netip.Addr) netip.Addr {
	if !a.IsValid() {
		return netip.IPv4Unspecified()
	}
	return a
}

func unspec6(a netip.Addr) netip.Addr {
	if !a.IsValid() {
		return netip.IPv6Unspecified()
	}
	return a
}
