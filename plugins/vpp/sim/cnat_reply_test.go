package sim

import (
	"net/netip"
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	cnat2606 "contiv.dev/vpp/internal/vppapi/vpp2606/cnat"
)

// TestCnatReplyTable: VPP 26.06 keys cnat sessions by FIB table, so the
// reply of external traffic source-NATed to a remote backend must enter
// the node in the table the flow left by: here the pod VRF, through the
// tunnel, while the backend's node sends it to the uplink (table 0; traced
// on the real 26.06: "source lookup miss"; docs/vpp-node.md section 8
// routes such traffic over the uplink instead). 25.02 takes it in any
// table.
func TestCnatReplyTable(t *testing.T) {
	node := netip.MustParseAddr("192.168.16.1")
	for _, c := range []struct {
		version string
		want    int
	}{{"25.02-release", AnyTable}, {"26.06-release", 1}} {
		t.Run(c.version, func(t *testing.T) {
			v, conn := cnatVPP(t, Options{Version: c.version})
			v.mu.Lock()
			v.ifaceByName("host-vcw1").addr = netip.MustParsePrefix("10.1.1.11/32")
			v.mu.Unlock()
			// The node configuration: every pod subnet from table 0 through
			// the pod VRF, the remote one through the BVI (loop0 here).
			lookup := dropRoute("10.1.0.0/16", 0, true)
			lookup.Route.Paths[0] = fib_types.FibPath{SwIfIndex: noIndex, Weight: 1, TableID: 1}
			remote := dropRoute("10.1.2.0/24", 1, true)
			remote.Route.Paths[0] = fib_types.FibPath{SwIfIndex: 1, Weight: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
				Nh: fib_types.FibPathNh{Address: ip_types.AddressUnion(ip_types.AddressUnionIP4(ip_types.IP4Address{192, 168, 30, 2}))}}
			send(t, v, conn, lookup, remote)
			var snat api.Message = &cnat.CnatSetSnatAddresses{SnatIP4: node.As4(), SwIfIndex: anyIf}
			var policy api.Message = &cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S}
			if c.want != AnyTable {
				snat = &cnat2606.CnatSetSnatAddressesV2{SnatIP4: node.As4(), SwIfIndex: anyIf,
					Flags: cnat2606.CNAT_SNAT_POLICY_F_NO_CLIENT | cnat2606.CNAT_SNAT_POLICY_F_USE_AS_DEFAULT}
				policy = &cnat2606.CnatSetSnatPolicy{Policy: cnat2606.CNAT_POLICY_K8S}
			}
			send(t, v, conn, snat, policy)
			for _, i := range []interface_types.InterfaceIndex{3, 4, 5, 6, 7, 8} {
				send(t, v, conn, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: i, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
			}
			update(t, conn, with(ctr("192.168.16.1:30080", "10.1.1.11:8080", "10.1.2.11:8080"), func(t *cnat.CnatTranslation) { t.IsRealIP = 1 }))
			res := v.CnatTrace(Packet{Src: netip.MustParseAddr("192.168.16.100"), Dst: node, DstPort: 30080, Proto: TCP, Ingress: "host-vcup"})
			if len(res.Backends) != 2 {
				t.Fatalf("backends %+v", res.Backends)
			}
			local, far := res.Backends[0], res.Backends[1]
			if far.Src != node || far.ReplyTable != c.want {
				t.Errorf("remote backend seen from %v, reply table %d: want %v, %d (%s)", far.Src, far.ReplyTable, node, c.want, far.Reason)
			}
			if c.want != AnyTable && !strings.Contains(far.Reason, "return session in table 1") {
				t.Errorf("reason %q does not say where the reply must enter", far.Reason)
			}
			if local.Src == node || local.ReplyTable != c.want {
				t.Errorf("local backend seen from %v, reply table %d: want the client's address, table %d", local.Src, local.ReplyTable, c.want)
			}
		})
	}
}
