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
	// RouteReject answers ICMP unreachable, "administratively prohibited"
	// (FIB_API_PATH_TYPE_ICMP_PROHIBIT: TCP and UDP clients fail at once;
	// ICMP_UNREACH's "host unreachable" fails only TCP connects,
	// plugins/vpp/sim/testdata/records-verdicts): a cluster IP, whose ports
	// without endpoints (and undefined ports) are then refused at once, or
	// (cnat) the reject sink. VPP 25.02 crashes on it outside table 0
	// (Rejects).
	RouteReject
	// RouteLookup looks the destination up again in the route's table (a
	// path with neither interface nor next hop): the pod VRF's service-CIDR
	// route when verdicts exist (PodServiceLookup), the pod traffic's way to
	// the main VRF's reject and drop routes.
	RouteLookup
)

// Rejects tells whether reject routes (RouteReject) are made, in the main
// VRF: when the main VRF is table 0, or when the connected VPP takes a
// reject path in any table (anyTable: VPP 26.02 and later). VPP 25.02
// crashes on one outside table 0 (FACTS §1), so there a main VRF other
// than 0 gets none: its verdicts drop instead.
func Rejects(mainVRF uint32, anyTable bool) bool {
	return mainVRF == 0 || anyTable
}

// PodServiceLookup tells whether the pod VRF's route of an IPv4 service
// CIDR looks up the main VRF instead of dropping: when reject routes are
// made there (Rejects) and the pod VRF is another table. The packets from
// pods that no translation took then meet the main VRF's routes: the
// service CIDR's drop (an unallocated address: kube-proxy's DROP) or a
// cluster IP's /32 reject (kube-proxy's REJECT), one route per cluster IP.
// Otherwise the pod VRF's route drops, as the main VRF's does.
func PodServiceLookup(mainVRF, podVRF uint32, anyTable bool) bool {
	return Rejects(mainVRF, anyTable) && podVRF != mainVRF
}

// RejectIPs are the cluster IPs of svc whose traffic no translation takes
// is refused at once (kube-proxy's REJECT: ICMP unreachable), as both
// renderers decide it: each IPv4 cluster IP inside cidr (an IPv4 service
// CIDR), once, in svc's order. Its ports without endpoints and the ports
// it does not define are then refused. None when the service has the
// Local internal policy and a port with endpoints but none on this node:
// kube-proxy drops that traffic, which the service CIDR's drop route does.
// IPv6 cluster IPs get none: VPP 25.02 survives a /128 reject in table
// 0, but under cnat its ICMPv6 error leaves with the inner header
// rewritten, so the client does not recognise it and times out
// (records-verdicts/verdicts-cnat.jsonl).
func RejectIPs(svc *ContivService, cidr netip.Prefix) []netip.Addr {
	return AppendRejectIPs(nil, svc, cidr)
}

// AppendRejectIPs appends RejectIPs(svc, cidr) to dst (a renderer's
// scratch buffer: no allocation per change).
func AppendRejectIPs(dst []netip.Addr, svc *ContivService, cidr netip.Prefix) []netip.Addr {
	if svc == nil || !cidr.IsValid() || !cidr.Addr().Is4() {
		return dst
	}
	if svc.InternalPolicy == PolicyLocal {
		for i := range svc.Ports {
			p := &svc.Ports[i]
			if len(p.Backends) > 0 && len(p.BackendsFor(PolicyLocal)) == 0 {
				return dst
			}
		}
	}
	start := len(dst)
	for _, ip := range svc.ClusterIPs {
		ip = ip.Unmap()
		if ip.Is4() && !ip.IsUnspecified() && !ip.IsMulticast() && cidr.Contains(ip) && !slices.Contains(dst[start:], ip) {
			dst = append(dst, ip)
		}
	}
	return dst
}

// RejectSink is the address both renderers translate a frontend to when
// kube-proxy would reject it and no route may (an external or
// LoadBalancer IP of a port without endpoints: a route outside the
// service CIDR could not be recognised after a restart): the first
// address of the service CIDR cidr, which Kubernetes never allocates,
// given a reject route (RouteReject) in the main VRF. Invalid without a valid
// cidr.
func RejectSink(cidr netip.Prefix) netip.Addr {
	if !cidr.IsValid() {
		return netip.Addr{}
	}
	return cidr.Masked().Addr()
}

// DropSink is the address a frontend is translated to when kube-proxy
// would drop it and no route may (an external or LoadBalancer IP whose
// Local policy leaves this node no endpoint): the last address of the IPv4
// service CIDR cidr, which Kubernetes never allocates (its broadcast
// address), dropped by the service CIDR's drop route (FACTS §4). Invalid
// without a valid IPv4 cidr (Kubernetes allocates an IPv6 range's last
// address).
func DropSink(cidr netip.Prefix) netip.Addr {
	p := cidr.Masked()
	if !p.IsValid() || !p.Addr().Is4() {
		return netip.Addr{}
	}
	a := p.Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		a[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(a)
}

// HasBackend tells whether p has a backend of the address family (IPv4
// when v4) with a port: without one, its frontends of that family are
// rejected (kube-proxy's REJECT for a port without endpoints).
func (p *Port) HasBackend(v4 bool) bool {
	for i := range p.Backends {
		if ip := p.Backends[i].IP.Unmap(); ip.IsValid() && ip.Is4() == v4 && p.Backends[i].Port != 0 {
			return true
		}
	}
	return false
}
