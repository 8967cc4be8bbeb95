package servicerenderer

import (
	"net/netip"
	"slices"
)

// RouteKind is what a verdict route does with the traffic it matches:
// traffic no mapping or translation took (both renderers translate before
// the FIB lookup).
type RouteKind uint8

// The route kinds.
const (
	// RouteDrop drops (FIB_API_PATH_TYPE_DROP): the service CIDRs, and
	// (nat44) an external IP whose Local-policy frontends have no local
	// endpoint.
	RouteDrop RouteKind = iota
	// RouteReject answers ICMP unreachable (FIB_API_PATH_TYPE_ICMP_UNREACH):
	// a cluster IP, whose ports without endpoints (and undefined ports) are
	// then refused at once. VPP 25.02 crashes on it outside table 0.
	RouteReject
	// RouteLookup looks the destination up again in the route's table (a
	// path with neither interface nor next hop): the pod VRF's way to a
	// cluster IP's reject route in table 0, past the pod VRF's drop route.
	RouteLookup
)

// RejectIPs are the cluster IPs of svc whose traffic no translation takes
// is refused at once (kube-proxy's REJECT: ICMP unreachable), as both
// renderers decide it: each IPv4 cluster IP inside cidr (an IPv4 service
// CIDR), once, in svc's order. Its ports without endpoints and the ports
// it does not define are then refused. None when the service has the
// Local internal policy and a port with endpoints but none on this node:
// kube-proxy drops that traffic, which the service CIDR's drop route does.
// IPv6 cluster IPs get none (an IPv6 reject route was never measured).
func RejectIPs(svc *ContivService, cidr netip.Prefix) []netip.Addr {
	if svc == nil || !cidr.IsValid() || !cidr.Addr().Is4() {
		return nil
	}
	if svc.InternalPolicy == PolicyLocal {
		for i := range svc.Ports {
			p := &svc.Ports[i]
			if len(p.Backends) > 0 && len(p.BackendsFor(PolicyLocal)) == 0 {
				return nil
			}
		}
	}
	var out []netip.Addr
	for _, ip := range svc.ClusterIPs {
		ip = ip.Unmap()
		if ip.Is4() && !ip.IsUnspecified() && !ip.IsMulticast() && cidr.Contains(ip) && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}
