package sim_test

import (
	"context"
	"fmt"
	"net/netip"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// ExampleVPP_OpenSession opens connections to two services that share a
// backend, removes that backend from one of them in place, and counts
// the connections the change cut: those to the shared backend in both
// services.
func ExampleVPP_OpenSession() {
	ctx := context.Background()
	v := sim.New(sim.Options{SessionSeed: 3})
	if _, err := v.AddInterface("tap1", "default/client"); err != nil {
		panic(err)
	}
	conn := vpp.New(vpp.Config{Adapter: v})
	conn.Start(ctx)
	defer conn.Close()
	if err := conn.WaitConnected(ctx); err != nil {
		panic(err)
	}
	nat := vpp.NewNAT44(conn, vpp.NewInterfaces(conn, nil), nil)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	addr := netip.MustParseAddr
	backend := func(ip string) nat44.Local {
		return nat44.Local{IP: nat44.MustIPv4(addr(ip)), Port: 8080, VRF: 1, Probability: 1}
	}
	must(nat.SetGlobal(ctx, nat44.Global{Forwarding: true}))
	if _, err := nat.SetInterfaceFeatures(ctx, "tap1", 0, nat44.FeatureIn|nat44.FeatureOut); err != nil {
		panic(err)
	}
	web := nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.10"), Port: 80, Proto: 6}
	api := nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.20"), Port: 80, Proto: 6}
	must(nat.AddDelMapping(ctx, &nat44.Mapping{MappingKey: web,
		Locals: []nat44.Local{backend("10.1.1.2"), backend("10.1.1.3"), backend("10.1.1.4")}}, true))
	must(nat.AddDelMapping(ctx, &nat44.Mapping{MappingKey: api,
		Locals: []nat44.Local{backend("10.1.1.2"), backend("10.1.1.5")}}, true))

	shared := netip.MustParseAddrPort("10.1.1.2:8080")
	toShared := map[netip.Addr]int{}
	for i, key := range []nat44.MappingKey{web, api, web, api, web, api} {
		s, err := v.OpenSession(sim.Packet{Src: addr("10.1.2.7"), Dst: key.IP.Addr(), Proto: 6, DstPort: 80, Ingress: "tap1"}, uint16(40000+i))
		must(err)
		if s.Backend == shared {
			toShared[key.IP.Addr()]++
		}
	}
	must(nat.AddDelLBLocal(ctx, web, backend("10.1.1.2"), false))
	fmt.Println("to the shared backend: web", toShared[web.IP.Addr()], "api", toShared[api.IP.Addr()])
	fmt.Println(v.SessionsCut(), "cut,", len(v.Sessions()), "alive")
	// Output:
	// to the shared backend: web 1 api 2
	// 3 cut, 3 alive
}
