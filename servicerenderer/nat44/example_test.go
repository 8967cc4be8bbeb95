package nat44_test

import (
	"fmt"
	"net/netip"
	"strings"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// webMapping is 10.96.0.1:80/TCP load-balanced over n backends.
func webMapping(n int) *nat44.Mapping {
	m := &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.0.1"), Port: 80, Proto: servicerenderer.TCP},
		TwiceNAT:   nat44.TwiceNATSelf,
		Tag:        "contiv:default/web",
	}
	for i := range n {
		m.Locals = append(m.Locals, nat44.Local{
			IP: nat44.IPv4{10, 1, 1, byte(10 + i)}, Port: 8080, VRF: 1, Probability: 1,
		})
	}
	return m
}

func state(m *nat44.Mapping) *nat44.State {
	st := nat44.NewState()
	st.Mappings[m.MappingKey] = m
	return st
}

func owned(tag string) bool { return strings.HasPrefix(tag, "contiv:") }

// An endpoint added to a service with ten backends is one call that adds
// the backend in place: the service's other sessions survive.
func ExampleDiff() {
	for _, op := range nat44.Diff(state(webMapping(11)), state(webMapping(10)), owned) {
		fmt.Println(op)
	}
	// Output:
	// add-local 10.96.0.1:80/TCP 10.1.1.20:8080 vrf=1 p=1
}

// VPP cannot remove a local from a load-balanced mapping with two: going
// from two backends to one, the probability-0 placeholder local comes in
// first, then the leaving backend goes. The mapping, and the sessions of
// the backend that stays, live on.
func ExampleDiff_twoToOne() {
	one := webMapping(1)
	one.Locals = append([]nat44.Local{nat44.Placeholder}, one.Locals...)
	for _, op := range nat44.Diff(state(one), state(webMapping(2)), owned) {
		fmt.Println(op)
	}
	// Output:
	// add-local 10.96.0.1:80/TCP 0.0.0.0:0 vrf=0 p=0
	// del-local 10.96.0.1:80/TCP 10.1.1.11:8080 vrf=1 p=1
}

// Mappings whose tag the agent does not own are never touched.
func ExampleDiff_foreign() {
	foreign := webMapping(2)
	foreign.Tag = "someone-else"
	fmt.Println(len(nat44.Diff(nat44.NewState(), state(foreign), owned)))
	// Output:
	// 0
}

// A NodePort service under the Cluster external policy: the cluster IP
// with self-twice-NAT, this node's own address with full twice-NAT.
func ExampleBuildService() {
	cfg := nat44.DefaultConfig()
	cfg.NATLoopback = netip.MustParseAddr("10.1.1.254")
	cfg.PodSubnet = netip.MustParsePrefix("10.1.1.0/24")
	cfg.LocalEndpointWeight = 2
	node := servicerenderer.LocalNode{Name: "node-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.16.1")}}
	svc := &servicerenderer.ContivService{
		ID:         servicerenderer.ServiceID{Namespace: "default", Name: "web"},
		ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")},
		Ports: []servicerenderer.Port{{
			Name: "http", Protocol: servicerenderer.TCP, Port: 80, NodePort: 30080,
			Backends: []servicerenderer.Backend{
				{IP: servicerenderer.IPOf(netip.MustParseAddr("10.1.1.3")), Port: 8080, Local: true, Ready: true},
				{IP: servicerenderer.IPOf(netip.MustParseAddr("10.1.2.3")), Port: 8080, Ready: true},
			},
		}},
	}
	for _, m := range nat44.BuildService(svc, node, cfg) {
		fmt.Println(m)
	}
	// Output:
	// 10.96.0.1:80/TCP lb twice-nat=self affinity=0 tag=contiv:default/web -> 10.1.1.3:8080 vrf=1 p=2, 10.1.2.3:8080 vrf=1 p=1
	// 192.168.16.1:30080/TCP lb twice-nat=on affinity=0 tag=contiv:default/web -> 10.1.1.3:8080 vrf=1 p=2, 10.1.2.3:8080 vrf=1 p=1
}
