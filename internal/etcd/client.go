package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// ClientParams describes how to reach an etcd cluster.
type ClientParams struct {
	Endpoints   []string
	DialTimeout time.Duration
	// TLS files; all empty means plain connections.
	CAFile, CertFile, KeyFile string
	Username, Password        string
}

// Reconnection and keepalive of every client (agent, reflector, contivctl).
// gRPC's default reconnection backoff grows to 120s: after an etcd outage a
// client could wait that long before it tries again. Here it grows from
// 100ms to at most ReconnectMaxDelay (jitter included), and keepalive pings
// find a dead connection (a peer gone without closing it) within
// KeepAliveTime + KeepAliveTimeout.
const (
	ReconnectMaxDelay = 2 * time.Second
	KeepAliveTime     = 10 * time.Second // etcd refuses pings more often than every 5s
	KeepAliveTimeout  = 5 * time.Second
)

// reconnect is the gRPC connection backoff: 100ms growing ×1.6 with ±20%
// jitter, capped so that the jittered delay stays within ReconnectMaxDelay.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   ReconnectMaxDelay * 5 / 6, // ×1.2 jitter: ReconnectMaxDelay
	},
	MinConnectTimeout: 5 * time.Second,
}

// Flow-control windows of every client's connection, fixed. gRPC's default
// (64 KiB, grown by estimating the bandwidth-delay product) pings the
// server after each DATA frame that starts a new estimate: a watch event
// arriving alone, as nearly every change does, costs the client a PING
// written and its ack read, and etcd the reverse, for each watching agent.
// Windows set explicitly turn the estimate off. 4 MiB holds two first
// pages of a listing (1000 values of ~2 KB) in flight; its later pages (up
// to 4000 values) take a window update or two each, sent as the client
// reads: a loopback or LAN round trip.
const (
	StreamWindow = 4 << 20
	ConnWindow   = 2 * StreamWindow
)

// config is the client configuration NewClient dials with.
func config(ctx context.Context, endpoints []string, dial time.Duration, tlsCfg *tls.Config, user, password string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          dial,
		DialKeepAliveTime:    KeepAliveTime,
		DialKeepAliveTimeout: KeepAliveTimeout,
		DialOptions: []grpc.DialOption{
			grpc.WithConnectParams(reconnect),
			grpc.WithInitialWindowSize(StreamWindow),
			grpc.WithInitialConnWindowSize(ConnWindow),
		},
		TLS:      tlsCfg,
		Username: user,
		Password: password,
		Context:  ctx,
		Logger:   zap.NewNop(),
	}
}

// NewClient dials etcd and checks that it answers within the dial timeout.
func NewClient(ctx context.Context, p ClientParams) (*clientv3.Client, error) {
	if len(p.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	dt := p.DialTimeout
	if dt == 0 {
		dt = 5 * time.Second
	}
	var tlsCfg *tls.Config
	if p.CAFile != "" || p.CertFile != "" || p.KeyFile != "" {
		info := transport.TLSInfo{TrustedCAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile}
		c, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd: TLS: %w", err)
		}
		tlsCfg = c
	}
	cli, err := clientv3.New(config(ctx, p.Endpoints, dt, tlsCfg, p.Username, p.Password))
	if err != nil {
		return nil, fmt.Errorf("etcd: connect %v: %w", p.Endpoints, err)
	}
	return cli, nil
}
