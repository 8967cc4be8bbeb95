package addrplan

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

// defaults is the configuration the original shipped with.
func defaults() Config {
	return Config{
		PodSubnetCIDR:                 pfx("10.1.0.0/16"),
		PodSubnetOneNodePrefixLen:     24,
		VPPHostSubnetCIDR:             pfx("172.30.0.0/16"),
		VPPHostSubnetOneNodePrefixLen: 24,
		NodeInterconnectCIDR:          pfx("192.168.16.0/24"),
		VXLANCIDR:                     pfx("192.168.30.0/24"),
		ServiceCIDR:                   pfx("10.96.0.0/12"),
	}
}

func TestPlanDefaultsNode1(t *testing.T) {
	p, err := NewPlan(defaults(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		NodeID:                1,
		PodCIDR:               pfx("10.1.0.0/16"),
		PodSubnet:             pfx("10.1.1.0/24"),
		PodGateway:            addr("10.1.1.1"),
		NATLoopback:           addr("10.1.1.254"),
		HostInterconnect:      pfx("172.30.1.0/24"),
		HostInterconnectVPP:   pfx("172.30.1.1/24"),
		HostInterconnectLinux: pfx("172.30.1.2/24"),
		NodeInterconnectIP:    pfx("192.168.16.1/24"),
		VXLANIP:               pfx("192.168.30.1/24"),
		ServiceCIDR:           pfx("10.96.0.0/12"),
	}
	if *p != want {
		t.Fatalf("plan\n got %+v\nwant %+v", *p, want)
	}
	if p.PodSubnetThisNode() != want.PodSubnet || p.PodSubnetAllNodes() != want.PodCIDR {
		t.Fatalf("accessors: %s %s", p.PodSubnetThisNode(), p.PodSubnetAllNodes())
	}
}

// TestPlanReferenceChecks reproduces the checks of the original's IPAM tests
// (reference 6.1).
func TestPlanReferenceChecks(t *testing.T) {
	small := defaults()
	small.PodSubnetCIDR, small.PodSubnetOneNodePrefixLen = pfx("1.2.128.0/17"), 29
	small.NodeInterconnectCIDR = pfx("3.4.5.192/26")

	wrap := defaults()
	wrap.PodSubnetCIDR, wrap.PodSubnetOneNodePrefixLen = pfx("10.1.0.0/24"), 28

	v6 := defaults()
	v6.NodeInterconnectCIDR = pfx("::/64")

	tests := []struct {
		name      string
		cfg       Config
		id        uint32
		podSubnet string
		nodeIP    string
		wantErr   error
	}{
		{name: "/17 split into /29, node 1", cfg: small, id: 1, podSubnet: "1.2.128.8/29", nodeIP: "3.4.5.193/26"},
		{name: "/17 split into /29, node 5", cfg: small, id: 5, podSubnet: "1.2.128.40/29", nodeIP: "3.4.5.197/26"},
		{name: "/24 split into /28, id 16 takes subnet 0", cfg: wrap, id: 16, podSubnet: "10.1.0.0/28", nodeIP: "192.168.16.16/24"},
		{name: "/24 split into /28, id 17 does not fit", cfg: wrap, id: 17, wantErr: ErrNodeIDOutOfRange},
		{name: "IPv6 node interconnect, node 1", cfg: v6, id: 1, podSubnet: "10.1.1.0/24", nodeIP: "::1/64"},
		{name: "/26 node interconnect, id 62 fits", cfg: small, id: 62, podSubnet: "1.2.129.240/29", nodeIP: "3.4.5.254/26"},
		{name: "/26 node interconnect, id 63 is broadcast", cfg: small, id: 63, wantErr: ErrNodeIDOutOfRange},
		{name: "ID 0", cfg: defaults(), id: 0, wantErr: ErrNodeIDOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.cfg, tc.id)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.PodSubnet.String(); got != tc.podSubnet {
				t.Errorf("pod subnet %s, want %s", got, tc.podSubnet)
			}
			if got := p.NodeInterconnectIP.String(); got != tc.nodeIP {
				t.Errorf("node IP %s, want %s", got, tc.nodeIP)
			}
		})
	}
}

func TestFirstPodIPOfSmallSubnet(t *testing.T) {
	cfg := defaults()
	cfg.PodSubnetCIDR, cfg.PodSubnetOneNodePrefixLen = pfx("1.2.128.0/17"), 29
	p, err := NewPlan(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAllocator(t.Context(), AllocatorParams{Subnet: p.PodSubnet, Store: newMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := a.Allocate(t.Context(), PodID{"default", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if ip != addr("1.2.128.10") {
		t.Fatalf("first pod IP %s, want 1.2.128.10", ip)
	}
}

func TestMaxNodeID(t *testing.T) {
	small := defaults()
	small.PodSubnetCIDR, small.PodSubnetOneNodePrefixLen = pfx("1.2.128.0/17"), 29
	small.NodeInterconnectCIDR = pfx("3.4.5.192/26")
	noOverlay := defaults()
	noOverlay.NodeInterconnectCIDR, noOverlay.VXLANCIDR = netip.Prefix{}, netip.Prefix{}
	v6 := Config{
		PodSubnetCIDR: pfx("fd00:1::/48"), PodSubnetOneNodePrefixLen: 112,
		VPPHostSubnetCIDR: pfx("fd00:2::/48"), VPPHostSubnetOneNodePrefixLen: 112,
		ServiceCIDR: pfx("fd00:3::/108"),
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want uint32
	}{
		{"defaults: node and VXLAN /24 limit to 254", defaults(), 254},
		{"node interconnect /26 limits to 62", small, 62},
		{"no overlay: the /16 split into /24 limits to 256", noOverlay, 256},
		{"IPv6 ranges fit every ID", v6, 1<<32 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := tc.cfg.MaxNodeID()
			if got != tc.want {
				t.Fatalf("MaxNodeID %d, want %d", got, tc.want)
			}
			if _, err := NewPlan(tc.cfg, got); err != nil {
				t.Fatalf("the largest ID does not fit: %v", err)
			}
			if got < 1<<32-1 {
				if _, err := NewPlan(tc.cfg, got+1); !errors.Is(err, ErrNodeIDOutOfRange) {
					t.Fatalf("ID %d: err = %v, want ErrNodeIDOutOfRange", got+1, err)
				}
			}
		})
	}
}

func TestPlanIPv6(t *testing.T) {
	cfg := Config{
		PodSubnetCIDR: pfx("fd00:1::/48"), PodSubnetOneNodePrefixLen: 64,
		VPPHostSubnetCIDR: pfx("fd00:2::/48"), VPPHostSubnetOneNodePrefixLen: 64,
		VXLANCIDR:   pfx("fd00:30::/64"),
		ServiceCIDR: pfx("fd00:96::/108"),
	}
	p, err := NewPlan(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"pod subnet", p.PodSubnet.String(), "fd00:1:0:3::/64"},
		{"gateway", p.PodGateway.String(), "fd00:1:0:3::1"},
		{"NAT loopback", p.NATLoopback.String(), "fd00:1:0:3:ffff:ffff:ffff:fffe"},
		{"host VPP end", p.HostInterconnectVPP.String(), "fd00:2:0:3::1/64"},
		{"VXLAN", p.VXLANIP.String(), "fd00:30::3/64"},
		{"node IP (not derived)", p.NodeInterconnectIP.String(), "invalid Prefix"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"missing pod CIDR", func(c *Config) { c.PodSubnetCIDR = netip.Prefix{} }, "podSubnetCIDR"},
		{"pod CIDR with host bits", func(c *Config) { c.PodSubnetCIDR = pfx("10.1.0.5/16") }, "podSubnetCIDR 10.1.0.5/16"},
		{"IPv4-mapped pod CIDR", func(c *Config) { c.PodSubnetCIDR = pfx("::ffff:10.1.0.0/112") }, "podSubnetCIDR"},
		{"per-node prefix equal to the range", func(c *Config) { c.PodSubnetOneNodePrefixLen = 16 }, "podSubnetOneNodePrefixLen 16"},
		{"per-node prefix shorter than the range", func(c *Config) { c.PodSubnetOneNodePrefixLen = 8 }, "podSubnetOneNodePrefixLen 8"},
		{"per-node pod prefix without room for a pod", func(c *Config) { c.PodSubnetOneNodePrefixLen = 30 }, "podSubnetOneNodePrefixLen 30"},
		{"per-node pod prefix beyond the family", func(c *Config) { c.PodSubnetOneNodePrefixLen = 64 }, "podSubnetOneNodePrefixLen 64"},
		{"missing host CIDR", func(c *Config) { c.VPPHostSubnetCIDR = netip.Prefix{} }, "vppHostSubnetCIDR"},
		{"host per-node prefix not longer", func(c *Config) { c.VPPHostSubnetOneNodePrefixLen = 16 }, "vppHostSubnetOneNodePrefixLen 16"},
		{"host per-node prefix too long", func(c *Config) { c.VPPHostSubnetOneNodePrefixLen = 31 }, "vppHostSubnetOneNodePrefixLen 31"},
		{"node interconnect with host bits", func(c *Config) { c.NodeInterconnectCIDR = pfx("192.168.16.1/24") }, "nodeInterconnectCIDR 192.168.16.1/24"},
		{"node interconnect /31", func(c *Config) { c.NodeInterconnectCIDR = pfx("192.168.16.0/31") }, "nodeInterconnectCIDR 192.168.16.0/31"},
		{"VXLAN /32", func(c *Config) { c.VXLANCIDR = pfx("192.168.30.1/32") }, "vxlanCIDR 192.168.30.1/32"},
		{"missing service CIDR", func(c *Config) { c.ServiceCIDR = netip.Prefix{} }, "serviceCIDR"},
		{"service CIDR overlapping pods", func(c *Config) { c.ServiceCIDR = pfx("10.0.0.0/8") }, "podSubnetCIDR 10.1.0.0/16 overlaps serviceCIDR 10.0.0.0/8"},
		{"VXLAN overlapping node interconnect", func(c *Config) { c.VXLANCIDR = pfx("192.168.16.0/25") }, "nodeInterconnectCIDR 192.168.16.0/24 overlaps vxlanCIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaults()
			tc.change(&cfg)
			_, err := NewPlan(cfg, 1)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestBadConfigReportsEveryField(t *testing.T) {
	cfg := defaults()
	cfg.PodSubnetOneNodePrefixLen = 12
	cfg.ServiceCIDR = pfx("10.96.0.1/12")
	err := cfg.Validate()
	for _, field := range []string{"podSubnetOneNodePrefixLen 12", "serviceCIDR 10.96.0.1/12"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v does not name %q", err, field)
		}
	}
}

func TestPlanIsPure(t *testing.T) {
	cfg := defaults()
	for id := uint32(1); id <= cfg.MaxNodeID(); id++ {
		a, errA := NewPlan(cfg, id)
		b, errB := NewPlan(cfg, id)
		if errA != nil || errB != nil || *a != *b {
			t.Fatalf("node %d: %v %v %+v %+v", id, errA, errB, a, b)
		}
		if !a.PodCIDR.Contains(a.PodSubnet.Addr()) || !a.PodSubnet.Contains(a.NATLoopback) || a.NATLoopback == a.PodGateway {
			t.Fatalf("node %d: inconsistent plan %+v", id, a)
		}
	}
}
