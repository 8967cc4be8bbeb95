package vpp

import (
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
)

// TestRejectPathProto: a reject route's path is ICMP_PROHIBIT (UDP
// clients fail at once on it, not on ICMP_UNREACH:
// sim/testdata/records-verdicts); an IPv6 one carries the IPv6 path
// protocol (with the IPv4 one, the zero value, VPP 25.02 sends no ICMP at
// all), an IPv4 one proto 0, as recorded.
func TestRejectPathProto(t *testing.T) {
	for _, c := range []struct {
		prefix string
		want   fib_types.FibPathNhProto
	}{
		{"10.96.0.0/32", fib_types.FIB_API_PATH_NH_PROTO_IP4},
		{"fd00:96::/128", fib_types.FIB_API_PATH_NH_PROTO_IP6},
	} {
		req, err := pathRequest(netip.MustParsePrefix(c.prefix), 0, true, true, false, 0, &release2502)
		if err != nil {
			t.Fatal(err)
		}
		if p := req.Route.Paths[0]; p.Type != fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT || p.Proto != c.want {
			t.Errorf("%s: path %+v, want ICMP_PROHIBIT proto %v", c.prefix, p, c.want)
		}
	}
}
