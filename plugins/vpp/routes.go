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
// (corpus/fib_unreach.jsonl), ICMP_UNREACH (records-acl-routes/c2.jsonl;
// table 0 only: in any other table it crashes VPP 25.02, so such a
// request is refused here as invalid and never sent) or, for a lookup,
// NORMAL with weight 1, no next hop and the looked-up table (c2.jsonl's
// re-added dump). VPP answers 0 to adding an existing route (replacing its
// path) and to deleting a missing one.
func (n *NAT44) AddDelRoute(ctx context.Context, r nat44.Route, add bool) error {
	what := routeWhat(r.Prefix, r.VRF, add)
	req, err := routeRequest(r, add)
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, &ipapi.IPRouteAddDelReply{})
	n.log.Debug("route", "op", addDel(add), "route", r.String(), "error", err)
	return classify(err, what, false)
}

// AddDelDropRoute implements cnat.VPP with the request NAT44's
// AddDelRoute sends (IPv6 prefixes too).
func (c *CNAT) AddDelDropRoute(ctx context.Context, r cnat.Route, add bool) error {
	what := routeWhat(r.Prefix, r.VRF, add)
	req, err := dropRouteRequest(r.Prefix, r.VRF, add)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
	}
	err = c.conn.invoke(ctx, req, &ipapi.IPRouteAddDelReply{})
	c.log.Debug("drop route", "op", addDel(add), "prefix", r.Prefix, "vrf", r.VRF, "error", err)
	return classifyCNAT(err, what)
}

func routeWhat(p netip.Prefix, vrf uint32, add bool) string {
	return fmt.Sprintf("%s drop route %v in VRF %d", addDel(add), p, vrf)
}

// routeRequest is the request that adds or deletes NAT44's route r (IPv4
// only).
func routeRequest(r nat44.Route, add bool) (*ipapi.IPRouteAddDel, error) {
	if !r.Prefix.IsValid() || !r.Prefix.Addr().Is4() {
		return nil, errors.New("not an IPv4 prefix")
	}
	req, err := dropRouteRequest(r.Prefix, r.VRF, add)
	if err != nil {
		return nil, err
	}
	path := &req.Route.Paths[0]
	switch r.Kind {
	case nat44.RouteReject:
		if r.VRF != 0 {
			return nil, errors.New("an ICMP_UNREACH path outside table 0 crashes VPP 25.02 (FACTS §1)")
		}
		path.Type = fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH
	case nat44.RouteLookup:
		path.Type, path.Weight, path.TableID = fib_types.FIB_API_PATH_TYPE_NORMAL, 1, r.Table
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

// DumpDropRoutes implements cnat.VPP: the drop routes of the given VRFs,
// IPv4 and, with ip6, IPv6 (ip_route_v2_dump per table and family).
func (c *CNAT) DumpDropRoutes(ctx context.Context, vrfs []uint32, ip6 bool) ([]cnat.Route, error) {
	var out []cnat.Route
	for _, v6 := range []bool{false, true} {
		if v6 && !ip6 {
			break
		}
		for _, vrf := range vrfs {
			drops, err := c.conn.dropRoutes(ctx, vrf, v6)
			if err != nil {
				return nil, classifyCNAT(err, fmt.Sprintf("dumping routes of VRF %d", vrf))
			}
			for _, d := range drops {
				out = append(out, cnat.Route{Prefix: d.Prefix, VRF: d.VRF})
			}
		}
	}
	return out, nil
}

// droute is a drop route read back: its prefix in one table.
type droute struct {
	Prefix netip.Prefix
	VRF    uint32
}

// String is "prefix vrf=N".
func (d droute) String() string { return fmt.Sprintf("%v vrf=%d", d.Prefix, d.VRF) }

// dropRoutes reads one table of one family and returns the routes whose
// only path drops.
func (c *Conn) dropRoutes(ctx context.Context, vrf uint32, ip6 bool) ([]droute, error) {
	var out []droute
	err := c.dump(ctx, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: vrf, IsIP6: ip6}}, func(m api.Message) error {
		d, ok := m.(*ipapi.IPRouteV2Details)
		if !ok {
			return unexpected(m)
		}
		if r, ok := dropRoute(d); ok {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// dropRoute is the route of d when its only path drops.
func dropRoute(d *ipapi.IPRouteV2Details) (droute, bool) {
	rt := d.Route
	if len(rt.Paths) != 1 || rt.Paths[0].Type != fib_types.FIB_API_PATH_TYPE_DROP {
		return droute{}, false
	}
	p, err := fromAddress(rt.Prefix.Address).Prefix(int(rt.Prefix.Len))
	if err != nil {
		return droute{}, false
	}
	return droute{Prefix: p, VRF: rt.TableID}, true
}

// nat44Route is the route of d when its only path drops, rejects (ICMP
// unreachable or prohibited) or looks up a table (type NORMAL, no
// interface, no next hop).
func nat44Route(d *ipapi.IPRouteV2Details) (nat44.Route, bool) {
	rt := d.Route
	if len(rt.Paths) != 1 {
		return nat44.Route{}, false
	}
	p, err := fromAddress(rt.Prefix.Address).Prefix(int(rt.Prefix.Len))
	if err != nil {
		return nat44.Route{}, false
	}
	out := nat44.Route{RouteKey: nat44.RouteKey{Prefix: p, VRF: rt.TableID}}
	switch path := rt.Paths[0]; {
	case path.Type == fib_types.FIB_API_PATH_TYPE_DROP:
	case path.Type == fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, path.Type == fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		out.Kind = nat44.RouteReject
	case path.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && path.SwIfIndex == noIndex && path.Nh.Address == (ip_types.AddressUnion{}):
		out.Kind, out.Table = nat44.RouteLookup, path.TableID
	default:
		return nat44.Route{}, false
	}
	return out, true
}
