package embedded

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"
)

// Params configures an embedded single-member etcd.
type Params struct {
	// DataDir holds etcd's data; required.
	DataDir string
	// ClientURL is where the member listens for clients, e.g.
	// "http://127.0.0.1:2379". Empty means a free loopback port.
	ClientURL string
	// PeerURL is the member's peer listener. Empty means a free loopback port.
	PeerURL string
	// Fast selects short heartbeat and election timings (tests).
	Fast bool
	// StartTimeout bounds how long to wait for the member to be ready.
	StartTimeout time.Duration
	// StreamDrain, when positive, bounds how long Close lets the clients'
	// pending calls finish before it cuts them. Zero keeps etcd's own
	// bound, its request timeout (about 5 s), which an open watch or lease
	// keep-alive stream always uses up: tests, which stop etcd often, set
	// it short.
	StreamDrain time.Duration
	// ClientTLS, when set, serves the clients over TLS (ClientURL's scheme
	// is then https); with its TrustedCAFile the member asks every client
	// for a certificate that CA signed.
	ClientTLS *transport.TLSInfo
}

// Member is a running embedded etcd member.
type Member struct {
	e         *embed.Etcd
	clientURL string
	scheme    string // of the client URL
	drain     time.Duration

	mu   sync.Mutex
	grpc []*grpc.Server // the client listeners' servers (StreamDrain)
}

// Start starts a single-member etcd and waits until it serves.
func Start(p Params) (*Member, error) {
	if p.DataDir == "" {
		return nil, errors.New("embedded etcd: data directory is required")
	}
	if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "contiv"
	cfg.Dir = p.DataDir
	// Quiet: etcd reports its failures to its clients; its own error lines
	// are mostly noise at shutdown.
	cfg.LogLevel = "fatal"
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	if p.Fast {
		cfg.TickMs = 10
		cfg.ElectionMs = 50
	}
	scheme := "http"
	if p.ClientTLS != nil {
		scheme = "https"
		cfg.ClientTLSInfo = *p.ClientTLS
		cfg.ClientTLSInfo.ClientCertAuth = p.ClientTLS.TrustedCAFile != ""
	}
	clientURL := p.ClientURL
	if clientURL == "" {
		clientURL = scheme + "://127.0.0.1:0"
	}
	peerURL := p.PeerURL
	if peerURL == "" {
		peerURL = "http://127.0.0.1:0"
	}
	cu, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client URL %q: %w", clientURL, err)
	}
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer URL %q: %w", peerURL, err)
	}
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	m := &Member{drain: p.StreamDrain, scheme: scheme}
	if m.drain > 0 {
		cfg.ServiceRegister = func(s *grpc.Server) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.grpc = append(m.grpc, s)
		}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: start: %w", err)
	}
	timeout := p.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd: not ready after %s", timeout)
	}
	m.e, m.clientURL = e, e.Clients[0].Addr().String()
	return m, nil
}

// Endpoint is the client address of the member, host:port.
func (m *Member) Endpoint() string { return m.clientURL }

// ClientURL is the member's client URL (https with ClientTLS).
func (m *Member) ClientURL() string { return m.scheme + "://" + m.clientURL }

// Close stops the member and waits for it to shut down. With StreamDrain,
// it first stops serving clients itself, cutting what is still open after
// StreamDrain.
func (m *Member) Close() {
	m.mu.Lock()
	servers := m.grpc
	m.mu.Unlock()
	StopGRPC(servers, m.drain)
	m.CloseGracefully()
}

// CloseGracefully stops the member with etcd's own shutdown, whatever
// StreamDrain says: open watches hold it up to etcd's request timeout.
func (m *Member) CloseGracefully() {
	m.e.Close()
	<-m.e.Server.StopNotify()
}

// PeerURL is the member's peer URL.
func (m *Member) PeerURL() string { return "http://" + m.e.Peers[0].Addr().String() }

// StopGRPC stops the gRPC servers: gracefully, and after drain it cuts the
// calls still open (an open watch never ends by itself).
func StopGRPC(servers []*grpc.Server, drain time.Duration) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.GracefulStop)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		for _, s := range servers {
			s.Stop()
		}
		<-done
	}
}
