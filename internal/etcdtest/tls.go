package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLSFiles are the PEM files of a test's certificate authority and of the
// certificates it signed, as an operator's Secret holds them: ca.crt, and a
// key pair each for a server on 127.0.0.1 and for a client.
type TLSFiles struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	OtherCA               string // a CA that signed none of them
	dir                   string
}

// NewTLSFiles writes a fresh CA, a server certificate for 127.0.0.1 and a
// client certificate, all signed by it, and a second unrelated CA, into a
// temporary directory of the test.
func NewTLSFiles(t testing.TB) *TLSFiles {
	t.Helper()
	f := &TLSFiles{dir: t.TempDir()}
	caKey, caCert := f.authority(t, "contiv test CA", "ca")
	f.CA = filepath.Join(f.dir, "ca.crt")
	f.ServerCert, f.ServerKey = f.leaf(t, "server", caKey, caCert, x509.ExtKeyUsageServerAuth)
	f.ClientCert, f.ClientKey = f.leaf(t, "client", caKey, caCert, x509.ExtKeyUsageClientAuth)
	f.authority(t, "unrelated CA", "other")
	f.OtherCA = filepath.Join(f.dir, "other.crt")
	return f
}

// ServerInfo is the server side: its key pair, and the CA its clients'
// certificates must be signed by.
func (f *TLSFiles) ServerInfo() *transport.TLSInfo {
	return &transport.TLSInfo{CertFile: f.ServerCert, KeyFile: f.ServerKey, TrustedCAFile: f.CA, ClientCertAuth: true}
}

// ServerConfig is ServerInfo as a tls.Config.
func (f *TLSFiles) ServerConfig(t testing.TB) *tls.Config {
	t.Helper()
	c, err := f.ServerInfo().ServerConfig()
	if err != nil {
		t.Fatalf("etcdtest: server TLS: %v", err)
	}
	return c
}

func (f *TLSFiles) authority(t testing.TB, cn, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("etcdtest: CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("etcdtest: CA: %v", err)
	}
	f.write(t, name+".crt", "CERTIFICATE", der)
	return key, cert
}

func (f *TLSFiles) leaf(t testing.TB, name string, caKey *ecdsa.PrivateKey, ca *x509.Certificate, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "contiv-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("etcdtest: %s certificate: %v", name, err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("etcdtest: %s key: %v", name, err)
	}
	return f.write(t, name+".crt", "CERTIFICATE", der), f.write(t, name+".key", "EC PRIVATE KEY", kb)
}

func (f *TLSFiles) write(t testing.TB, name, kind string, der []byte) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("etcdtest: key: %v", err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("etcdtest: serial: %v", err)
	}
	return n
}
