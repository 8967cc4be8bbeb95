package addrplan_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	"contiv.dev/vpp/addrplan"
)

func exampleConfig() addrplan.Config {
	return addrplan.Config{
		PodSubnetCIDR:                 netip.MustParsePrefix("10.1.0.0/16"),
		PodSubnetOneNodePrefixLen:     24,
		VPPHostSubnetCIDR:             netip.MustParsePrefix("172.30.0.0/16"),
		VPPHostSubnetOneNodePrefixLen: 24,
		NodeInterconnectCIDR:          netip.MustParsePrefix("192.168.16.0/24"),
		VXLANCIDR:                     netip.MustParsePrefix("192.168.30.0/24"),
		ServiceCIDR:                   netip.MustParsePrefix("10.96.0.0/12"),
	}
}

func ExampleNewPlan() {
	p, err := addrplan.NewPlan(exampleConfig(), 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pod subnet:       ", p.PodSubnet)
	fmt.Println("pod gateway:      ", p.PodGateway)
	fmt.Println("NAT loopback:     ", p.NATLoopback)
	fmt.Println("host interconnect:", p.HostInterconnectVPP, "(VPP)", p.HostInterconnectLinux, "(Linux)")
	fmt.Println("node IP:          ", p.NodeInterconnectIP)
	fmt.Println("VXLAN IP:         ", p.VXLANIP)
	// Output:
	// pod subnet:        10.1.3.0/24
	// pod gateway:       10.1.3.1
	// NAT loopback:      10.1.3.254
	// host interconnect: 172.30.3.1/24 (VPP) 172.30.3.2/24 (Linux)
	// node IP:           192.168.16.3/24
	// VXLAN IP:          192.168.30.3/24
}

func ExampleNewPlan_idOutOfRange() {
	cfg := exampleConfig()
	fmt.Println("largest node ID:", cfg.MaxNodeID())
	_, err := addrplan.NewPlan(cfg, 255)
	fmt.Println(err)
	// Output:
	// largest node ID: 254
	// node ID 255 has no host address in nodeInterconnectCIDR 192.168.16.0/24 (at most 254 nodes): node ID out of range
}

func ExampleConfig_Validate() {
	cfg := exampleConfig()
	cfg.PodSubnetOneNodePrefixLen = 16
	fmt.Println(cfg.Validate())
	// Output:
	// podSubnetOneNodePrefixLen 16: must be longer than the /16 of podSubnetCIDR 10.1.0.0/16: invalid IPAM config
}

// mapStore keeps allocations in a map; the agent keeps them in etcd.
type mapStore map[addrplan.PodID]string

func (s mapStore) List(context.Context) (map[addrplan.PodID]string, error) { return maps.Clone(s), nil }
func (s mapStore) Put(_ context.Context, pod addrplan.PodID, ip netip.Addr) error {
	s[pod] = ip.String()
	return nil
}
func (s mapStore) Delete(_ context.Context, pod addrplan.PodID) error { delete(s, pod); return nil }

func ExampleAllocator() {
	ctx := context.Background()
	plan, _ := addrplan.NewPlan(exampleConfig(), 1)
	store := mapStore{}
	a, _ := addrplan.NewAllocator(ctx, addrplan.AllocatorParams{Subnet: plan.PodSubnet, Store: store})
	web, _ := a.Allocate(ctx, addrplan.PodID{Namespace: "default", Name: "web"})
	db, _ := a.Allocate(ctx, addrplan.PodID{Namespace: "default", Name: "db"})
	again, _ := a.Allocate(ctx, addrplan.PodID{Namespace: "default", Name: "web"})
	fmt.Println(web, db, again)

	// The pod "web" is gone from the cluster: Sync releases its address.
	_ = a.Sync(ctx, func(p addrplan.PodID) bool { return p.Name == "db" })
	fmt.Println(store)
	// Output:
	// 10.1.1.2 10.1.1.3 10.1.1.2
	// map[default/db:10.1.1.3]
}
