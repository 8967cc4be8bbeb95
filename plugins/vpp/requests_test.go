package vpp

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	ipapi "go.fd.io/govpp/binapi/ip"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// sameJSON tells whether req marshals to the recorded fields (the corpus
// records json.Marshal of the govpp struct a real VPP 25.02 accepted).
func sameJSON(t *testing.T, req any, recorded string) {
	t.Helper()
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(recorded), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("request\n%s\nrecorded\n%s", got, recorded)
	}
}

// The requests are exactly those the corpus recorded a real VPP 25.02
// accepting (the recorded fields are copied from corpus/*.jsonl).
func TestRequestsAsRecorded(t *testing.T) {
	ip := netip.MustParseAddr
	zeroNH := `"nh":{"address":{"XXX_UnionData":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}},"label_stack":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]`
	t.Run("drop route add, VRF 1 (fib_unreach step 2)", func(t *testing.T) {
		req, err := routeRequest(nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustParseIPv4Prefix("10.96.0.0/12"), VRF: 1}}, true, &release2502)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"route":{"table_id":1,"prefix":"10.96.0.0/12","paths":[{"sw_if_index":4294967295,"type":2,`+zeroNH+`}]}}`)
	})
	t.Run("drop route delete, VRF 0 (fib_unreach step 8)", func(t *testing.T) {
		req, err := routeRequest(nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustParseIPv4Prefix("10.96.0.0/12"), VRF: 0}}, false, &release2502)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"route":{"prefix":"10.96.0.0/12","paths":[{"sw_if_index":4294967295,"type":2,`+zeroNH+`}]}}`)
	})
	t.Run("route dump of VRF 1 (fib_unreach step 6)", func(t *testing.T) {
		sameJSON(t, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: 1}}, `{"table":{"table_id":1}}`)
		// The recorded details: the routes that drop or look up a table are
		// returned (the default route looks up table 0).
		recorded := []string{
			`{"route":{"table_id":1,"stats_index":8,"prefix":"0.0.0.0/0","src":9,"paths":[{"sw_if_index":4294967295,"weight":1,` + zeroNH + `}]}}`,
			`{"route":{"table_id":1,"stats_index":10,"prefix":"240.0.0.0/4","src":1,"paths":[{"sw_if_index":4294967295,"weight":1,"type":2,` + zeroNH + `}]}}`,
			`{"route":{"table_id":1,"stats_index":28,"prefix":"10.96.0.0/12","src":8,"paths":[{"sw_if_index":4294967295,"weight":1,"type":2,` + zeroNH + `}]}}`,
			`{"route":{"table_id":1,"stats_index":19,"prefix":"10.1.1.12/32","src":9,"paths":[{"sw_if_index":4,"weight":1,"nh":{"address":{"XXX_UnionData":[10,1,1,12,0,0,0,0,0,0,0,0,0,0,0,0]}},"label_stack":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]}]}}`,
		}
		var got []string
		for _, r := range recorded {
			var d ipapi.IPRouteV2Details
			if err := json.Unmarshal([]byte(r), &d); err != nil {
				t.Fatal(err)
			}
			if rt, ok := cnatRoute(&d); ok {
				got = append(got, rt.String())
			}
		}
		if want := []string{"0.0.0.0/0 vrf=1 lookup table=0", "240.0.0.0/4 vrf=1", "10.96.0.0/12 vrf=1"}; !slices.Equal(got, want) {
			t.Errorf("routes %q, want %q", got, want)
		}
	})
	t.Run("route prefix invalid", func(t *testing.T) {
		// An IPv6 prefix cannot be a RouteKey's; the zero one is invalid.
		if _, err := routeRequest(nat44.Route{}, true, &release2502); err == nil {
			t.Error("invalid prefix accepted")
		}
	})
	key := func(s string, port uint16) nat44.MappingKey {
		return nat44.MappingKey{IP: nat44.MustIPv4(ip(s)), Port: port, Proto: servicerenderer.TCP}
	}
	web := func(n int) []nat44.Local {
		var ls []nat44.Local
		for i := range n {
			ls = append(ls, nat44.Local{IP: nat44.IPv4{10, 1, 1, byte(11 + i)}, Port: 8080, Probability: 1, VRF: 1})
		}
		return ls
	}
	t.Run("static mapping (agent_flow step 25)", func(t *testing.T) {
		req, _, err := mappingRequest(&nat44.Mapping{MappingKey: key("10.96.0.31", 80), TwiceNAT: nat44.TwiceNATSelf,
			Tag: "contiv:default/one", Locals: []nat44.Local{{IP: nat44.MustParseIPv4("10.1.1.31"), Port: 8080, VRF: 1}}}, true)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"flags":6,"pool_ip_address":"0.0.0.0","local_ip_address":"10.1.1.31","external_ip_address":"10.96.0.31","protocol":6,"local_port":8080,"external_port":80,"external_sw_if_index":4294967295,"vrf_id":1,"tag":"contiv:default/one"}`)
	})
	t.Run("load-balanced mapping (agent_flow step 26)", func(t *testing.T) {
		req, _, err := mappingRequest(&nat44.Mapping{MappingKey: key("10.96.0.10", 80), TwiceNAT: nat44.TwiceNATSelf,
			Tag: "contiv:default/web", Locals: web(3)}, true)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"flags":6,"external_addr":"10.96.0.10","external_port":80,"protocol":6,"tag":"contiv:default/web","locals":[{"addr":"10.1.1.11","port":8080,"probability":1,"vrf_id":1},{"addr":"10.1.1.12","port":8080,"probability":1,"vrf_id":1},{"addr":"10.1.1.13","port":8080,"probability":1,"vrf_id":1}]}`)
	})
	t.Run("load-balanced delete carries no locals (lb step 37, 300 locals)", func(t *testing.T) {
		m := &nat44.Mapping{MappingKey: key("10.96.1.4", 80), TwiceNAT: nat44.TwiceNATSelf, Tag: "255", Affinity: 60}
		for i := range 300 {
			m.Locals = append(m.Locals, nat44.Local{IP: nat44.IPv4{10, 1, byte(3 + i/250), byte(1 + i%250)}, Port: 8080, Probability: 1, VRF: 1})
		}
		req, _, err := mappingRequest(m, false)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"flags":6,"external_addr":"10.96.1.4","external_port":80,"protocol":6}`)
	})
	t.Run("refused before VPP sees them", func(t *testing.T) {
		big := &nat44.Mapping{MappingKey: key("10.96.1.4", 80), Locals: web(1)}
		for range nat44.MaxLocalsPerAdd {
			big.Locals = append(big.Locals, web(1)...)
		}
		zero := &nat44.Mapping{MappingKey: key("10.96.1.5", 80), Locals: web(2)}
		zero.Locals[0].Probability, zero.Locals[1].Probability = 0, 0
		long := &nat44.Mapping{MappingKey: key("10.96.1.6", 80), Locals: web(2), Tag: strings.Repeat("t", 64)}
		for name, m := range map[string]*nat44.Mapping{"256 locals": big, "only probability 0": zero, "64-byte tag": long} {
			if _, _, err := mappingRequest(m, true); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
	t.Run("placeholder local (FACTS §3)", func(t *testing.T) {
		req := localRequest(key("10.96.0.10", 80), nat44.Placeholder, true)
		sameJSON(t, req, `{"is_add":true,"external_addr":"10.96.0.10","external_port":80,"protocol":6,"local":{"addr":"0.0.0.0"}}`)
	})
	t.Run("local delete (agent_flow step 28)", func(t *testing.T) {
		req := localRequest(key("10.96.0.10", 80), web(3)[2], false)
		sameJSON(t, req, `{"external_addr":"10.96.0.10","external_port":80,"protocol":6,"local":{"addr":"10.1.1.13","port":8080,"probability":1,"vrf_id":1}}`)
	})
	t.Run("address-only identity (agent_flow step 24)", func(t *testing.T) {
		req, err := identityRequest(&nat44.Identity{IdentityKey: nat44.IdentityKey{IP: ip("192.168.16.1")}, Tag: "contiv:node"}, true)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"flags":8,"ip_address":"192.168.16.1","sw_if_index":4294967295,"tag":"contiv:node"}`)
	})
}
