package nodepipeline

import (
	"net/netip"
	"strings"
	"testing"

	"contiv.dev/vpp/contivconf"
)

// TestChooseSNAT: natExternalTraffic configures source NAT only with a
// gateway in a NIC's subnet (never on a nooverlay node's main NIC), and
// says why when it configures none.
func TestChooseSNAT(t *testing.T) {
	nodeIP := netip.MustParsePrefix("192.168.16.1/24")
	other := contivconf.InterfaceConfig{Name: "eth1", IPCIDR: netip.MustParsePrefix("10.20.0.5/24")}
	for _, c := range []struct {
		name     string
		nat      bool
		gateway  string
		overlay  bool
		wantIf   string
		wantWhy  string
		otherNIC bool
	}{
		{name: "off", gateway: "192.168.16.254", overlay: true},
		{name: "no gateway", nat: true, overlay: true, wantWhy: "no default gateway"},
		{name: "main NIC", nat: true, gateway: "192.168.16.254", overlay: true, wantIf: "GbE"},
		{name: "nooverlay main NIC", nat: true, gateway: "192.168.16.254", wantWhy: "nooverlay"},
		{name: "other NIC", nat: true, gateway: "10.20.0.1", otherNIC: true, wantIf: "eth1"},
		{name: "gateway nowhere", nat: true, gateway: "172.16.0.1", overlay: true, wantWhy: "no interface's subnet holds the gateway 172.16.0.1"},
	} {
		nc := contivconf.NodeConfig{NATExternalTraffic: c.nat}
		if c.gateway != "" {
			nc.Gateway = netip.MustParseAddr(c.gateway)
		}
		if c.otherNIC {
			nc.OtherInterfaces = []contivconf.InterfaceConfig{other}
		}
		s, why := ChooseSNAT(nc, nodeIP, "GbE", c.overlay)
		if s.Interface != c.wantIf || (c.wantWhy == "") != (why == "") || !strings.Contains(why, c.wantWhy) {
			t.Errorf("%s: SNAT on %q, why %q; want %q, why containing %q", c.name, s.Interface, why, c.wantIf, c.wantWhy)
		}
	}
}
