package agent

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// remoteService is a NodePort Service whose only backend is on node-2:
// node-1 has mappings and no pod of its own (the simulated CNI would
// re-create a pod's interface before VPP's startup configuration runs, and
// it would take host-eth1's index).
const remoteService = `
apiVersion: v1
kind: Service
metadata: {namespace: default, name: web}
spec:
  type: NodePort
  clusterIP: 10.96.0.90
  ports:
  - {name: http, port: 80, targetPort: 8080, nodePort: 30090}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: default
  name: web-a
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.1.2.3]
  nodeName: node-2
`

// TestVPPRestartInterfacesBackDuringTheFullApply is the order a real VPP
// 25.02 showed after every restart (docs/real-vpp.md, "A restarted VPP
// gives a re-created interface its old index"): the agent's first read of
// the restarted VPP finds only local0 (host-eth1 Deleted); the restart's
// full apply opens with the NAT44-ED enable, which keeps VPP's main thread
// busy (3.2 s at load 6); VPP's startup configuration, due 2 s after the
// start, runs once the enable is answered and re-creates host-eth1 at its
// old index, and the apply configures its output feature. The Deleted
// host-eth1 of the first read is no loss: handled as one after the apply
// (the old rule), nat44 forgot the output feature and added it again, and
// VPP refused it (-81 Value already exists). After the restart VPP refuses
// no call, and every NAT44 feature is added once, as at the first start.
func TestVPPRestartInterfacesBackDuringTheFullApply(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := contivconf.Defaults()
	// Source NAT on the uplink, as on the real-VPP suite's nodes: the
	// output feature on host-eth1.
	cfg.IPAM.DefaultGateway = netip.MustParseAddr("192.168.16.100")
	cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-1", MainInterface: &contivconf.InterfaceConfig{Name: "host-eth1"}}}
	cfg = testConfigFrom(t, cfg, srv.Endpoint(), t.TempDir())
	// The enable as measured at load 6 (docs/real-vpp.md): 3.2 s at the
	// default 262 144 sessions.
	h := newHarnessWith(t, srv.Endpoint(), cfg, sim.Options{PluginEnable: 3200 * time.Millisecond / 262144})
	defer h.close()
	h.putYAML(remoteService)
	before := h.lines()
	if !slices.Contains(before, "interface host-eth1 output") {
		t.Fatalf("NAT44 state before the restart lacks host-eth1's output feature:\n%s", strings.Join(before, "\n"))
	}
	features := []string{"nat44_ed_add_del_output_interface", "nat44_interface_add_del_feature"}
	first := map[string]int{}
	for _, m := range features {
		first[m] = h.vpp.Calls(m)
	}

	h.vpp.ResetCalls()
	h.vpp.RestartWith(sim.RestartOptions{InterfacesAfter: 2 * time.Second})
	// The order under test: the apply's enable reaches VPP before its
	// startup configuration has run, which then waits for the enable.
	var back, enabling bool
	if !until(settleLimit, func() bool {
		back = len(h.vpp.Interfaces()) > 1
		enabling = h.vpp.Calls("nat44_ed_plugin_enable_disable") > 0
		return back || enabling
	}) || back {
		t.Fatalf("VPP re-created its interfaces (%v) before the restart's apply enabled NAT44-ED (%v): the order under test did not happen", back, enabling)
	}
	if !h.eventually(settleLimit, h.agent.Ready) {
		t.Fatalf("not ready after the VPP restart: %v", h.agent.notReady())
	}
	if r := h.vpp.Refusals(); len(r) > 0 {
		t.Errorf("after the VPP restart VPP refused %v, want no call refused", r)
	}
	for _, m := range features {
		if got := h.vpp.Calls(m); got != first[m] {
			t.Errorf("after the VPP restart %d calls of %s, want %d (each feature added once, as at the first start)", got, m, first[m])
		}
	}
	if got := h.lines(); !slices.Equal(got, before) {
		t.Errorf("NAT44 state after the VPP restart:\n%s\nwant as before:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
}
