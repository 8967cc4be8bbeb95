package nat44

import (
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"contiv.dev/vpp/servicerenderer"
)

// The fixture of the reference scenarios: main VRF 1, pod VRF 2, this
// node's pod subnet 10.1.1.0/24 with NAT loopback 10.1.1.254, the main NIC
// GbE with 192.168.16.10 (source NAT of external traffic), management IP
// 172.30.1.1, service CIDR 10.96.0.0/12, external IPs' tenant VRF 77.
const (
	tagPrefix = "contiv:"
	nodeIP    = "192.168.16.10"
	mgmtIP    = "172.30.1.1"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func testConfig() Config {
	return Config{
		MainVRF:             1,
		PodVRF:              2,
		Overlay:             true,
		LocalEndpointWeight: 1,
		NATLoopback:         netip.MustParseAddr("10.1.1.254"),
		PodSubnet:           netip.MustParsePrefix("10.1.1.0/24"),
		SNAT:                SNAT{Interface: "GbE", IP: netip.MustParseAddr(nodeIP)},
		SessionLimit:        10000,
		Timeouts:            Timeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60},
		TagPrefix:           tagPrefix,
		ServiceCIDR:         netip.MustParsePrefix("10.96.0.0/12"),
		ExternalIPTenantVRF: 77,
	}
}

func testNode() servicerenderer.LocalNode {
	return servicerenderer.LocalNode{Name: "master", ID: 1, IPs: ips(nodeIP, mgmtIP)}
}

func ips(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, x := range s {
		out[i] = netip.MustParseAddr(x)
	}
	return out
}

// be is a backend; flags: "local", "host".
func be(ip string, port uint16, flags ...string) servicerenderer.Backend {
	return servicerenderer.Backend{
		IP: servicerenderer.IPOf(netip.MustParseAddr(ip)), Port: port, Ready: true, Serving: true,
		Local: slices.Contains(flags, "local"), HostNetwork: slices.Contains(flags, "host"),
	}
}

func sortBackends(bs []servicerenderer.Backend) []servicerenderer.Backend {
	slices.SortFunc(bs, func(a, b servicerenderer.Backend) int {
		if c := a.IP.Compare(&b.IP); c != 0 {
			return c
		}
		return int(a.Port) - int(b.Port)
	})
	return bs
}

// port is a TCP port with backends (all ready: the local ones serve Local
// policies, as the processor derives them).
func port(name string, p, nodePort uint16, backends ...servicerenderer.Backend) servicerenderer.Port {
	bs := sortBackends(backends)
	return servicerenderer.Port{Name: name, Protocol: servicerenderer.TCP, Port: p, NodePort: nodePort, Backends: bs, LocalBackends: localOnly(bs)}
}

// localOnly is the local backends of bs.
func localOnly(bs []servicerenderer.Backend) []servicerenderer.Backend {
	var out []servicerenderer.Backend
	for _, b := range bs {
		if b.Local {
			out = append(out, b)
		}
	}
	return out
}

func udpPort(name string, p uint16, backends ...servicerenderer.Backend) servicerenderer.Port {
	pt := port(name, p, 0, backends...)
	pt.Protocol = servicerenderer.UDP
	return pt
}

// service is a ClusterIP service created at t0 + age seconds.
func service(ns, name string, age int, clusterIP string, ports ...servicerenderer.Port) *servicerenderer.ContivService {
	svc := &servicerenderer.ContivService{
		ID:      servicerenderer.ServiceID{Namespace: ns, Name: name},
		Ports:   ports,
		Created: t0.Add(time.Duration(age) * time.Second),
	}
	if clusterIP != "" {
		svc.ClusterIPs = ips(clusterIP)
	}
	return svc
}

func mappingLines(ms []*Mapping) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tb is what the helpers need of testing.TB and rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// newTestRenderer is a renderer over fake.
func newTestRenderer(t tb, cfg Config, fake VPP) *Renderer {
	t.Helper()
	r, err := New(Params{Config: cfg, VPP: fake, Log: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func join(lines []string) string { return strings.Join(lines, "\n") }
