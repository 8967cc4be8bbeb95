package etcdproxy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
)

// TestTLSChain: the large-cluster overlay over TLS (deploy/overlays/
// large-cluster-tls). Members that accept only clients with a certificate
// of the cluster's CA; a proxy that reaches them with such a certificate
// and serves its own clients over TLS, asking them for one too; an agent
// with the external-etcd overlay's three files (CONTIV_ETCD_CA_FILE,
// _CERT_FILE, _KEY_FILE) lists and watches through it and claims its node
// ID in a transaction on a lease. A client without a certificate, or one
// that trusts another CA, gets nothing, from the proxy or a member.
func TestTLSChain(t *testing.T) {
	files := etcdtest.NewTLSFiles(t)
	srv := etcdtest.StartTLS(t, files)
	direct := srv.Client() // the reflector's: the members, with the client certificate
	put(t, direct, ns("a", "1"))
	if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
		t.Fatal(err)
	}
	p, err := StartTLS(context.Background(), srv.Client(), "127.0.0.1:0", files.ServerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(p.Close) })
	if got := p.Endpoint(); !strings.HasPrefix(got, "https://") {
		t.Fatalf("proxy endpoint %s: want https", got)
	}

	agentParams := etcd.ClientParams{Endpoints: []string{p.Endpoint()}, DialTimeout: 5 * time.Second,
		CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}
	agent := tlsClient(t, agentParams)
	rec := newRecorder()
	runController(t, agent, rec)
	eventually(t, "v1 listed through the TLS proxy", func() bool { return rec.holds(ns("a", "1")) })
	put(t, direct, ns("a", "2"))
	eventually(t, "v2 watched through the TLS proxy", func() bool { return rec.holds(ns("a", "2")) })

	id, err := noderegistry.Claim(ctxT(t), noderegistry.Params{Client: agent, Name: nodeName(0), MaxID: 8})
	if err != nil || id == 0 {
		t.Fatalf("node ID claimed through the TLS proxy: %d, %v", id, err)
	}

	plain := func(u string) string { return "http" + strings.TrimPrefix(u, "https") }
	for _, c := range []struct {
		name, endpoint string
		files          etcd.ClientParams
	}{
		{"proxy, no client certificate", p.Endpoint(), etcd.ClientParams{CAFile: files.CA}},
		{"proxy, another CA trusted", p.Endpoint(), etcd.ClientParams{CAFile: files.OtherCA, CertFile: files.ClientCert, KeyFile: files.ClientKey}},
		{"member, no client certificate", srv.Endpoint(), etcd.ClientParams{CAFile: files.CA}},
		{"member, plain connection to TLS", plain(srv.Endpoint()), etcd.ClientParams{}},
	} {
		name, cp := c.name, c.files
		cp.Endpoints, cp.DialTimeout = []string{c.endpoint}, time.Second
		cli := tlsClient(t, cp)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Get(ctx, "/contiv/")
		cancel()
		if err == nil {
			t.Errorf("%s: read etcd; want refused", name)
		}
	}
}

// tlsClient is a client made as the agent makes it, closed when the test
// ends; NewClient does not dial, so a refused handshake shows on the
// first request.
func tlsClient(t *testing.T, p etcd.ClientParams) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
