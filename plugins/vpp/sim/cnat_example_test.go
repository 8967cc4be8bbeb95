package sim_test

import (
	"context"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// ExampleVPP_OpenCnatSession opens connections through a cnat
// translation, removes a backend by updating the translation in place,
// and shows that no connection was cut: the removed backend keeps its
// connections and gets no new ones.
func ExampleVPP_OpenCnatSession() {
	ctx := context.Background()
	v := sim.New(sim.Options{})
	conn, err := core.Connect(v)
	if err != nil {
		panic(err)
	}
	defer conn.Disconnect()
	ep := func(ip string, port uint16) cnat.CnatEndpoint {
		a, _ := ip_types.ParseAddress(ip)
		return cnat.CnatEndpoint{Addr: a, SwIfIndex: ^interface_types.InterfaceIndex(0), Port: port}
	}
	translate := func(backends ...string) uint32 {
		t := cnat.CnatTranslation{Vip: ep("10.96.0.10", 80), IPProto: ip_types.IP_API_PROTO_TCP}
		for _, b := range backends {
			t.Paths = append(t.Paths, cnat.CnatEndpointTuple{DstEp: ep(b, 8080), SrcEp: ep("0.0.0.0", 0)})
		}
		r := &cnat.CnatTranslationUpdateReply{}
		if err := conn.Invoke(ctx, &cnat.CnatTranslationUpdate{Translation: t}, r); err != nil || r.Retval != 0 {
			panic(fmt.Sprint(err, r.Retval))
		}
		return r.ID
	}
	id := translate("10.1.1.11", "10.1.1.12")
	open := func(port uint16) sim.CnatSession {
		s, err := v.OpenCnatSession(sim.Packet{Src: netip.MustParseAddr("10.1.2.7"), Dst: netip.MustParseAddr("10.96.0.10"),
			Proto: 6, DstPort: 80}, port)
		if err != nil {
			panic(err)
		}
		return s
	}
	var before []sim.CnatSession
	removed := netip.MustParseAddrPort("10.1.1.12:8080")
	onRemoved := 0
	for port := uint16(40000); port < 40020; port++ {
		s := open(port)
		before = append(before, s)
		if s.Backend == removed {
			onRemoved++
		}
	}
	fmt.Println("on the backend to remove:", onRemoved)
	fmt.Println("same id:", translate("10.1.1.11") == id)
	alive, toRemoved := 0, 0
	for _, s := range before {
		if v.CnatSessionAlive(s.ID) {
			alive++
		}
	}
	for port := uint16(50000); port < 50020; port++ {
		if open(port).Backend == removed {
			toRemoved++
		}
	}
	fmt.Println(alive, "of", len(before), "alive,", v.CnatSessionsCut(), "cut,", toRemoved, "new to the removed backend")
	// Output:
	// on the backend to remove: 6
	// same id: true
	// 20 of 20 alive, 0 cut, 0 new to the removed backend
}
