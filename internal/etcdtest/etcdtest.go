// Package etcdtest starts a real embedded etcd for tests, with short tick
// and election timings on free loopback ports: one member (Start), or a
// cluster of several (StartCluster) whose members a test can kill, stop and
// start again.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/plugins/etcd"
)

// Server is an embedded etcd started for one test.
type Server struct {
	t       testing.TB
	dir     string
	clientU string
	peerU   string
	m       *etcd.Embedded
}

// Start starts an embedded etcd that is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir()}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	m, err := etcd.StartEmbedded(etcd.EmbeddedParams{
		DataDir:   s.dir,
		ClientURL: s.clientU,
		PeerURL:   s.peerU,
		Fast:      true,
	})
	if err != nil {
		s.t.Fatalf("etcdtest: %v", err)
	}
	s.m = m
	s.clientU = "http://" + m.Endpoint()
	if s.peerU == "" {
		s.peerU = m.PeerURL()
	}
}

// Endpoint is the client URL of the server.
func (s *Server) Endpoint() string { return s.clientU }

// Client returns a new client closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{
		Endpoints: []string{s.clientU}, DialTimeout: 5 * time.Second,
	})
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
	s.Stop()
	s.dir = s.t.TempDir()
	s.start()
}
