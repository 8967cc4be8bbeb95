package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// EmbeddedParams configures an embedded single-member etcd.
type EmbeddedParams struct {
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
}

// Embedded is a running embedded etcd member.
type Embedded struct {
	e         *embed.Etcd
	clientURL string
}

// StartEmbedded starts a single-member etcd and waits until it serves.
func StartEmbedded(p EmbeddedParams) (*Embedded, error) {
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
	clientURL := p.ClientURL
	if clientURL == "" {
		clientURL = "http://127.0.0.1:0"
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
	return &Embedded{e: e, clientURL: e.Clients[0].Addr().String()}, nil
}

// Endpoint is the client address of the member, host:port.
func (m *Embedded) Endpoint() string { return m.clientURL }

// Close stops the member and waits for it to shut down.
func (m *Embedded) Close() {
	m.e.Close()
	<-m.e.Server.StopNotify()
}

// PeerURL is the member's peer URL.
func (m *Embedded) PeerURL() string { return "http://" + m.e.Peers[0].Addr().String() }
