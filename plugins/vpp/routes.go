package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// Both renderers program the same drop routes for the service CIDR (FACTS
// §4): the requests and the dump below are shared.

// AddDelRoute adds or deletes a route exactly as the records show it:
// table_id = VRF and one path with sw_if_index ~0, of type DROP
// (corpus/fib_unreach.jsonl), ICMP_PROHIBIT (records-acl-routes/c2.jsonl,
// sim/testdata/records-verdicts; table 0 only: in any other table it
// crashes VPP 25.02, so such a request is refused here as invalid and
// never sent; VPP 26.06 takes it in any table, Release.RejectInAnyTable)
// or, for a lookup,
// NORMAL with weight 1, no next hop and the looked-up table (c2.jsonl's
// re-added dump). VPP answers 0 to adding an existing route (replacing its
// path) and to deleting a missing one.
func (n *NAT44) AddDelRoute(ctx context.Context, r nat44.Route, add bool) error {
	what := routeWhat(r.Prefix.AsPrefix(), r.VRF, add)
	req, err := routeRequest(r, add, n.conn.Release())
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, &ipapi.IPRouteAddDelReply{})
	n.log.Debug("route", "op", addDel(add), "route", r.String(), "err", err)
	return classify(err, what, false)
}

// AddDelFIBRoute implements cnat.VPP with the requests NAT44's
// AddDelRoute sends (IPv6 prefixes too).
func (c *CNAT) AddDelFIBRoute(ctx context.Context, r cnat.Route, add bool) error {
	what := routeWhat(r.Prefix, r.VRF, add)
	req, err := pathRequest(r.Prefix, r.VRF, add, r.Kind == cnat.RouteReject, r.Kind == cnat.RouteLookup, r.Table, c.conn.Release())
	if err != nil {
		return fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	}
	err = c.conn.invoke(ctx, req, &ipapi.IPRouteAddDelReply{})
	c.log.Debug("route", "op", addDel(add), "route", r.String(), "err", err)
	return classifyCNAT(err, what)
}

func routeWhat(p netip.Prefix, vrf uint32, add bool) string {
	return fmt.Sprintf("%s route %v in VRF %d", addDel(add), p, vrf)
}

// routeRequest is the request that adds or deletes NAT44's route r (IPv4
// only).
func routeRequest(r nat44.Route, add bool, rel *Release) (*ipapi.IPRouteAddDel, error) {
	if !r.Prefix.IsValid() {
		return nil, errors.New("not an IPv4 prefix")
	}
	return pathRequest(r.Prefix.AsPrefix(), r.VRF, add, r.Kind == nat44.RouteReject, r.Kind == nat44.RouteLookup, r.Table, rel)
}

// pathRequest is the request that adds or deletes a route on p in table
// vrf whose one path drops, rejects (ICMP_PROHIBIT: table 0 only on VPP
// 25.02, any table on a release with Release.RejectInAnyTable) or looks
// up table.
func pathRequest(p netip.Prefix, vrf uint32, add, reject, lookup bool, table uint32, rel *Release) (*ipapi.IPRouteAddDel, error) {
	req, err := dropRouteRequest(p, vrf, add)
	if err != nil {
		return nil, err
	}
	path := &req.Route.Paths[0]
	switch {
	case reject:
		if vrf != 0 && !rel.RejectInAnyTable() {
			return nil, errors.New("an ICMP_PROHIBIT/ICMP_UNREACH path outside table 0 crashes VPP 25.02 (FACTS §1)")
		}
		// ICMP_PROHIBIT, not ICMP_UNREACH: its "administratively
		// prohibited" fails UDP clients at once too, ICMP_UNREACH's "host
		// unreachable" only TCP connects (sim/testdata/records-verdicts).
		path.Type = fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT
		if p.Addr().Is6() {
			// An IPv6 reject needs the IPv6 path protocol: with IP4 (the
			// zero value) VPP answers no ICMP at all (records-verdicts).
			path.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
		}
	case lookup:
		path.Type, path.Weight, path.TableID = fib_types.FIB_API_PATH_TYPE_NORMAL, 1, table
	}
	return req, nil
}

// dropRouteRequest is the request that adds or deletes a drop route on p
// in table vrf. ASSUMPTION: an IPv6 prefix takes the recorded IPv4 request
// with an IPv6 address (not recorded: fib_unreach.jsonl is IPv4 only).
func dropRouteRequest(p netip.Prefix, vrf uint32, add bool) (*ipapi.IPRouteAddDel, error) {
	if !p.IsValid() {
		return nil, errors.New("invalid prefix")
	}
	p = p.Masked()
	return &ipapi.IPRouteAddDel{
		IsAdd: add,
		Route: ipapi.IPRoute{
			TableID: vrf,
			Prefix:  ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())},
			NPaths:  1,
			Paths:   []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_DROP}},
		},
	}, nil
}

// DumpRoutes reads the IPv4 routes of the given VRFs (ip_route_v2_dump per
// table) and returns those whose only path drops, rejects or looks up a
// table: the agent's among them, and VPP's own (such as 240.0.0.0/4, or
// the startup configuration's lookups), which the renderer tells apart by
// prefix.
func (n *NAT44) DumpRoutes(ctx context.Context, vrfs []uint32) ([]nat44.Route, error) {
	var out []nat44.Route
	for _, vrf := range vrfs {
		err := n.conn.dump(ctx, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: vrf}}, func(m api.Message) error {
			d, ok := m.(*ipapi.IPRouteV2Details)
			if !ok {
				return unexpected(m)
			}
			if r, ok := nat44Route(d); ok {
				out = append(out, r)
			}
			return nil
		})
		if err != nil {
			return nil, classify(err, fmt.Sprintf("dumping routes of VRF %d", vrf), false)
		}
	}
	return out, nil
}

// DumpFIBRoutes implements cnat.VPP: the routes of the given VRFs whose
// only path drops, rejects or looks up a table, IPv4 and, with ip6, IPv6
// (ip_route_v2_dump per table and family). Entries of cnat's own FIB
// source are left out (cnatEntry).
func (c *CNAT) DumpFIBRoutes(ctx context.Context, vrfs []uint32, ip6 bool) ([]cnat.Route, error) {
	var out []cnat.Route
	for _, v6 := range []bool{false, true} {
		if v6 && !ip6 {
			break
		}
		for _, vrf := range vrfs {
			err := c.conn.dump(ctx, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: vrf, IsIP6: v6}}, func(m api.Message) error {
				d, ok := m.(*ipapi.IPRouteV2Details)
				if !ok {
					return unexpected(m)
				}
				if r, ok := cnatRoute(d); ok && !cnatEntry(d) {
					out = append(out, r)
				}
				return nil
			})
			if err != nil {
				return nil, classifyCNAT(err, fmt.Sprintf("dumping routes of VRF %d", vrf))
			}
		}
	}
	return out, nil
}

// cnatFIBSource is the FIB source of the entries cnat makes for its
// translations' addresses (fib_source.h: FIB_SOURCE_CNAT, 23 on VPP 25.02
// and 26.06, measured).
const cnatFIBSource = 23

// cnatEntry tells whether d is the entry cnat makes in table 0 for a
// translation's address: cnat's, not the agent's. Its source outranks
// the API's and no dump lists an API route it hides
// (records-e2evpp/cnat.jsonl), which is why the renderer makes no reject
// route on a translated cluster IP (cnat.BuildRoutes). An earlier agent
// made one there and read such an entry as holding it (issue 34 F4); one
// left hidden beneath is harmless, and is wanted again, or deleted at the
// next full resync, once the translation goes.
func cnatEntry(d *ipapi.IPRouteV2Details) bool { return d.Route.Src == cnatFIBSource }

// cnatRoute is the route of d when its only path drops, rejects or looks
// up a table, read as nat44Route reads it.
func cnatRoute(d *ipapi.IPRouteV2Details) (cnat.Route, bool) {
	r, ok := readFIBRoute(d)
	if !ok {
		return cnat.Route{}, false
	}
	out := cnat.Route{Prefix: r.prefix, VRF: r.vrf, Table: r.table}
	switch r.kind {
	case nat44.RouteReject:
		out.Kind = cnat.RouteReject
	case nat44.RouteLookup:
		out.Kind = cnat.RouteLookup
	}
	return out, true
}

// nat44Route is the route of d, when IPv4, as readFIBRoute reads it.
func nat44Route(d *ipapi.IPRouteV2Details) (nat44.Route, bool) {
	r, ok := readFIBRoute(d)
	if !ok {
		return nat44.Route{}, false
	}
	p, ok := nat44.IPv4PrefixOf(r.prefix)
	if !ok {
		return nat44.Route{}, false
	}
	return nat44.Route{RouteKey: nat44.RouteKey{Prefix: p, VRF: r.vrf}, Kind: r.kind, Table: r.table}, true
}

// fibRoute is a route both renderers read from a dump (IPv4 or IPv6).
type fibRoute struct {
	prefix netip.Prefix
	vrf    uint32
	kind   nat44.RouteKind
	table  uint32
}

// readFIBRoute is the route of d when its only path drops, rejects (ICMP
// unreachable or prohibited) or looks up a table (type NORMAL, no
// interface, no next hop).
func readFIBRoute(d *ipapi.IPRouteV2Details) (fibRoute, bool) {
	rt := d.Route
	if len(rt.Paths) != 1 {
		return fibRoute{}, false
	}
	p, err := fromAddress(rt.Prefix.Address).Prefix(int(rt.Prefix.Len))
	if err != nil {
		return fibRoute{}, false
	}
	out := fibRoute{prefix: p, vrf: rt.TableID}
	switch path := rt.Paths[0]; {
	case path.Type == fib_types.FIB_API_PATH_TYPE_DROP:
	case path.Type == fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, path.Type == fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		out.kind = nat44.RouteReject
	case path.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && path.SwIfIndex == noIndex && path.Nh.Address == (ip_types.AddressUnion{}):
		out.kind, out.table = nat44.RouteLookup, path.TableID
	default:
		return fibRoute{}, false
	}
	return out, true
}
