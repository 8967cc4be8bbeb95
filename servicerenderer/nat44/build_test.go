package nat44

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/servicerenderer"
)

func TestBuildService(t *testing.T) {
	const tag = "tag=contiv:default/web"
	pod1, pod2 := be("10.1.1.3", 8080, "local"), be("10.1.1.4", 8080, "local")
	pod3 := be("10.2.1.1", 8080)
	web := func(ports ...servicerenderer.Port) *servicerenderer.ContivService {
		return service("default", "web", 0, "10.96.0.1", ports...)
	}
	withExt := func(s *servicerenderer.ContivService, ext ...string) *servicerenderer.ContivService {
		s.ExternalIPs = ips(ext...)
		return s
	}
	tests := []struct {
		name   string
		svc    *servicerenderer.ContivService
		cfg    func(*Config)
		node   *servicerenderer.LocalNode
		expect []string
	}{{
		name: "cluster IP: weight 2 for local backends, 1 for remote, self-twice-NAT",
		svc:  web(port("http", 80, 0, pod1, pod3)),
		cfg:  func(c *Config) { c.LocalEndpointWeight = 2 },
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=2, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "internal policy Local: cluster IP gets the local backends only",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 0, pod1, pod2, pod3))
			s.InternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.1.1.4:8080 vrf=2 p=1",
		},
	}, {
		name: "internal policy Local without local backends: no mapping",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 0, pod3))
			s.InternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		expect: []string{},
	}, {
		name: "external policy Local: this node's terminating endpoint still serves when it is its only one",
		svc: func() *servicerenderer.ContivService {
			// pod2 (local) is terminating and serving; pod3 (remote) is
			// ready. Cluster frontends use the ready pod3; Local ones the
			// processor's LocalBackends, which keep pod2 (graceful termination).
			term := pod2
			term.Ready, term.Terminating = false, true
			p := port("http", 80, 0, pod3)
			p.LocalBackends = []servicerenderer.Backend{term}
			s := withExt(web(p), "20.20.20.20")
			s.ExternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.1.1:8080 vrf=2 p=1",
			"20.20.20.20:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.4:8080 vrf=2 p=1",
		},
	}, {
		name: "external IPs under Cluster: all backends, full twice-NAT",
		svc:  withExt(web(port("http", 80, 0, pod1, pod3)), "20.20.20.20", "30.30.30.30"),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"20.20.20.20:80/TCP lb twice-nat=on affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"30.30.30.30:80/TCP lb twice-nat=on affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "external policy Local: external IPs get local backends and self-twice-NAT; cluster IP keeps all",
		svc: func() *servicerenderer.ContivService {
			s := withExt(web(port("http", 80, 0, pod1, pod2, pod3)), "20.20.20.20")
			s.ExternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.1.1.4:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"20.20.20.20:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.1.1.4:8080 vrf=2 p=1",
		},
	}, {
		name: "external policy Local without local backends: the external IP to the sink (dropped), no NodePort",
		svc: func() *servicerenderer.ContivService {
			s := withExt(web(port("http", 80, 30080, pod3)), "20.20.20.20")
			s.ExternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.1.1:8080 vrf=2 p=1",
			"20.20.20.20:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.111.255.255:80 vrf=1 p=1",
		},
	}, {
		name: "NodePort under Cluster: on this node's own IPs only, full twice-NAT",
		svc:  web(port("http", 80, 30080, pod1, pod3)),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"192.168.16.10:30080/TCP lb twice-nat=on affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"172.30.1.1:30080/TCP lb twice-nat=on affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "NodePort under Local: local backends, self-twice-NAT",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 30080, pod1, pod2, pod3))
			s.ExternalPolicy = servicerenderer.PolicyLocal
			return s
		}(),
		node: &servicerenderer.LocalNode{Name: "master", IPs: ips(nodeIP)},
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.1.1.4:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
			"192.168.16.10:30080/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.1.1.4:8080 vrf=2 p=1",
		},
	}, {
		name: "health-check NodePort under Local: each own IP to the host-side target, full twice-NAT, no affinity",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 0, pod3))
			s.ExternalPolicy, s.HealthCheckNodePort, s.AffinityTimeout = servicerenderer.PolicyLocal, 32000, 60
			return s
		}(),
		cfg: func(c *Config) { c.HealthCheckTarget = netip.MustParseAddr("172.30.1.2") },
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=60 " + tag + "|a60 -> 0.0.0.0:0 vrf=0 p=0, 10.2.1.1:8080 vrf=2 p=1",
			"192.168.16.10:32000/TCP lb twice-nat=on affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 172.30.1.2:32000 vrf=1 p=1",
			"172.30.1.1:32000/TCP lb twice-nat=on affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 172.30.1.2:32000 vrf=1 p=1",
		},
	}, {
		name: "health-check NodePort without a target: none",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 0, pod3))
			s.ExternalPolicy, s.HealthCheckNodePort = servicerenderer.PolicyLocal, 32000
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "an IPv6 node IP is ignored: NodePorts and health-check NodePorts on the IPv4 ones only",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 30080, pod1, be("fd00:1:1::3", 8080, "local")))
			s.ClusterIPs = append(s.ClusterIPs, netip.MustParseAddr("fd00:96::1"))
			s.ExternalPolicy, s.HealthCheckNodePort = servicerenderer.PolicyLocal, 32000
			return s
		}(),
		cfg:  func(c *Config) { c.HealthCheckTarget = netip.MustParseAddr("172.30.1.2") },
		node: &servicerenderer.LocalNode{Name: "master", IPs: ips(nodeIP, "2001:db8:16::10")},
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.3:8080 vrf=2 p=1",
			"192.168.16.10:30080/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.3:8080 vrf=2 p=1",
			"192.168.16.10:32000/TCP lb twice-nat=on affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 172.30.1.2:32000 vrf=1 p=1",
		},
	}, {
		name: "NodePort without node addresses: none",
		svc:  web(port("http", 80, 30080, pod1, pod3)),
		node: &servicerenderer.LocalNode{Name: "master"},
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "session affinity is the service's timeout",
		svc: func() *servicerenderer.ContivService {
			s := web(port("http", 80, 0, pod1, pod3))
			s.AffinityTimeout = 10800
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=10800 " + tag + "|a10800 -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "one backend: load-balanced with the probability-0 placeholder",
		svc:  web(port("http", 80, 0, pod3)),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		// kube-proxy rejects it; NAT44-ED cannot (records-verdicts): the
		// external IP is dropped at the sink instead of routed on.
		name: "no backends: no mapping but the external IP's drop at the sink",
		svc:  withExt(web(port("http", 80, 30080)), "20.20.20.20"),
		expect: []string{
			"20.20.20.20:80/TCP lb twice-nat=on affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.111.255.255:80 vrf=1 p=1",
		},
	}, {
		name: "IPv6 frontends and backends skipped",
		svc: func() *servicerenderer.ContivService {
			s := withExt(web(port("http", 80, 0, pod1, be("fd00::5", 8080), be("fd00::6", 8080, "local"))), "2001:db8::1", "20.20.20.20")
			s.ClusterIPs = append(s.ClusterIPs, netip.MustParseAddr("fd00:96::1"))
			return s
		}(),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.3:8080 vrf=2 p=1",
			"20.20.20.20:80/TCP lb twice-nat=on affinity=0 " + tag + " -> 0.0.0.0:0 vrf=0 p=0, 10.1.1.3:8080 vrf=2 p=1",
		},
	}, {
		name: "VRFs with overlay: pods in the pod VRF, host-network and own addresses in the main VRF",
		svc: web(port("http", 80, 0, pod1, pod3, be("192.168.16.20", 8080, "host"),
			be(nodeIP, 8080, "local", "host"), be(mgmtIP, 8081, "local"))),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1, " +
				"172.30.1.1:8081 vrf=1 p=1, 192.168.16.10:8080 vrf=1 p=1, 192.168.16.20:8080 vrf=1 p=1",
		},
	}, {
		name: "VRFs without overlay: only this node's pods in the pod VRF",
		svc:  web(port("http", 80, 0, pod1, pod3, be("192.168.16.20", 8080, "host"))),
		cfg:  func(c *Config) { c.Overlay = false },
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=1 p=1, 192.168.16.20:8080 vrf=1 p=1",
		},
	}, {
		name: "ports and protocols: one mapping per port; unsupported protocol and port 0 skipped",
		svc: web(port("http", 80, 0, pod1, pod3), udpPort("dns", 53, be("10.1.1.3", 10053, "local"), be("10.2.1.1", 53)),
			servicerenderer.Port{Name: "sctp", Protocol: 132, Port: 9, Backends: []servicerenderer.Backend{pod1}},
			port("zero", 0, 0, pod1)),
		cfg: func(c *Config) { c.LocalEndpointWeight = 2 },
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=2, 10.2.1.1:8080 vrf=2 p=1",
			"10.96.0.1:53/UDP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:10053 vrf=2 p=2, 10.2.1.1:53 vrf=2 p=1",
		},
	}, {
		name: "a frontend claimed twice by one service: the cluster IP's mapping wins",
		svc:  withExt(web(port("http", 80, 0, pod1, pod3)), "10.96.0.1"),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}, {
		name: "duplicate backends merged",
		svc:  web(port("http", 80, 0, pod1, pod1, pod3)),
		expect: []string{
			"10.96.0.1:80/TCP lb twice-nat=self affinity=0 " + tag + " -> 10.1.1.3:8080 vrf=2 p=1, 10.2.1.1:8080 vrf=2 p=1",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			node := testNode()
			if tc.node != nil {
				node = *tc.node
			}
			got := mappingLines(BuildService(tc.svc, node, cfg))
			if !slices.Equal(got, tc.expect) {
				t.Errorf("got:\n%s\nwant:\n%s", join(got), join(tc.expect))
			}
		})
	}
}

func TestBuildServiceSharesNothingMutableWithInput(t *testing.T) {
	svc := service("default", "web", 0, "10.96.0.1", port("http", 80, 0, be("10.1.1.3", 8080, "local"), be("10.2.1.1", 8080)))
	ms := BuildService(svc, testNode(), testConfig())
	before := mappingLines(ms)
	svc.Ports[0].Backends[0].Port = 9999
	svc.ClusterIPs[0] = netip.MustParseAddr("10.96.0.99")
	if after := mappingLines(ms); !slices.Equal(before, after) {
		t.Errorf("mappings changed with their input:\n%s\n%s", join(before), join(after))
	}
}

func TestServiceTag(t *testing.T) {
	short := ServiceTag("contiv:", servicerenderer.ServiceID{Namespace: "default", Name: "web"})
	if short != "contiv:default/web" {
		t.Errorf("short tag = %q", short)
	}
	long1 := servicerenderer.ServiceID{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 63)}
	long2 := servicerenderer.ServiceID{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 62) + "b"}
	t1, t2 := ServiceTag("contiv:", long1), ServiceTag("contiv:", long2)
	for _, tag := range []string{t1, t2} {
		if len(tag) > MaxTagLen || !strings.HasPrefix(tag, "contiv:nnnn") {
			t.Errorf("long tag %q: %d bytes", tag, len(tag))
		}
	}
	if t1 == t2 {
		t.Errorf("two services share tag %q", t1)
	}
	cfg := testConfig()
	if !cfg.Owned(t1) || !cfg.Owned(short) || !cfg.Owned(IdentityTag(cfg.TagPrefix)) || cfg.Owned("calico:x/y") || cfg.Owned("") {
		t.Error("ownership by tag prefix is wrong")
	}
}

func TestBuildGlobal(t *testing.T) {
	frontend, backend := servicerenderer.RoleFrontend, servicerenderer.RoleBackend
	tests := []struct {
		name   string
		cfg    func(*Config)
		roles  map[string]servicerenderer.InterfaceRole
		expect []string
	}{{
		name: "overlay with source NAT on the main NIC",
		roles: map[string]servicerenderer.InterfaceRole{
			"GbE": frontend, "VXLAN-BVI": frontend | backend, "VPP-Host": frontend | backend,
			"master-tap1": frontend | backend, "master-tap2": frontend,
		},
		expect: []string{
			"global forwarding=on sessions=10000 timeouts=udp:300,tcp-established:7440,tcp-transitory:240,icmp:60",
			"pool 10.1.1.254 vrf=any twice-nat",
			"pool 192.168.16.10 vrf=any",
			"interface GbE output",
			"interface VPP-Host in,out",
			"interface VXLAN-BVI in,out",
			"interface master-tap1 in,out",
			"interface master-tap2 out",
			"identity 192.168.16.10 vrf=1 tag=contiv:snat",
			"identity 192.168.16.10:4789/UDP vrf=1 tag=contiv:snat",
			"identity 192.168.16.10 vrf=2 tag=contiv:snat",
			"route 10.96.0.0/12 vrf=1 drop",
			"route 10.96.0.0/12 vrf=2 drop",
		},
	}, {
		name: "overlay without source NAT, no service CIDR: no route",
		cfg:  func(c *Config) { c.SNAT = SNAT{}; c.ServiceCIDR = netip.Prefix{} },
		roles: map[string]servicerenderer.InterfaceRole{
			"GbE": frontend, "VXLAN-BVI": frontend | backend, "VPP-Host": frontend | backend,
		},
		expect: []string{
			"global forwarding=on sessions=10000 timeouts=udp:300,tcp-established:7440,tcp-transitory:240,icmp:60",
			"pool 10.1.1.254 vrf=any twice-nat",
			"interface GbE out",
			"interface VPP-Host in,out",
			"interface VXLAN-BVI in,out",
		},
	}, {
		name: "no overlay: the main NIC is a backend too; source NAT through another NIC",
		cfg: func(c *Config) {
			c.Overlay = false
			c.SNAT = SNAT{Interface: "GbE2", IP: netip.MustParseAddr("192.168.17.10")}
		},
		roles: map[string]servicerenderer.InterfaceRole{
			"GbE": frontend | backend, "GbE2": frontend, "GbE3": frontend, "VPP-Host": frontend | backend,
		},
		expect: []string{
			"global forwarding=on sessions=10000 timeouts=udp:300,tcp-established:7440,tcp-transitory:240,icmp:60",
			"pool 10.1.1.254 vrf=any twice-nat",
			"pool 192.168.17.10 vrf=any",
			"interface GbE in,out",
			"interface GbE2 output",
			"interface GbE3 out",
			"interface VPP-Host in,out",
			"identity 192.168.17.10 vrf=1 tag=contiv:snat",
			"identity 192.168.17.10:4789/UDP vrf=1 tag=contiv:snat",
			"identity 192.168.17.10 vrf=2 tag=contiv:snat",
			"route 10.96.0.0/12 vrf=1 drop",
			"route 10.96.0.0/12 vrf=2 drop",
		},
	}, {
		name: "main VRF 0 (verdicts): the pod VRF looks the service CIDR up in table 0",
		cfg:  func(c *Config) { c.SNAT = SNAT{}; c.MainVRF = 0 },
		roles: map[string]servicerenderer.InterfaceRole{
			"GbE": frontend, "VPP-Host": frontend | backend,
		},
		expect: []string{
			"global forwarding=on sessions=10000 timeouts=udp:300,tcp-established:7440,tcp-transitory:240,icmp:60",
			"pool 10.1.1.254 vrf=any twice-nat",
			"interface GbE out",
			"interface VPP-Host in,out",
			"route 10.96.0.0/12 vrf=0 drop",
			"route 10.96.0.0/12 vrf=2 lookup table=0",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			st := BuildGlobal(cfg, tc.roles)
			if len(st.Mappings) != 0 {
				t.Errorf("global state has %d mappings", len(st.Mappings))
			}
			if got := st.Lines(); !slices.Equal(got, tc.expect) {
				t.Errorf("got:\n%s\nwant:\n%s", join(got), join(tc.expect))
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := func() error { c := testConfig(); return c.Validate() }(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	tests := []struct {
		field string
		bad   func(*Config)
	}{
		{"podVRF", func(c *Config) { c.PodVRF = c.MainVRF }},
		{"serviceLocalEndpointWeight", func(c *Config) { c.LocalEndpointWeight = 0 }},
		{"natLoopback", func(c *Config) { c.NATLoopback = netip.Addr{} }},
		{"natLoopback", func(c *Config) { c.NATLoopback = netip.MustParseAddr("10.9.9.9") }},
		{"podSubnet", func(c *Config) { c.PodSubnet = netip.Prefix{} }},
		{"snat", func(c *Config) { c.SNAT.IP = netip.Addr{} }},
		{"snat.ip", func(c *Config) { c.SNAT.IP = netip.MustParseAddr("fd00::1") }},
		{"sessionLimit", func(c *Config) { c.SessionLimit = 0 }},
		{"tagPrefix", func(c *Config) { c.TagPrefix = "" }},
		{"tagPrefix", func(c *Config) { c.TagPrefix = "a/b" }},
		{"serviceCIDR", func(c *Config) { c.ServiceCIDR = netip.MustParsePrefix("fd00::/108") }},
		{"externalIPTenantVRF", func(c *Config) { c.ExternalIPTenantVRF = c.PodVRF }},
		{"externalIPTenantVRF", func(c *Config) { c.ExternalIPTenantVRF = AnyVRF }},
	}
	for _, tc := range tests {
		c := testConfig()
		tc.bad(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field+"=") {
			t.Errorf("%s: error %v does not name the field", tc.field, err)
		}
		if _, err := New(Params{Config: c, VPP: newFakeVPP()}); err == nil {
			t.Errorf("%s: New accepted an invalid config", tc.field)
		}
	}
	d := DefaultConfig()
	d.NATLoopback, d.PodSubnet = netip.MustParseAddr("10.1.1.254"), netip.MustParsePrefix("10.1.1.0/24")
	if err := d.Validate(); err != nil {
		t.Errorf("default config with addresses refused: %v", err)
	}
}
