package vpp

import (
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
)

// TestRejectPathProto: an IPv6 reject route carries the IPv6 path
// protocol (with the IPv4 one, the zero value, VPP 25.02 sends no ICMP
// at all: sim/testdata/records-verdicts/verdicts-cnat.jsonl); an IPv4 one
// is the recorded request (proto 0).
func TestRejectPathProto(t *testing.T) {
	for _, c := range []struct {
		prefix string
		want   fib_types.FibPathNhProto
	}{
		{"10.96.0.0/32", fib_types.FIB_API_PATH_NH_PROTO_IP4},
		{"fd00:96::/128", fib_types.FIB_API_PATH_NH_PROTO_IP6},
	} {
		req, err := pathRequest(netip.MustParsePrefix(c.prefix), 0, true, true, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p := req.Route.Paths[0]; p.Type != fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH || p.Proto != c.want {
			t.Errorf("%s: path %+v, want ICMP_UNREACH proto %v", c.prefix, p, c.want)
		}
	}
}
