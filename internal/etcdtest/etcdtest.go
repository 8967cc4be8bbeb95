// Package etcdtest starts a real embedded etcd for tests, with short tick
// and election timings on free loopback ports: one member (Start; or
// StartProxied, behind a proxy that cuts its clients off; StartTLS, over
// TLS with client certificates of a test CA, NewTLSFiles), or a
// cluster of several (StartCluster) whose members a test can kill, stop and
// start again.
package etcdtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcd/embedded"
)

// streamDrain is how long a stopping member lets its clients' pending
// calls finish before it cuts them, and with them the open watches, which
// etcd alone would wait its request timeout (5 s) for.
const streamDrain = 200 * time.Millisecond

// Server is an embedded etcd started for one test.
type Server struct {
	t       testing.TB
	dir     string
	clientU string
	peerU   string
	m       *embedded.Member
	proxy   *proxy    // StartProxied's
	tls     *TLSFiles // StartTLS's
}

// Start starts an embedded etcd that is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir()}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// StartTLS starts a server like Start that serves its clients over TLS
// and accepts only those with a client certificate of files' CA. Client
// connects with files' client certificate.
func StartTLS(t testing.TB, files *TLSFiles) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), tls: files}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// StartProxied starts a server like Start, with a proxy in front of it
// whose clients (ProxyClient) the test can cut off while the server runs
// and keeps being written (SetReachable), as a network partition would.
func StartProxied(t testing.TB) *Server {
	t.Helper()
	s := Start(t)
	p, err := newProxy("127.0.0.1:0", strings.TrimPrefix(s.clientU, "http://"))
	if err != nil {
		t.Fatalf("etcdtest: proxy: %v", err)
	}
	p.setUp(true)
	s.proxy = p
	t.Cleanup(p.close)
	return s
}

// ProxyClient returns a new client that reaches the server through its
// proxy (StartProxied), closed when the test ends.
func (s *Server) ProxyClient() *clientv3.Client {
	s.t.Helper()
	return s.client("http://" + s.proxy.ln.Addr().String())
}

// SetReachable lets the proxy's clients reach the server (true), or cuts
// their connections and refuses new ones (false).
func (s *Server) SetReachable(up bool) { s.proxy.setUp(up) }

func (s *Server) start() {
	s.t.Helper()
	// The first start picks the client port below the ephemeral range, as
	// a cluster's are (freePorts): a port the kernel picks (":0") is one
	// an outgoing connection may take while the server is down, and
	// Restart or Wipe could not bind it again ("address already in use",
	// seen under load). Another process may take the picked port before
	// etcd binds it: the first start tries another then. The peer URL
	// stays ":0" at the first start, so that every test server has the
	// same etcd cluster ID, as identically configured clusters do (the
	// agent's ownership tests rely on it).
	first := s.m == nil && s.clientU == ""
	for try := 0; ; try++ {
		if first {
			ports, err := freePorts(1)
			if err != nil {
				s.t.Fatalf("etcdtest: %v", err)
			}
			scheme := "http"
			if s.tls != nil {
				scheme = "https"
			}
			s.clientU = scheme + "://" + loopback(ports[0])
		}
		m, err := embedded.Start(embedded.Params{
			DataDir:   s.dir,
			ClientURL: s.clientU,
			PeerURL:   s.peerU,
			Fast:      true,
			// A test's stop need not wait etcd's 5 s for its clients' watches.
			StreamDrain: streamDrain,
			ClientTLS:   s.serverTLS(),
		})
		if err != nil && first && try < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		if err != nil {
			s.t.Fatalf("etcdtest: %v", err)
		}
		s.m = m
		if s.peerU == "" {
			s.peerU = m.PeerURL()
		}
		return
	}
}

func (s *Server) serverTLS() *transport.TLSInfo {
	if s.tls == nil {
		return nil
	}
	return s.tls.ServerInfo()
}

// Endpoint is the client URL of the server.
func (s *Server) Endpoint() string { return s.clientU }

// Client returns a new client closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	return s.client(s.clientU)
}

func (s *Server) client(endpoint string) *clientv3.Client {
	s.t.Helper()
	p := etcd.ClientParams{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second}
	if s.tls != nil {
		p.CAFile, p.CertFile, p.KeyFile = s.tls.CA, s.tls.ClientCert, s.tls.ClientKey
	}
	cli, err := etcd.NewClient(context.Background(), p)
	if err != nil {
		s.t.Fatalf("etcdtest: %v", err)
	}
	s.t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Stop stops the server; its data stays for Restart.
func (s *Server) Stop() {
	if s.m != nil {
		s.m.Close()
		s.m = nil
	}
}

// Restart stops the server and starts it again on the same addresses and data.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Wipe stops the server, deletes its data and starts an empty one on the same addresses.
func (s *Server) Wipe() {
	s.t.Helper()
	if s.m != nil {
		s.m.Close()
		s.m = nil
	}
	s.dir = s.t.TempDir()
	s.start()
}
