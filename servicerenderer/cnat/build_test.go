package cnat

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	sr "contiv.dev/vpp/servicerenderer"
)

func TestBuildService(t *testing.T) {
	w1, w2, r1 := path("10.1.1.11", 8080), path("10.1.1.12", 8080), path("10.1.2.11", 8080)
	mixed := []Path{w1, w1, w2, w2, r1} // local ×2 (weight), remote ×1
	locals := []Path{w1, w2}            // all local: no repetition
	cases := []struct {
		name   string
		mutate func(*sr.ContivService)
		want   []Translation
	}{
		{"every frontend kind, Cluster policies", nil, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: mixed, RealIP: true},
		}},
		{"internalTrafficPolicy Local: cluster IP on local backends", func(s *sr.ContivService) {
			s.InternalPolicy = sr.PolicyLocal
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: locals},
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: mixed, RealIP: true},
		}},
		{"externalTrafficPolicy Local: NodePort and external IP on local backends", func(s *sr.ContivService) {
			s.ExternalPolicy = sr.PolicyLocal
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: locals},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: locals, RealIP: true},
		}},
		{"external Local with no local backend: the external IP to the drop sink (the service CIDR's last address), no NodePort", func(s *sr.ContivService) {
			s.ExternalPolicy = sr.PolicyLocal
			s.Ports[0].LocalBackends = nil
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: []Path{path("10.111.255.255", 80)}},
		}},
		{"affinity: Maglev with the source-IP hash", func(s *sr.ContivService) {
			s.AffinityTimeout = 10800
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed, LB: LBMaglev, FlowHash: FlowHashSrcIP},
		}},
		{"no backends: the external IP and the NodePort to the reject sink (the service CIDR's first address)", func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends = nil, nil
		}, []Translation{
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: []Path{path("10.96.0.0", 80)}},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: []Path{path("10.96.0.0", 30080)}, RealIP: true},
		}},
		{"IPv6 backends only: the IPv4 external IP rejected", func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends = []sr.Backend{be("fd00:10:1::5", 8080, true)}, []sr.Backend{be("fd00:10:1::5", 8080, true)}
			s.Ports[0].NodePort = 0
		}, []Translation{
			{Key: key("192.168.16.100", 80, sr.TCP), Paths: []Path{path("10.96.0.0", 80)}},
		}},
		{"IPv6 backends only, IPv6-only service: its IPv4 external IP not served (no translation)", func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends = []sr.Backend{be("fd00:10:1::5", 8080, true)}, []sr.Backend{be("fd00:10:1::5", 8080, true)}
			s.ClusterIPs, s.Ports[0].NodePort = []netip.Addr{addr("fd00:96::10")}, 0
		}, []Translation{
			{Key: key("fd00:96::10", 80, sr.TCP), Paths: []Path{path("fd00:10:1::5", 8080)}},
		}},
		{"remote only: one path each", func(s *sr.ContivService) {
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
			s.Ports[0].Backends = []sr.Backend{be("10.1.2.11", 8080, false), be("10.1.2.12", 8080, false)}
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: []Path{r1, path("10.1.2.12", 8080)}},
		}},
		{"duplicate and port-0 backends skipped; SCTP and port 0 skipped", func(s *sr.ContivService) {
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
			s.Ports[0].Backends = []sr.Backend{be("10.1.2.11", 0, false), be("10.1.2.11", 8080, false), be("10.1.2.11", 8080, false)}
			s.Ports = append(s.Ports, sr.Port{Name: "sctp", Protocol: 132, Port: 90, Backends: s.Ports[0].Backends},
				sr.Port{Name: "zero", Protocol: sr.UDP, Port: 0, Backends: s.Ports[0].Backends})
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: []Path{r1}},
		}},
		{"a key claimed twice by one service: the cluster IP wins", func(s *sr.ContivService) {
			s.ExternalIPs = []netip.Addr{addr("10.96.0.10")}
			s.Ports[0].NodePort = 0
			s.ExternalPolicy = sr.PolicyLocal
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
		}},
		{"dual-stack: each family its own backends", func(s *sr.ContivService) {
			s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::10"))
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
			s.Ports[0].Backends = append(s.Ports[0].Backends, be("fd00:1::11", 8080, true), be("fd00:2::11", 8080, false))
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("fd00:96::10", 80, sr.TCP), Paths: []Path{path("fd00:1::11", 8080), path("fd00:1::11", 8080), path("fd00:2::11", 8080)}},
		}},
		{"IPv6 cluster IP with IPv4 backends only: none", func(s *sr.ContivService) {
			s.ClusterIPs = []netip.Addr{addr("fd00:96::10")}
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
		}, nil},
		{"UDP port", func(s *sr.ContivService) {
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
			s.Ports[0].Protocol = sr.UDP
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.UDP), Paths: mixed},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := web()
			if c.mutate != nil {
				c.mutate(svc)
			}
			got := BuildService(svc, testNode(), testConfig())
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got\n%v\nwant\n%v", got, c.want)
			}
		})
	}
}

// TestBuildServiceIPv6NodePort: on a node with an IPv4 and an IPv6
// address, each NodePort translation gets the backends of its family only
// (is_real_ip on both); an IPv4-only service gets none on the IPv6 address.
func TestBuildServiceIPv6NodePort(t *testing.T) {
	node := testNode()
	node.IPs = append(node.IPs, addr("fd00:16::1"))
	v6local, v6remote := be("fd00:1::11", 8080, true), be("fd00:2::11", 8080, false)
	mixed := []Path{path("10.1.1.11", 8080), path("10.1.1.11", 8080), path("10.1.1.12", 8080), path("10.1.1.12", 8080), path("10.1.2.11", 8080)}
	cases := []struct {
		name   string
		mutate func(*sr.ContivService)
		want   []Translation
	}{
		{"IPv6 backends only: the IPv6 NodePort to them, the IPv4 one to the reject sink", func(s *sr.ContivService) {
			s.Ports[0].Backends, s.Ports[0].LocalBackends = []sr.Backend{v6local}, nil
		}, []Translation{
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: []Path{path("10.96.0.0", 30080)}, RealIP: true},
			{Key: key("fd00:16::1", 30080, sr.TCP), Paths: []Path{path("fd00:1::11", 8080)}, RealIP: true},
		}},
		{"dual-stack: each NodePort its own family", func(s *sr.ContivService) {
			s.ClusterIPs = append(s.ClusterIPs, addr("fd00:96::10"))
			s.Ports[0].Backends = append(s.Ports[0].Backends, v6local, v6remote)
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("fd00:96::10", 80, sr.TCP), Paths: []Path{path("fd00:1::11", 8080), path("fd00:1::11", 8080), path("fd00:2::11", 8080)}},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: mixed, RealIP: true},
			{Key: key("fd00:16::1", 30080, sr.TCP), Paths: []Path{path("fd00:1::11", 8080), path("fd00:1::11", 8080), path("fd00:2::11", 8080)}, RealIP: true},
		}},
		{"dual-stack, externalTrafficPolicy Local: local backends of each family", func(s *sr.ContivService) {
			s.Ports[0].Backends = append(s.Ports[0].Backends, v6local, v6remote)
			s.Ports[0].LocalBackends = append(s.Ports[0].LocalBackends, v6local)
			s.ExternalPolicy = sr.PolicyLocal
		}, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: []Path{path("10.1.1.11", 8080), path("10.1.1.12", 8080)}, RealIP: true},
			{Key: key("fd00:16::1", 30080, sr.TCP), Paths: []Path{path("fd00:1::11", 8080)}, RealIP: true},
		}},
		{"IPv4 only: nothing on the IPv6 node IP", nil, []Translation{
			{Key: key("10.96.0.10", 80, sr.TCP), Paths: mixed},
			{Key: key("192.168.16.1", 30080, sr.TCP), Paths: mixed, RealIP: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := web()
			svc.ExternalIPs = nil
			if c.mutate != nil {
				c.mutate(svc)
			}
			if got := BuildService(svc, node, testConfig()); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got\n%v\nwant\n%v", got, c.want)
			}
		})
	}
}

func TestBuildNode(t *testing.T) {
	n := BuildNode(testConfig(), testInterfaces())
	pod := Tables(1<<TableIncludeV4 | 1<<TablePod)
	want := &Node{
		SNAT4:  nodeIP,
		Policy: PolicyK8S,
		Exclude: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.96.0.0/12"),
			netip.MustParsePrefix("192.168.16.0/24")},
		Tables: map[string]Tables{"host-vcw1": pod, "host-vcw2": pod, "host-vcw3": pod},
		Features: map[string]Feature{"host-vcup": FeatureInput4 | FeatureOutput4, "host-vcw1": FeatureInput4 | FeatureOutput4,
			"host-vcw2": FeatureInput4 | FeatureOutput4, "host-vcw3": FeatureInput4 | FeatureOutput4},
		// The pod VRF's route looks up table 0, whose drop and cluster-IP
		// rejects decide (servicerenderer.PodServiceLookup).
		Routes: []Route{{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 0},
			{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1, Kind: RouteLookup}},
	}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("got %+v\nwant %+v", n, want)
	}

	cfg := testConfig()
	cfg.NodeIP6 = addr("fd00:16::1")
	cfg.ServiceCIDRs = append(cfg.ServiceCIDRs, netip.MustParsePrefix("fd00:96::1/108"))
	n = BuildNode(cfg, map[string]sr.InterfaceRole{"host-vcw1": sr.RoleFrontend, "host-vcup": sr.RoleFrontend, "gone": 0})
	if n.SNAT6 != cfg.NodeIP6 || n.Features["host-vcw1"] != FeatureInput4|FeatureOutput4|FeatureInput6|FeatureOutput6 ||
		n.Tables["host-vcw1"] != pod|1<<TableIncludeV6 || n.Tables["host-vcup"] != 0 || len(n.Features) != 2 {
		t.Errorf("IPv6 node %+v", n)
	}
	if !slices.Contains(n.Exclude, netip.MustParsePrefix("fd00:96::/108")) {
		t.Errorf("v6 service CIDR not excluded (masked): %v", n.Exclude)
	}
	var routes []string
	for _, r := range n.Routes {
		routes = append(routes, r.String())
	}
	if want := []string{"10.96.0.0/12 vrf=0", "fd00:96::/108 vrf=0", "10.96.0.0/12 vrf=1 lookup table=0", "fd00:96::/108 vrf=1"}; !slices.Equal(routes, want) {
		t.Errorf("routes %q, want %q (each service CIDR, masked, in both VRFs; IPv4 looked up from the pod VRF)", routes, want)
	}
	main3 := testConfig()
	main3.MainVRF = 3 // no verdicts: the pod VRF drops too
	if got, want := BuildNode(main3, nil).Routes, []Route{{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1},
		{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 3}}; !slices.Equal(got, want) {
		t.Errorf("main VRF 3: routes %v, want %v", got, want)
	}
	main3.RejectAnyTable = true // a VPP that takes rejects in any table: the pod VRF looks up the main VRF
	if got, want := BuildNode(main3, nil).Routes, []Route{{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 1, Kind: RouteLookup, Table: 3},
		{Prefix: netip.MustParsePrefix("10.96.0.0/12"), VRF: 3}}; !slices.Equal(got, want) {
		t.Errorf("main VRF 3, rejects in any table: routes %v, want %v", got, want)
	}
	cfg.PodVRF = cfg.MainVRF
	if n := BuildNode(cfg, nil); len(n.Routes) != 2 || slices.ContainsFunc(n.Routes, func(r Route) bool { return r.Kind != RouteDrop }) {
		t.Errorf("one VRF: routes %v, want one per CIDR", n.Routes)
	}
}

func TestConfigValidate(t *testing.T) {
	good := testConfig()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.NodeIP4, c.LocalEndpointWeight, c.NodePortMin = netip.Addr{}, 0, 40000
	if err := c.Validate(); err == nil {
		t.Error("bad config accepted")
	}
}

// TestBuildServiceHealthCheck: a Local service's health-check NodePort
// goes to the agent on the host side, on each IPv4 node address, without
// affinity; none under Cluster, without a target, or where a port of the
// service holds the key.
func TestBuildServiceHealthCheck(t *testing.T) {
	hc := Translation{Key: key("192.168.16.1", 32000, sr.TCP), Paths: []Path{path("172.30.1.2", 32000)}, RealIP: true}
	cases := []struct {
		name   string
		mutate func(*sr.ContivService, *Config)
		want   []Translation
	}{
		{"Local: to the host side", func(s *sr.ContivService, _ *Config) {}, []Translation{hc}},
		{"Local with affinity: none for the check", func(s *sr.ContivService, _ *Config) { s.AffinityTimeout = 600 }, []Translation{hc}},
		{"Cluster: none", func(s *sr.ContivService, _ *Config) { s.ExternalPolicy = sr.PolicyCluster }, nil},
		{"no target: none", func(s *sr.ContivService, c *Config) { c.HealthCheckTarget = netip.Addr{} }, nil},
		{"the service's own NodePort holds the key", func(s *sr.ContivService, _ *Config) {
			s.Ports[0].NodePort = 32000
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc, cfg := web(), testConfig()
			svc.ExternalPolicy, svc.HealthCheckNodePort = sr.PolicyLocal, 32000
			svc.ExternalIPs, svc.Ports[0].NodePort = nil, 0
			cfg.HealthCheckTarget = addr("172.30.1.2")
			c.mutate(svc, &cfg)
			var got []Translation
			for _, tr := range BuildService(svc, testNode(), cfg) {
				if tr.Key.Port == 32000 && tr.Paths[0].IP == addr("172.30.1.2") {
					got = append(got, tr)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got\n%v\nwant\n%v", got, c.want)
			}
		})
	}
	bad := testConfig()
	bad.HealthCheckTarget = addr("fd00::1")
	if err := bad.Validate(); err == nil {
		t.Error("an IPv6 health-check target passed validation")
	}
}
