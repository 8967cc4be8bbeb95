package cnat

import (
	"io"
	"log/slog"
	"net/netip"
	"time"

	sr "contiv.dev/vpp/servicerenderer"
)

// The fixture (the corpus' node, cnat_node.jsonl): node IP 192.168.16.1 on
// the uplink host-vcup (node network 192.168.16.0/24), pod CIDR
// 10.1.0.0/16, service CIDR 10.96.0.0/12, pods on host-vcw1..3.
var (
	nodeIP = netip.MustParseAddr("192.168.16.1")
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	quiet  = slog.New(slog.NewTextHandler(io.Discard, nil))
)

func testConfig() Config {
	c := DefaultConfig()
	c.NodeIP4 = nodeIP
	c.PodCIDRs = []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
	c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	c.NodeNetworks = []netip.Prefix{netip.MustParsePrefix("192.168.16.0/24")}
	c.HostInterfaces = []string{"host-vcup"}
	c.PodVRF = 1
	c.LocalEndpointWeight = 2
	return c
}

func testNode() sr.LocalNode {
	return sr.LocalNode{Name: "n1", ID: 1, IPs: []netip.Addr{nodeIP}}
}

func testInterfaces() map[string]sr.InterfaceRole {
	return map[string]sr.InterfaceRole{
		"host-vcup": sr.RoleFrontend | sr.RoleBackend,
		"host-vcw1": sr.RoleFrontend | sr.RoleBackend,
		"host-vcw2": sr.RoleFrontend | sr.RoleBackend,
		"host-vcw3": sr.RoleFrontend,
	}
}

var allIfaces = []string{"host-vcup", "host-vcw1", "host-vcw2", "host-vcw3", "host-vccl"}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func be(ip string, port uint16, local bool) sr.Backend {
	return sr.Backend{IP: sr.IPOf(addr(ip)), Port: port, Local: local, Ready: true, Serving: true}
}

// web is a service with cluster IP 10.96.0.10:80 → :8080 on two local
// and one remote backend, NodePort 30080, external IP 192.168.16.100.
func web() *sr.ContivService {
	return &sr.ContivService{
		ID:          sr.ServiceID{Namespace: "default", Name: "web"},
		ClusterIPs:  []netip.Addr{addr("10.96.0.10")},
		ExternalIPs: []netip.Addr{addr("192.168.16.100")},
		Ports: []sr.Port{{
			Name: "http", Protocol: sr.TCP, Port: 80, NodePort: 30080,
			Backends:      []sr.Backend{be("10.1.1.11", 8080, true), be("10.1.1.12", 8080, true), be("10.1.2.11", 8080, false)},
			LocalBackends: []sr.Backend{be("10.1.1.11", 8080, true), be("10.1.1.12", 8080, true)},
		}},
		Created: t0,
	}
}

func path(ip string, port uint16) Path { return Path{IP: addr(ip), Port: port} }

func key(ip string, port uint16, p sr.Protocol) Key { return Key{IP: addr(ip), Port: port, Proto: p} }
