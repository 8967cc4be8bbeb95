package vpp

import (
	"net/netip"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/acl"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// The verdict routes and the source-range ACL are sent exactly as
// records-acl-routes recorded a real VPP 25.02 accepting them (fields
// copied from c2.jsonl and c1-nat44.jsonl).
func TestVerdictAndACLRequestsAsRecorded(t *testing.T) {
	zeroNH := `"nh":{"address":{"XXX_UnionData":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}},"label_stack":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]`
	host := netip.MustParsePrefix("10.96.0.19/32")
	t.Run("reject route, table 0 (c2 T2; ICMP_PROHIBIT, type 6: records-verdicts/verdicts-nat44.jsonl step 27)", func(t *testing.T) {
		req, err := routeRequest(nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(host)}, Kind: nat44.RouteReject}, true, &release2502)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"route":{"prefix":"10.96.0.19/32","paths":[{"sw_if_index":4294967295,"type":6,`+zeroNH+`}]}}`)
	})
	t.Run("lookup of table 0 from table 1 (c2 T1)", func(t *testing.T) {
		req, err := routeRequest(nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(host), VRF: 1}, Kind: nat44.RouteLookup}, true, &release2502)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, req, `{"is_add":true,"route":{"table_id":1,"prefix":"10.96.0.19/32","paths":[{"sw_if_index":4294967295,"weight":1,`+zeroNH+`}]}}`)
	})
	t.Run("reject route outside table 0: never sent (VPP 25.02 crashes, c2 T4)", func(t *testing.T) {
		_, err := routeRequest(nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(host), VRF: 1}, Kind: nat44.RouteReject}, true, &release2502)
		if err == nil || !strings.Contains(err.Error(), "crashes") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the source-range ACL (c1-nat44 step 1, action 2 for the permit)", func(t *testing.T) {
		lb := netip.MustParsePrefix("192.168.16.101/32")
		any := netip.MustParsePrefix("0.0.0.0/0")
		rules := []nat44.ACLRule{
			{Action: nat44.ACLPermitReflect, Src: netip.MustParsePrefix("192.168.16.2/32"), Dst: lb, Proto: servicerenderer.TCP, Port: 80},
			{Action: nat44.ACLDeny, Src: any, Dst: lb, Proto: servicerenderer.TCP, Port: 80},
			{Action: nat44.ACLPermit, Src: any, Dst: any},
		}
		req := &acl.ACLAddReplace{ACLIndex: 0, Tag: "lbsr-web-lb", Count: uint32(len(rules))}
		for _, r := range rules {
			req.R = append(req.R, aclRule(r))
		}
		port := `"srcport_or_icmptype_last":65535,"dstport_or_icmpcode_first":80,"dstport_or_icmpcode_last":80`
		sameJSON(t, req, `{"tag":"lbsr-web-lb","r":[`+
			`{"is_permit":2,"src_prefix":"192.168.16.2/32","dst_prefix":"192.168.16.101/32","proto":6,`+port+`},`+
			`{"src_prefix":"0.0.0.0/0","dst_prefix":"192.168.16.101/32","proto":6,`+port+`},`+
			`{"is_permit":1,"src_prefix":"0.0.0.0/0","dst_prefix":"0.0.0.0/0","srcport_or_icmptype_last":65535,"dstport_or_icmpcode_last":65535}]}`)
		for i, r := range req.R {
			if got := fromACLRule(r); got != rules[i] {
				t.Errorf("rule %d reads back as %+v, want %+v", i, got, rules[i])
			}
		}
	})
}
