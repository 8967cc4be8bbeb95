package agent

import (
	"strings"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
)

// TestNoSourceNATSaidAtStart: natExternalTraffic without a gateway (the
// defaults) configures no source NAT, and the agent says so at start.
func TestNoSourceNATSaidAtStart(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), t.TempDir())
	if !cfg.NAT44.NATExternalTraffic || cfg.IPAM.DefaultGateway.IsValid() {
		t.Fatal("the defaults changed: natExternalTraffic without a gateway expected")
	}
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	if logs := h.logs.String(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "NO SOURCE NAT is configured") || !strings.Contains(logs, "no default gateway") {
		t.Errorf("no warning about the missing source NAT:\n%s", logs)
	}
	if s := h.vpp.Snapshot(); len(s.Pool) != 1 {
		t.Errorf("NAT pool %v: want the NAT loopback only (no source NAT)", s.Pool)
	}
}
