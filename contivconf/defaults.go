package contivconf

import (
	"net/netip"
	"time"
)

// Defaults returns the default configuration. deploy/examples/agent.yaml
// writes out the same values, and a test keeps the two equal.
func Defaults() Config {
	return Config{
		NodeName:    "",
		ClusterName: DefaultClusterName,
		Log:         LogConfig{Level: LogLevelInfo, Format: LogFormatText},
		Controller: ControllerConfig{
			MinBatchInterval: 0,
			HealingBackoff:   Backoff{Initial: Duration(time.Second), Max: Duration(time.Minute)},
			ResyncInterval:   Duration(10 * time.Minute),
			StartupTimeout:   Duration(2 * time.Minute),
			BatchHold:        Duration(5 * time.Millisecond),
			HistoryCheck:     Duration(30 * time.Second),
			StartupHeapMiB:   512,
		},
		Etcd: EtcdConfig{
			Embedded: EmbeddedEtcdConfig{
				DataDir:   "/var/lib/contiv/etcd",
				ClientURL: "http://127.0.0.1:12379",
			},
			DialTimeout:    Duration(5 * time.Second),
			RequestTimeout: Duration(10 * time.Second),
		},
		VPP: VPPConfig{
			Socket:           "/run/vpp/api.sock",
			ConnectTimeout:   Duration(10 * time.Second),
			ReconnectBackoff: Backoff{Initial: Duration(100 * time.Millisecond), Max: Duration(15 * time.Second)},
			Simulate:         SimulateNever,

			PendingInterfaceGrace: Duration(3 * time.Second),
			HoldMappings:          Duration(30 * time.Second),
		},
		HTTP:     HTTPConfig{Address: ":9999", ProxyHealthAddress: ":10256"},
		Renderer: RendererNAT44,
		CNI:      defaultCNI(),
		NAT44: NAT44Config{
			SessionLimit: 262144,
			Timeouts: NATTimeouts{
				UDP:            Duration(5 * time.Minute),
				TCPEstablished: Duration(2*time.Hour + 4*time.Minute),
				TCPTransitory:  Duration(4 * time.Minute),
				ICMP:           Duration(time.Minute),
			},
			ServiceLocalEndpointWeight: 1,
			NATExternalTraffic:         true,
			ExternalIPTenantVRF:        4094,
			PodInterfaceTag:            TagNamespace + "/" + TagPod,
		},
		Routing: RoutingConfig{
			MainVRFID: 0, PodVRFID: 1, NodeToNodeTransport: TransportVXLAN,
			HostInterconnectInterface: "tap0", VXLANBVIInterface: "loop1",
		},
		IPAM: IPAMConfig{
			PodSubnetCIDR:                 netip.MustParsePrefix("10.1.0.0/16"),
			PodSubnetNodePrefixLength:     24,
			VPPHostSubnetCIDR:             netip.MustParsePrefix("172.30.0.0/16"),
			VPPHostSubnetNodePrefixLength: 24,
			NodeInterconnectCIDR:          netip.MustParsePrefix("192.168.16.0/24"),
			VXLANCIDR:                     netip.MustParsePrefix("192.168.30.0/24"),
			ServiceCIDR:                   netip.MustParsePrefix("10.96.0.0/12"),
		},
		NodeSync: NodeSyncConfig{
			StateFile:    "/var/lib/contiv/node-id",
			ClaimTimeout: Duration(time.Minute),
		},
	}
}
