package servicerenderer

import (
	"net/netip"
	"slices"
	"testing"
)

// TestRejectIPs: which cluster IPs reject the traffic no translation takes.
func TestRejectIPs(t *testing.T) {
	cidr := netip.MustParsePrefix("10.96.0.0/12")
	ips := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	remote := Backend{IP: IPOf(netip.MustParseAddr("10.1.2.5")), Port: 8080, Ready: true, Serving: true}
	local := Backend{IP: IPOf(netip.MustParseAddr("10.1.1.5")), Port: 8080, Ready: true, Serving: true, Local: true}
	svc := func(policy TrafficPolicy, cluster []netip.Addr, bs ...Backend) *ContivService {
		p := Port{Protocol: TCP, Port: 80, Backends: bs}
		for _, b := range bs {
			if b.Local {
				p.LocalBackends = append(p.LocalBackends, b)
			}
		}
		return &ContivService{ClusterIPs: cluster, InternalPolicy: policy, Ports: []Port{p}}
	}
	cases := []struct {
		name string
		svc  *ContivService
		cidr netip.Prefix
		want []netip.Addr
	}{
		{"no endpoints", svc(PolicyCluster, ips("10.96.0.50")), cidr, ips("10.96.0.50")},
		{"endpoints (undefined ports)", svc(PolicyCluster, ips("10.96.0.50"), remote), cidr, ips("10.96.0.50")},
		{"outside the CIDR, IPv6, duplicate, mapped", svc(PolicyCluster,
			ips("10.200.0.1", "fd00::1", "10.96.0.50", "::ffff:10.96.0.50")), cidr, ips("10.96.0.50")},
		{"Local, no local endpoint: drop", svc(PolicyLocal, ips("10.96.0.50"), remote), cidr, nil},
		{"Local with a local endpoint", svc(PolicyLocal, ips("10.96.0.50"), remote, local), cidr, ips("10.96.0.50")},
		{"Local, no endpoint at all", svc(PolicyLocal, ips("10.96.0.50")), cidr, ips("10.96.0.50")},
		{"no service CIDR", svc(PolicyCluster, ips("10.96.0.50")), netip.Prefix{}, nil},
		{"IPv6 service CIDR", svc(PolicyCluster, ips("fd00::1")), netip.MustParsePrefix("fd00::/108"), nil},
		{"nil service", nil, cidr, nil},
	}
	for _, c := range cases {
		if got := RejectIPs(c.svc, c.cidr); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPodServiceLookup: the pod VRF looks the service CIDR up in the main
// VRF only where reject routes can exist (main VRF 0, or any main VRF on
// a VPP that takes rejects in any table) and the pod VRF is another table
// (a lookup of a table in itself would loop).
func TestPodServiceLookup(t *testing.T) {
	for _, c := range []struct {
		main, pod uint32
		anyTable  bool
		want      bool
	}{
		{0, 1, false, true}, {0, 7, false, true}, {1, 2, false, false}, {3, 0, false, false}, {0, 0, false, false},
		{0, 1, true, true}, {1, 2, true, true}, {3, 0, true, true}, {5, 5, true, false},
	} {
		if got := PodServiceLookup(c.main, c.pod, c.anyTable); got != c.want {
			t.Errorf("main VRF %d, pod VRF %d, rejects in any table %v: %v, want %v", c.main, c.pod, c.anyTable, got, c.want)
		}
		if got, want := Rejects(c.main, c.anyTable), c.main == 0 || c.anyTable; got != want {
			t.Errorf("Rejects(%d, %v) = %v", c.main, c.anyTable, got)
		}
	}
}
