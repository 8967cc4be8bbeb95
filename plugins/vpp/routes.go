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

	"contiv.dev/vpp/servicerenderer/nat44"
)

// AddDelRoute adds or deletes a drop route exactly as the corpus records
// it (fib_unreach.jsonl): table_id = VRF, one path of type DROP with
// sw_if_index ~0. Never the ICMP_UNREACH path type: it crashes VPP 25.02.
// VPP answers 0 to adding an existing route and to deleting a missing one.
func (n *NAT44) AddDelRoute(ctx context.Context, r nat44.Route, add bool) error {
	what := fmt.Sprintf("%s drop route %v in VRF %d", addDel(add), r.Prefix, r.VRF)
	req, err := routeRequest(r, add)
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, &ipapi.IPRouteAddDelReply{})
	n.log.Debug("drop route", "op", addDel(add), "prefix", r.Prefix, "vrf", r.VRF, "error", err)
	return classify(err, what, false)
}

// routeRequest is the request that adds or deletes drop route r.
func routeRequest(r nat44.Route, add bool) (*ipapi.IPRouteAddDel, error) {
	if !r.Prefix.IsValid() || !r.Prefix.Addr().Is4() {
		return nil, errors.New("not an IPv4 prefix")
	}
	p := r.Prefix.Masked()
	return &ipapi.IPRouteAddDel{
		IsAdd: add,
		Route: ipapi.IPRoute{
			TableID: r.VRF,
			Prefix: ip_types.Prefix{
				Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(p.Addr().As4())},
				Len:     uint8(p.Bits()),
			},
			NPaths: 1,
			Paths:  []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_DROP}},
		},
	}, nil
}

// DumpRoutes reads the IPv4 routes of the given VRFs (ip_route_v2_dump per
// table) and returns those whose only path drops: the agent's service-CIDR
// routes among them, and VPP's own (such as 240.0.0.0/4), which the
// renderer tells apart by prefix.
func (n *NAT44) DumpRoutes(ctx context.Context, vrfs []uint32) ([]nat44.Route, error) {
	var out []nat44.Route
	for _, vrf := range vrfs {
		err := n.conn.dump(ctx, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: vrf}}, func(m api.Message) error {
			d, ok := m.(*ipapi.IPRouteV2Details)
			if !ok {
				return unexpected(m)
			}
			if r, ok := dropRoute(d); ok {
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

// dropRoute is the route of d when it is an IPv4 route whose only path
// drops.
func dropRoute(d *ipapi.IPRouteV2Details) (nat44.Route, bool) {
	rt := d.Route
	if len(rt.Paths) != 1 || rt.Paths[0].Type != fib_types.FIB_API_PATH_TYPE_DROP || rt.Prefix.Address.Af != ip_types.ADDRESS_IP4 {
		return nat44.Route{}, false
	}
	p, err := netip.AddrFrom4(rt.Prefix.Address.Un.GetIP4()).Prefix(int(rt.Prefix.Len))
	if err != nil {
		return nat44.Route{}, false
	}
	return nat44.Route{RouteKey: nat44.RouteKey{Prefix: p, VRF: rt.TableID}}, true
}
