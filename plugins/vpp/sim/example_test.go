package sim_test

import (
	"context"
	"fmt"
	"net/netip"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// Example programs a load-balanced service into the simulated VPP through
// the agent's real VPP client, then asks the translation oracle where a
// packet from a pod would go.
func Example() {
	ctx := context.Background()
	v := sim.New(sim.Options{})
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

	addr := netip.MustParseAddr
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(nat.SetGlobal(ctx, nat44.Global{Forwarding: true}))
	if _, err := nat.SetInterfaceFeatures(ctx, "tap1", 0, nat44.FeatureIn|nat44.FeatureOut); err != nil {
		panic(err)
	}
	must(nat.AddDelMapping(ctx, &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.10"), Port: 80, Proto: 6},
		Locals: []nat44.Local{
			{IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 3},
			{IP: nat44.MustParseIPv4("10.1.2.2"), Port: 8080, VRF: 1, Probability: 1},
		},
		TwiceNAT: nat44.TwiceNATSelf,
		Tag:      "contiv:default/web",
	}, true))

	r := v.Translate(sim.Packet{Src: addr("10.1.1.7"), Dst: addr("10.96.0.10"), Proto: 6, DstPort: 80, Ingress: "tap1"})
	fmt.Println(r.Verdict, r.Tag)
	for _, b := range r.Backends {
		fmt.Printf("%v:%d p=%.2f src=%v\n", b.IP, b.Port, b.Probability, b.Src)
	}
	fmt.Println(v.Calls("nat44_add_del_lb_static_mapping"), "load-balanced mapping call")
	// Output:
	// translated contiv:default/web
	// 10.1.1.2:8080 p=0.75 src=10.1.1.7
	// 10.1.2.2:8080 p=0.25 src=10.1.1.7
	// 1 load-balanced mapping call
}
