package agent

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestAgentIPv6NodePort runs the whole chain: IPAM publishes the main
// interface's ipv6CIDR in this node's NodeSync record (IPv4 first), the
// record comes back through etcd to the service processor, and the cnat
// renderer translates the dual-stack NodePort on the IPv6 node IP to the
// IPv6 backend. The NAT44 views answer 409 under cnat.
func TestAgentIPv6NodePort(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cluster, err := os.ReadFile("../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dual, err := os.ReadFile("testdata/dual-stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	load := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(load, append(append(cluster, "\n---\n"...), dual...), 0o600); err != nil {
		t.Fatal(err)
	}
	pfx := netip.MustParsePrefix
	cfg := contivconf.Defaults()
	cfg.Renderer = contivconf.RendererCNAT
	cfg.IPAM.PodSubnetCIDRv6, cfg.IPAM.ServiceCIDRv6 = pfx("fd00:1::/48"), pfx("fd00:96::/108")
	main := contivconf.InterfaceConfig{Name: simulatedMainNIC, IPv6CIDR: pfx("2001:db8:16::1/64")}
	cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-1", MainInterface: &main}}
	vpp := sim.New(sim.Options{})
	r := start(t, testConfigFrom(t, cfg, srv.Endpoint(), dir), vpp, load)

	waitFor(t, "both VPP IPs in this node's record", func() bool {
		rec, ok := r.a.nodes.ThisNode()
		return ok && slices.Equal(rec.VppIPs, []string{"192.168.16.1/24", "2001:db8:16::1/64"})
	})
	np := sim.Packet{Src: netip.MustParseAddr("2001:db8:99::1"), Dst: netip.MustParseAddr("2001:db8:16::1"), Proto: sim.TCP, DstPort: 31090, Ingress: simulatedMainNIC}
	waitFor(t, "the NodePort on the IPv6 node IP", func() bool { return vpp.CnatTrace(np).Verdict == sim.Translated })
	if res := vpp.CnatTrace(np); len(res.Backends) != 1 || res.Backends[0].Backend != netip.MustParseAddrPort("[fd00:1:1::20]:8080") {
		t.Errorf("IPv6 NodePort: %+v", res)
	}
	// The IPv4-only shop/frontend has its NodePort on the IPv4 node IP
	// only.
	np4 := sim.Packet{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.168.16.1"), Proto: sim.TCP, DstPort: 30080, Ingress: simulatedMainNIC}
	np.DstPort = 30080
	if v4, v6 := vpp.CnatTrace(np4), vpp.CnatTrace(np); v4.Verdict != sim.Translated || v6.Verdict != sim.NotTranslated {
		t.Errorf("IPv4-only NodePort: on the IPv4 node IP %+v, on the IPv6 one %+v", v4, v6)
	}

	// The metrics name cnat's objects, not NAT44's.
	rec := httptest.NewRecorder()
	r.a.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	applied := fmt.Sprintf(`contiv_cnat_translations{state="applied"} %d`, len(vpp.CnatTranslations()))
	for _, want := range []string{applied, "contiv_cnat_failures 0", "contiv_cnat_conflicts 0", "contiv_nat44_sessions_cut_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "contiv_nat44_mappings") {
		t.Error("/metrics counts cnat translations as NAT44 mappings")
	}

	// The NAT44 views hold nothing under cnat: a JSON error naming the
	// renderer, not a crash.
	for _, path := range []string{"/v1/nat44", "/v1/nat44/mappings"} {
		rec := httptest.NewRecorder()
		r.a.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"error":"no NAT44 state: the agent runs renderer cnat (see /v1/cnat)"`) {
			t.Errorf("GET %s under cnat = %d %s", path, rec.Code, rec.Body)
		}
	}
}
