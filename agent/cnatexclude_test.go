package agent

import (
	"maps"
	"net/netip"
	"slices"
	"testing"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/agent/offline/offlinetest"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestCNATRepliesToDirectSourcesKeepThePodAddress renders node-1 through
// cnat for each transport and asks the simulated VPP what becomes of a
// pod's reply (SYN-ACK) to each range from which untranslated traffic
// reaches the pod: it must leave with the pod's own address. FACTS §6
// (cnat, measured with the agent): a connection from node-2's VXLAN
// address to a pod died because the K8S policy source-NATed the SYN-ACK
// to the node IP, the VXLAN range not being excluded. A reply to the
// outside is source-NATed, as it must be.
func TestCNATRepliesToDirectSourcesKeepThePodAddress(t *testing.T) {
	objs := offlinetest.ExampleObjects(t)
	pods := podIngress(objs, "node-1")
	pod := slices.MinFunc(slices.Collect(maps.Keys(pods)), netip.Addr.Compare)
	plan2 := func(cfg contivconf.Config) *addrplan.Plan {
		t.Helper()
		cfg.NodeName = "node-2"
		p, err := addrplan.NewPlan(nodepipeline.IPAMConfig(cfg), 2)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		setup   func(*contivconf.Config)
		sources func(cfg contivconf.Config) map[string]netip.Addr
	}{
		{
			name: "vxlan", setup: func(*contivconf.Config) {},
			sources: func(cfg contivconf.Config) map[string]netip.Addr {
				return map[string]netip.Addr{"node-2's VXLAN address": plan2(cfg).VXLANIP.Addr()}
			},
		},
		{
			name: "nooverlay",
			setup: func(cfg *contivconf.Config) {
				cfg.Routing.NodeToNodeTransport = contivconf.TransportNoOverlay
				// node-2 on another, routed network: only the configuration
				// of the cluster says it is a node.
				cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-2",
					MainInterface: &contivconf.InterfaceConfig{Name: "GigabitEthernet0/8/0", IPCIDR: netip.MustParsePrefix("192.168.17.2/24")}}}
			},
			sources: func(cfg contivconf.Config) map[string]netip.Addr {
				return map[string]netip.Addr{
					"node-2's configured address":   netip.MustParseAddr("192.168.17.2"),
					"node-3's address (IPAM range)": netip.MustParseAddr("192.168.16.3"),
					"node-2's pod":                  plan2(cfg).PodGateway.Next(),
				}
			},
		},
		{
			name: "host interconnect", setup: func(*contivconf.Config) {},
			sources: func(cfg contivconf.Config) map[string]netip.Addr {
				return map[string]netip.Addr{
					"node-2's host": plan2(cfg).HostInterconnectLinux.Addr(),
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := offlinetest.Config("node-1")
			cfg.Renderer = contivconf.RendererCNAT
			tc.setup(&cfg)
			r := mustRender(t, offline.Params{Objects: objs, Config: cfg})
			sources := tc.sources(cfg)
			sources["this node's host"] = r.Plan.HostInterconnectLinux.Addr()
			for what, src := range sources {
				reply := sim.Packet{Src: pod, Dst: src, Proto: sim.TCP, DstPort: 40000, Ingress: pods[pod]}
				if res := r.TranslateCNAT(reply); res.Src != pod {
					t.Errorf("reply of pod %v to %s %v leaves from %v (%s), want the pod's own address", pod, what, src, res.Src, res.Reason)
				}
			}
			out := sim.Packet{Src: pod, Dst: netip.MustParseAddr("192.0.2.1"), Proto: sim.TCP, DstPort: 443, Ingress: pods[pod]}
			if res := r.TranslateCNAT(out); res.Src != r.NodeIP.Addr() {
				t.Errorf("pod to the outside leaves from %v, want the node IP %v", res.Src, r.NodeIP.Addr())
			}
		})
	}
}

// podIngress maps the IPv4 address of each of node's pods to its
// interface, as the simulated CNI names it.
func podIngress(objs []kubestate.Object, node string) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, o := range objs {
		p, ok := o.(*kubestate.Pod)
		if !ok || p.NodeName != node || p.HostNetwork {
			continue
		}
		for _, ip := range p.IPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				out[a] = ifName(p.Namespace, p.Name)
			}
		}
	}
	return out
}
