package etcdproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// keepAliveMinTime is the shortest interval between a client's keep-alive
// pings the proxy accepts, as etcd's own server: the agents ping every 10 s
// (internal/etcd.KeepAliveTime).
const keepAliveMinTime = 5 * time.Second

// Proxy is one etcd gRPC proxy serving on a listener.
type Proxy struct {
	ln     net.Listener
	srv    *grpc.Server
	cancel context.CancelFunc
	// done are closed when the watch and lease proxies have stopped.
	done   []<-chan struct{}
	served chan struct{}
	scheme string // of Endpoint
}

// Start serves a proxy on addr (host:port; port 0 picks a free one) in
// front of cli, a client of the members the caller keeps and closes after
// the proxy. The proxy stops with Close or when ctx ends.
func Start(ctx context.Context, cli *clientv3.Client, addr string) (*Proxy, error) {
	return start(ctx, cli, addr, nil)
}

// StartTLS is Start serving its clients over TLS with cfg, as `etcd
// grpc-proxy start --cert-file --key-file --trusted-ca-file` does (with a
// client CA in cfg, every client must show a certificate it signed). The
// proxy reaches the members with cli, TLS or not.
func StartTLS(ctx context.Context, cli *clientv3.Client, addr string, cfg *tls.Config) (*Proxy, error) {
	if cfg == nil {
		return nil, errors.New("etcd proxy: no TLS configuration")
	}
	return start(ctx, cli, addr, cfg)
}

func start(ctx context.Context, cli *clientv3.Client, addr string, tlsCfg *tls.Config) (*Proxy, error) {
	if cli == nil {
		return nil, errors.New("etcd proxy: no client of the members")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("etcd proxy: listen on %s: %w", addr, err)
	}
	return serve(ctx, cli, ln, tlsCfg), nil
}

func serve(ctx context.Context, cli *clientv3.Client, ln net.Listener, tlsCfg *tls.Config) *Proxy {
	pctx, cancel := context.WithCancel(ctx)
	lg := zap.NewNop()
	kv, _ := grpcproxy.NewKvProxy(cli)
	watch, watchDone := grpcproxy.NewWatchProxy(pctx, lg, cli)
	lease, leaseDone := grpcproxy.NewLeaseProxy(pctx, cli)
	// No advertised address: member listings are etcd's own.
	cluster, _ := grpcproxy.NewClusterProxy(lg, cli, "", "")
	opts := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(math.MaxUint32),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepAliveMinTime}),
	}
	scheme := "http"
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
		scheme = "https"
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterKVServer(srv, kv)
	pb.RegisterWatchServer(srv, watch)
	pb.RegisterLeaseServer(srv, lease)
	pb.RegisterClusterServer(srv, cluster)
	pb.RegisterMaintenanceServer(srv, grpcproxy.NewMaintenanceProxy(cli))
	p := &Proxy{ln: ln, srv: srv, cancel: cancel, done: []<-chan struct{}{watchDone, leaseDone}, served: make(chan struct{}), scheme: scheme}
	go func() {
		defer close(p.served)
		_ = srv.Serve(ln) // ends with Stop
	}()
	go func() {
		<-pctx.Done()
		srv.Stop()
	}()
	return p
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Endpoint is the proxy's client URL.
func (p *Proxy) Endpoint() string { return p.scheme + "://" + p.Addr() }

// Close stops the proxy at once, cutting its clients' connections first,
// as a proxy process that ends (`etcd grpc-proxy` handles no signal: it
// exits), and waits until it has stopped. Cancelling the watch proxy
// first would end its clients' watches with a cancellation instead,
// which a client takes for the end of its watch, not for a lost
// connection to retry.
func (p *Proxy) Close() {
	p.srv.Stop()
	p.cancel()
	<-p.served
	for _, d := range p.done {
		<-d
	}
}
