package deploy

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/contivconf"
)

// The sample node configuration of examples/vpp agrees with the agent's
// defaults: node 1's address plan, the interface names the agent expects,
// the pod VRF; and it leaves NAT44 to the agent.
func TestVPPExampleMatchesAgentDefaults(t *testing.T) {
	b, err := os.ReadFile("examples/vpp/node-1.cli")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string // the commands, comments left out
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "comment") {
			cmds = append(cmds, l)
		}
	}
	cfg := contivconf.Defaults()
	c := cfg.IPAM
	plan, err := addrplan.NewPlan(addrplan.Config{
		PodSubnetCIDR: c.PodSubnetCIDR, PodSubnetOneNodePrefixLen: c.PodSubnetNodePrefixLength,
		VPPHostSubnetCIDR: c.VPPHostSubnetCIDR, VPPHostSubnetOneNodePrefixLen: c.VPPHostSubnetNodePrefixLength,
		NodeInterconnectCIDR: c.NodeInterconnectCIDR, VXLANCIDR: c.VXLANCIDR, ServiceCIDR: c.ServiceCIDR,
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	hostIf, bvi := cfg.Routing.HostInterconnectInterface, cfg.Routing.VXLANBVIInterface
	want := []string{
		"ip table add " + u32(cfg.Routing.PodVRFID),
		"set interface ip address host-eth1 " + plan.NodeInterconnectIP.String(),
		"set interface ip address " + hostIf + " " + plan.HostInterconnectVPP.String(),
		"host-ip4-addr " + plan.HostInterconnectLinux.String(),
		"set interface ip table " + bvi + " " + u32(cfg.Routing.PodVRFID),
		"set interface ip address " + bvi + " " + plan.VXLANIP.String(),
		"set interface l2 bridge " + bvi + " 1 bvi",
		// Every pod subnet, not only the node's (cnat resolves backends in the main VRF).
		"ip route add " + c.PodSubnetCIDR.String() + " via ip4-lookup-in-table " + u32(cfg.Routing.PodVRFID),
		"ip route add 0.0.0.0/0 table " + u32(cfg.Routing.PodVRFID) + " via ip4-lookup-in-table " + u32(cfg.Routing.MainVRFID),
	}
	all := strings.Join(cmds, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("node-1.cli lacks %q", w)
		}
	}
	// VPP names a tap created with id N tapN, a loopback of instance N loopN.
	if m := regexp.MustCompile(`create tap id (\d+)`).FindStringSubmatch(all); m == nil || "tap"+m[1] != hostIf {
		t.Errorf("the host interconnect VPP creates is not %s (%v)", hostIf, m)
	}
	// The BVI's MAC is given: VPP's default for a loopback is the same on every node.
	if m := regexp.MustCompile(`create loopback interface mac [0-9a-f:]{17} instance (\d+)`).FindStringSubmatch(all); m == nil || "loop"+m[1] != bvi {
		t.Errorf("the loopback VPP creates is not %s (%v)", bvi, m)
	}
	for _, cmd := range cmds {
		if strings.Contains(cmd, "nat44") || strings.Contains(cmd, "cnat") {
			t.Errorf("node-1.cli configures NAT (%q): the agent owns it", cmd)
		}
		if strings.Contains(cmd, plan.ServiceCIDR.String()) {
			t.Errorf("node-1.cli routes the service CIDR (%q): the agent installs its drop routes", cmd)
		}
	}
	for _, f := range []string{"examples/vpp/startup.conf", "examples/vpp/startup-dpdk.conf", "examples/vpp/startup-26.06.conf"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "socket-name "+cfg.VPP.Socket) {
			t.Errorf("%s: the API socket is not at vpp.socket %s", f, cfg.VPP.Socket)
		}
		if !strings.Contains(string(b), "plugin nat_plugin.so { enable }") {
			t.Errorf("%s does not load the NAT plugin", f)
		}
		if !strings.Contains(string(b), "plugin acl_plugin.so { enable }") {
			t.Errorf("%s does not load the ACL plugin (loadBalancerSourceRanges under nat44)", f)
		}
		// A main loop that sleeps at every turn slows the agent's
		// pipelines 2-3 times (docs/vpp-node.md, section 1).
		if regexp.MustCompile(`(?m)^\s*poll-sleep-usec`).Match(b) {
			t.Errorf("%s sets poll-sleep-usec", f)
		}
		// VPP 26.06 (docs/vpp-versions.md): taps are a plugin, and cnat's
		// session-db-* keys stop it with "unknown input".
		if strings.Contains(f, "26.06") && (!strings.Contains(string(b), "plugin tap_plugin.so { enable }") ||
			regexp.MustCompile(`(?m)^\s*session-db-`).Match(b)) {
			t.Errorf("%s: VPP 26.06 needs tap_plugin.so and takes no session-db-* key", f)
		}
	}
}

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
