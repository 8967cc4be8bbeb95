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
)

// ClientParams describes how to reach an etcd cluster.
type ClientParams struct {
	Endpoints   []string
	DialTimeout time.Duration
	// TLS files; all empty means plain connections.
	CAFile, CertFile, KeyFile string
	Username, Password        string
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
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   p.Endpoints,
		DialTimeout: dt,
		TLS:         tlsCfg,
		Username:    p.Username,
		Password:    p.Password,
		Context:     ctx,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect %v: %w", p.Endpoints, err)
	}
	return cli, nil
}
