package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	ipflow "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/servicerenderer/cnat"
)

// CNAT programs VPP's cnat plugin over the binary API; it is the cnat.VPP
// the cnat renderer's apply step calls. Requests are exactly those the
// corpus recorded a real VPP 25.02 accepting (cnat*.jsonl): every endpoint
// interface ~0, path sources unspecified, no flags, no path flags.
// cnat_session_purge is never sent (it deletes every translation too).
type CNAT struct{ port }

var _ cnat.VPP = (*CNAT)(nil)

// NewCNAT returns a cnat client; ifaces resolves interface names.
func NewCNAT(conn *Conn, ifaces *Interfaces, log *slog.Logger) *CNAT {
	return &CNAT{newPort(conn, ifaces, log)}
}

// CNATMessages lists the binary-API messages of the cnat renderer; VPP must
// know them (govpp v0.13.0 binapi/cnat: all compatible with VPP 25.02,
// corpus cnat_compat.jsonl). They are apart from the NAT44 list: a VPP
// without the cnat plugin passes the NAT44 agent's connect check. The agent
// checks them only when the cnat renderer is selected.
func CNATMessages() []api.Message { return cnatMessages() }

func cnatMessages() []api.Message {
	return []api.Message{
		&cnatapi.CnatTranslationUpdate{}, &cnatapi.CnatTranslationUpdateReply{},
		&cnatapi.CnatTranslationDel{}, &cnatapi.CnatTranslationDelReply{},
		&cnatapi.CnatTranslationDump{}, &cnatapi.CnatTranslationDetails{},
		&cnatapi.CnatGetSnatAddresses{}, &cnatapi.CnatGetSnatAddressesReply{},
		&cnatapi.CnatSetSnatAddresses{}, &cnatapi.CnatSetSnatAddressesReply{},
		&cnatapi.CnatSetSnatPolicy{}, &cnatapi.CnatSetSnatPolicyReply{},
		&cnatapi.CnatSnatPolicyAddDelIf{}, &cnatapi.CnatSnatPolicyAddDelIfReply{},
		&cnatapi.CnatSnatPolicyAddDelExcludePfx{}, &cnatapi.CnatSnatPolicyAddDelExcludePfxReply{},
		&feature.FeatureEnableDisable{}, &feature.FeatureEnableDisableReply{},
	}
}

// classifyCNAT wraps a failed call: -2 (no such interface) wraps
// cnat.ErrNoInterface, -3 (no such FIB table) cnat.ErrNoTable (noTable,
// as for NAT44), -6 (no such entry) cnat.ErrNotFound, and every
// answer of VPP refusing the call cnat.ErrInvalid; anything else is
// transient.
func classifyCNAT(err error, what string) error {
	if err == nil {
		return nil
	}
	if e := noTable(err, what, cnat.ErrInvalid); e != nil {
		return e
	}
	var rv api.VPPApiError
	if errors.As(err, &rv) {
		switch {
		case rv == api.INVALID_SW_IF_INDEX:
			return fmt.Errorf("%s: %w: %w: %w", what, cnat.ErrNoInterface, cnat.ErrInvalid, err)
		case rv == api.NO_SUCH_ENTRY:
			return fmt.Errorf("%s: %w: %w: %w", what, cnat.ErrNotFound, cnat.ErrInvalid, err)
		case slices.Contains(invalidRetvals, rv) || rv > 0:
			return fmt.Errorf("%s: %w: %w", what, cnat.ErrInvalid, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// address is the binapi address of a (IPv4 or IPv6).
func address(a netip.Addr) ip_types.Address {
	a = a.Unmap()
	if a.Is6() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
	}
	if !a.IsValid() {
		a = netip.IPv4Unspecified()
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
}

// fromAddress converts a binapi address.
func fromAddress(a ip_types.Address) netip.Addr {
	if a.Af == ip_types.ADDRESS_IP6 {
		return netip.AddrFrom16(a.Un.GetIP6())
	}
	return netip.AddrFrom4(a.Un.GetIP4())
}

// endpoint is an address endpoint (interface ~0).
func endpoint(a netip.Addr, port uint16) cnatapi.CnatEndpoint {
	return cnatapi.CnatEndpoint{Addr: address(a), SwIfIndex: interface_types.InterfaceIndex(noIndex), Port: port}
}

// translationRequest is the cnat_translation_update of t, as recorded in
// cnat.jsonl / cnat_node.jsonl / cnat_affinity.jsonl / cnat_ipv6.jsonl.
func translationRequest(t *cnat.Translation) (*cnatapi.CnatTranslationUpdate, error) {
	req := &cnatapi.CnatTranslationUpdate{}
	if err := fillTranslation(req, t); err != nil {
		return nil, err
	}
	return req, nil
}

// fillTranslation makes req the cnat_translation_update of t, reusing
// its paths' array.
func fillTranslation(req *cnatapi.CnatTranslationUpdate, t *cnat.Translation) error {
	if len(t.Paths) == 0 {
		return errors.New("no path (0 paths crash VPP 25.02)")
	}
	if !t.IP.IsValid() {
		return errors.New("no VIP")
	}
	src := netip.IPv4Unspecified()
	if t.IP.Unmap().Is6() {
		src = netip.IPv6Unspecified()
	}
	req.Translation = cnatapi.CnatTranslation{
		Vip:            endpoint(t.IP, t.Port),
		IPProto:        ip_types.IPProto(t.Proto),
		LbType:         cnatapi.CnatLbType(t.LB),
		FlowHashConfig: ipflow.IPFlowHashConfigV2(t.FlowHash),
		Paths:          slices.Grow(req.Translation.Paths[:0], len(t.Paths))[:len(t.Paths)],
	}
	tr := &req.Translation
	if t.RealIP {
		tr.IsRealIP = 1
	}
	for i, p := range t.Paths {
		if p.IP.Unmap().Is4() != t.IP.Unmap().Is4() {
			return fmt.Errorf("path %v is not of the VIP's family", p.IP)
		}
		tr.Paths[i] = cnatapi.CnatEndpointTuple{DstEp: endpoint(p.IP, p.Port), SrcEp: endpoint(src, 0)}
	}
	tr.NPaths = uint32(len(tr.Paths))
	return nil
}

// UpdateTranslation implements cnat.VPP.
func (c *CNAT) UpdateTranslation(ctx context.Context, t *cnat.Translation) (uint32, error) {
	what := "cnat translation " + t.Key.String()
	req, err := translationRequest(t)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	}
	reply := &cnatapi.CnatTranslationUpdateReply{}
	err = c.conn.invoke(ctx, req, reply)
	c.log.Debug("cnat translation update", "key", t.Key.String(), "paths", len(t.Paths), "id", reply.ID, "err", err)
	return reply.ID, classifyCNAT(err, what)
}

// DeleteTranslation implements cnat.VPP.
func (c *CNAT) DeleteTranslation(ctx context.Context, id uint32) error {
	err := c.conn.invoke(ctx, &cnatapi.CnatTranslationDel{ID: id}, &cnatapi.CnatTranslationDelReply{})
	c.log.Debug("cnat translation delete", "id", id, "err", err)
	return classifyCNAT(err, fmt.Sprintf("delete cnat translation %d", id))
}

// DumpTranslations implements cnat.VPP.
func (c *CNAT) DumpTranslations(ctx context.Context) ([]cnat.Dumped, error) {
	var out []cnat.Dumped
	err := c.conn.dump(ctx, &cnatapi.CnatTranslationDump{}, func(m api.Message) error {
		d, ok := m.(*cnatapi.CnatTranslationDetails)
		if !ok {
			return unexpected(m)
		}
		out = append(out, dumpedTranslation(d))
		return nil
	})
	if err != nil {
		return nil, classifyCNAT(err, "dumping cnat translations")
	}
	return out, nil
}

// dumpedTranslation reads one translation detail; an interface-based path
// (sw_if_index not ~0) is returned with an invalid IP.
func dumpedTranslation(d *cnatapi.CnatTranslationDetails) cnat.Dumped {
	t := &d.Translation
	out := cnat.Dumped{
		ID:    t.ID,
		Key:   cnat.Key{IP: fromAddress(t.Vip.Addr), Port: t.Vip.Port, Proto: cnat.Protocol(t.IPProto)},
		LB:    cnat.LBType(t.LbType),
		Paths: make([]cnat.Path, len(t.Paths)),
	}
	for i, p := range t.Paths {
		if uint32(p.DstEp.SwIfIndex) != noIndex {
			out.Paths[i] = cnat.Path{Port: p.DstEp.Port}
			continue
		}
		out.Paths[i] = cnat.Path{IP: fromAddress(p.DstEp.Addr), Port: p.DstEp.Port}
	}
	return out
}

// SNATAddresses implements cnat.VPP.
func (c *CNAT) SNATAddresses(ctx context.Context) (netip.Addr, netip.Addr, error) {
	reply := &cnatapi.CnatGetSnatAddressesReply{}
	if err := c.conn.invoke(ctx, &cnatapi.CnatGetSnatAddresses{}, reply); err != nil {
		var rv api.VPPApiError
		if errors.As(err, &rv) && rv == api.FEATURE_DISABLED && c.conn.Release().snatUnsetDisabled {
			return netip.Addr{}, netip.Addr{}, nil // none set yet
		}
		return netip.Addr{}, netip.Addr{}, classifyCNAT(err, "reading cnat SNAT addresses")
	}
	return netip.AddrFrom4(reply.SnatIP4), netip.AddrFrom16(reply.SnatIP6), nil
}

// snatAddressesRequest is the cnat_set_snat_addresses of ip4/ip6
// (cnat_node.jsonl step 1): an unset family is sent unspecified.
func snatAddressesRequest(v4, v6 netip.Addr) (*cnatapi.CnatSetSnatAddresses, error) {
	req := &cnatapi.CnatSetSnatAddresses{SwIfIndex: interface_types.InterfaceIndex(noIndex)}
	if v4.IsValid() {
		a, ok := ip4(v4)
		if !ok {
			return nil, fmt.Errorf("%v is not IPv4", v4)
		}
		req.SnatIP4 = a
	}
	if v6.IsValid() {
		if !v6.Is6() || v6.Is4In6() {
			return nil, fmt.Errorf("%v is not IPv6", v6)
		}
		req.SnatIP6 = v6.As16()
	}
	return req, nil
}

// SetSNATAddresses implements cnat.VPP.
func (c *CNAT) SetSNATAddresses(ctx context.Context, ip4, ip6 netip.Addr) error {
	what := fmt.Sprintf("set cnat SNAT addresses %v %v", ip4, ip6)
	req, err := snatAddressesRequest(ip4, ip6)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	}
	rel := c.conn.Release()
	r, reply := rel.snatAddresses(req)
	err = c.conn.invoke(ctx, r, reply)
	c.log.Debug("cnat SNAT addresses", "ip4", ip4, "ip6", ip6, "err", err)
	if err == nil && rel.cnatSessionTables && (req.SnatIP4 != [4]byte{} || req.SnatIP6 != [16]byte{}) {
		err = c.giveSessionBudgets(ctx)
	}
	return classifyCNAT(err, what)
}

// giveSessionBudgets makes VPP 26.06 give every table a cnat session
// budget. cnat gives one to a table when an interface is bound to it, but
// listens for bindings only from its first use on: a table bound before
// (the startup configuration's, pods re-created after a VPP restart
// before the services) gets none, and VPP makes no cnat session for any
// flow through it: neither translated at the interface nor its replies
// reverse-translated (measured on the real 26.06: "session lookup
// error", clients reset). Setting the SNAT addresses is cnat's first use
// in each VPP's life (the renderer sets them first); binding local0 —
// down, addressless, never forwarding — to each table and back to table
// 0 gives every table its budget. Idempotent; 2 calls a table but 0.
func (c *CNAT) giveSessionBudgets(ctx context.Context) error {
	var tables []ipflow.IPTable
	err := c.conn.dump(ctx, &ipflow.IPTableDump{}, func(m api.Message) error {
		if d, ok := m.(*ipflow.IPTableDetails); ok {
			tables = append(tables, d.Table)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing VPP's tables for their cnat session budgets: %w", err)
	}
	for _, t := range tables {
		if t.TableID == 0 {
			continue
		}
		for _, vrf := range []uint32{t.TableID, 0} {
			if err := c.conn.invoke(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: 0, IsIPv6: t.IsIP6, VrfID: vrf}, &interfaces.SwInterfaceSetTableReply{}); err != nil {
				return fmt.Errorf("binding local0 to table %d (ipv6 %v) for its cnat session budget: %w", vrf, t.IsIP6, err)
			}
		}
	}
	return nil
}

// SetSNATPolicy implements cnat.VPP. VPP answers +1 to an unknown policy.
func (c *CNAT) SetSNATPolicy(ctx context.Context, p cnat.SNATPolicy) error {
	req, reply := c.conn.Release().snatPolicy(p)
	err := c.conn.invoke(ctx, req, reply)
	c.log.Debug("cnat SNAT policy", "policy", p, "err", err)
	return classifyCNAT(err, fmt.Sprintf("set cnat SNAT policy %d", p))
}

// excludeRequest is the cnat_snat_policy_add_del_exclude_pfx of p
// (cnat_node.jsonl step 16).
func excludeRequest(p netip.Prefix, add bool) (*cnatapi.CnatSnatPolicyAddDelExcludePfx, error) {
	if !p.IsValid() {
		return nil, errors.New("invalid prefix")
	}
	p = p.Masked()
	req := &cnatapi.CnatSnatPolicyAddDelExcludePfx{Prefix: ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())}}
	if add {
		req.IsAdd = 1
	}
	return req, nil
}

// AddDelExcludePrefix implements cnat.VPP. VPP answers +1 to deleting a
// prefix it does not hold: done in effect.
func (c *CNAT) AddDelExcludePrefix(ctx context.Context, p netip.Prefix, add bool) error {
	what := fmt.Sprintf("%s cnat SNAT exclude prefix %v", addDel(add), p)
	req, err := excludeRequest(p, add)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	}
	err = c.conn.invoke(ctx, req, &cnatapi.CnatSnatPolicyAddDelExcludePfxReply{})
	c.log.Debug("cnat SNAT exclude prefix", "op", addDel(add), "prefix", p, "err", err)
	if !add && isRetval(err, 1) {
		return nil
	}
	return classifyCNAT(err, what)
}

// AddDelSNATInterface implements cnat.VPP.
func (c *CNAT) AddDelSNATInterface(ctx context.Context, ifName string, table cnat.SNATTable, add bool) (uint32, error) {
	what := snatInterfaceWhat(ifName, table, add)
	idx, err := c.index(ctx, ifName, what)
	if err != nil {
		return 0, err
	}
	err = c.conn.invoke(ctx, snatInterfaceRequest(idx, table, add), &cnatapi.CnatSnatPolicyAddDelIfReply{})
	c.log.Debug("cnat SNAT interface", "op", addDel(add), "interface", ifName, "index", idx, "table", table, "err", err)
	return idx, classifyCNAT(err, what)
}

// snatInterfaceRequest is the cnat_snat_policy_add_del_if of one interface
// and table (cnat_node.jsonl steps 4 and 10).
func snatInterfaceRequest(idx uint32, table cnat.SNATTable, add bool) *cnatapi.CnatSnatPolicyAddDelIf {
	req := &cnatapi.CnatSnatPolicyAddDelIf{SwIfIndex: interface_types.InterfaceIndex(idx), Table: cnatapi.CnatSnatPolicyTable(table)}
	if add {
		req.IsAdd = 1
	}
	return req
}

// index resolves an interface name; a missing one wraps cnat.ErrNoInterface.
func (c *CNAT) index(ctx context.Context, ifName, what string) (uint32, error) {
	idx, ok, err := c.ifaces.index(ctx, ifName)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: %w", what, err)
	case !ok:
		return 0, fmt.Errorf("%s: %w: %w", what, cnat.ErrNoInterface, cnat.ErrInvalid)
	}
	return idx, nil
}

// featureRequest is the feature_enable_disable of one cnat feature
// (cnat_node.jsonl steps 18 and 25, cnat_ipv6.jsonl steps 1 and 2).
func featureRequest(idx uint32, f cnat.Feature, enable bool) (*feature.FeatureEnableDisable, error) {
	arc, node := cnat.FeatureArc(f), cnat.FeatureNode(f)
	if arc == "" {
		return nil, fmt.Errorf("not a single cnat feature: %d", f)
	}
	return &feature.FeatureEnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx), Enable: enable, ArcName: arc, FeatureName: node}, nil
}

// EnableDisableFeature implements cnat.VPP. VPP does not refuse enabling a
// feature twice (it is then on the arc twice, FACTS §6): the renderer
// tracks what it enabled. On a release that enables cnat as a whole
// (26.06: feature_cnat_enable_disable) FeatureInput4 carries the
// interface's one call and the other features send nothing
// (Release.cnatFeatureRequest).
func (c *CNAT) EnableDisableFeature(ctx context.Context, ifName string, f cnat.Feature, enable bool) (uint32, error) {
	what := featureWhat(ifName, f, enable)
	idx, err := c.index(ctx, ifName, what)
	if err != nil {
		return 0, err
	}
	req, reply, err := c.conn.Release().cnatFeatureRequest(idx, f, enable)
	switch {
	case err != nil:
		return idx, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	case req == nil:
		return idx, nil
	}
	err = c.conn.invoke(ctx, req, reply)
	c.log.Debug("cnat feature", "enable", enable, "interface", ifName, "index", idx, "feature", cnat.FeatureNode(f), "message", req.GetMessageName(), "err", err)
	return idx, classifyCNAT(err, what)
}

// snatInterfaceWhat names an interface's SNAT table call in errors.
func snatInterfaceWhat(ifName string, table cnat.SNATTable, add bool) string {
	return fmt.Sprintf("%s interface %q in cnat SNAT table %d", addDel(add), ifName, table)
}

// featureWhat names a cnat feature call in errors.
func featureWhat(ifName string, f cnat.Feature, enable bool) string {
	verb := "disable"
	if enable {
		verb = "enable"
	}
	return fmt.Sprintf("%s %s on interface %q", verb, cnat.FeatureNode(f), ifName)
}
