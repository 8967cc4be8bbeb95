package servicerenderer

import (
	"net/netip"
	"testing"
	"time"
)

func sample() *ContivService {
	b := Backend{IP: IPOf(netip.MustParseAddr("10.1.1.3")), Port: 8080, Local: true, Ready: true, Serving: true}
	r := Backend{IP: IPOf(netip.MustParseAddr("10.1.2.3")), Port: 8080, Ready: true, Serving: true}
	return &ContivService{
		ID:          ServiceID{Namespace: "shop", Name: "web"},
		ClusterIPs:  []netip.Addr{netip.MustParseAddr("10.96.0.10")},
		ExternalIPs: []netip.Addr{netip.MustParseAddr("203.0.113.1")},
		Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, NodePort: 30080,
			Backends: []Backend{b, r}, LocalBackends: []Backend{b}}},
		AffinityTimeout: 10800,
		Created:         time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// TestEqualSeesEveryField changes one field at a time: each change must make
// the services differ, or the processor would drop a real update.
func TestEqualSeesEveryField(t *testing.T) {
	if !sample().Equal(sample()) {
		t.Fatal("a service differs from its copy")
	}
	var nilSvc *ContivService
	if !nilSvc.Equal(nil) || nilSvc.Equal(sample()) || sample().Equal(nil) {
		t.Error("nil handling")
	}
	// The same instant in another zone is the same creation time.
	z := sample()
	z.Created = z.Created.In(time.FixedZone("x", 3600))
	if !sample().Equal(z) {
		t.Error("creation time compared by zone, not instant")
	}
	for name, mutate := range map[string]func(*ContivService){
		"namespace":       func(s *ContivService) { s.ID.Namespace = "other" },
		"cluster IP":      func(s *ContivService) { s.ClusterIPs[0] = netip.MustParseAddr("10.96.0.11") },
		"external IPs":    func(s *ContivService) { s.ExternalIPs = nil },
		"external policy": func(s *ContivService) { s.ExternalPolicy = PolicyLocal },
		"internal policy": func(s *ContivService) { s.InternalPolicy = PolicyLocal },
		"affinity":        func(s *ContivService) { s.AffinityTimeout = 0 },
		"created":         func(s *ContivService) { s.Created = s.Created.Add(time.Second) },
		"health check":    func(s *ContivService) { s.HealthCheckNodePort = 32000 },
		"source ranges":   func(s *ContivService) { s.SourceRanges = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")} },
		"port name":       func(s *ContivService) { s.Ports[0].Name = "web" },
		"protocol":        func(s *ContivService) { s.Ports[0].Protocol = UDP },
		"port":            func(s *ContivService) { s.Ports[0].Port = 81 },
		"node port":       func(s *ContivService) { s.Ports[0].NodePort = 0 },
		"backend port":    func(s *ContivService) { s.Ports[0].Backends[1].Port = 9090 },
		"backend ready":   func(s *ContivService) { s.Ports[0].Backends[1].Ready = false },
		"local backends":  func(s *ContivService) { s.Ports[0].LocalBackends = nil },
		"ports":           func(s *ContivService) { s.Ports = append(s.Ports, Port{Name: "dns", Protocol: UDP, Port: 53}) },
	} {
		s := sample()
		mutate(s)
		if sample().Equal(s) || s.Equal(sample()) {
			t.Errorf("%s: change not seen", name)
		}
	}
}

func TestBackendsFor(t *testing.T) {
	p := sample().Ports[0]
	if got := p.BackendsFor(PolicyCluster); len(got) != 2 {
		t.Errorf("Cluster: %v", got)
	}
	if got := p.BackendsFor(PolicyLocal); len(got) != 1 || !got[0].Local {
		t.Errorf("Local: %v", got)
	}
}

func TestNames(t *testing.T) {
	for got, want := range map[string]string{
		TCP.String(): "TCP", UDP.String(): "UDP", Protocol(132).String(): "unknown",
		PolicyCluster.String(): "Cluster", PolicyLocal.String(): "Local",
		(ServiceID{Namespace: "a", Name: "b"}).String(): "a/b",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
