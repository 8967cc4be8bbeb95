package contivconf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// validDefaults are the defaults with the one choice they leave open made:
// where etcd is.
func validDefaults() Config {
	c := Defaults()
	c.Etcd.Endpoints = []string{"http://127.0.0.1:2379"}
	return c
}

func TestDefaultsAreValid(t *testing.T) {
	err := Defaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "etcd.endpoints: required") {
		t.Errorf("Defaults().Validate() = %v, want etcd.endpoints required (no silent embedded etcd)", err)
	}
	if err := validDefaults().Validate(); err != nil {
		t.Fatalf("the defaults with etcd endpoints: %v", err)
	}
	c := Defaults()
	c.Etcd.Embedded.Enabled = true
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults with the embedded etcd: %v", err)
	}
	c.Etcd.Endpoints = []string{"http://127.0.0.1:2379"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "etcd.embedded.enabled: invalid value true: set together with etcd.endpoints") {
		t.Errorf("both etcd choices: %v", err)
	}
}

func TestValidateBadValues(t *testing.T) {
	pfx := netip.MustParsePrefix
	addr := netip.MustParseAddr
	yes := true
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		// node and logs
		{"node name upper case", func(c *Config) { c.NodeName = "Node1" }, `nodeName: invalid value "Node1": not a Kubernetes node name`},
		{"node name with dash end", func(c *Config) { c.NodeName = "node-" }, `nodeName: invalid value "node-": not a Kubernetes node name: must start and end`},
		{"node name too long", func(c *Config) { c.NodeName = strings.Repeat("a", 254) }, `longer than 253`},
		{"cluster name empty", func(c *Config) { c.ClusterName = "" }, `clusterName: invalid value "": want 1 to 32 lowercase letters, digits, '-' and '.'`},
		{"cluster name with slash", func(c *Config) { c.ClusterName = "eu/prod" }, `clusterName: invalid value "eu/prod": want 1 to 32 lowercase letters`},
		{"cluster name upper case", func(c *Config) { c.ClusterName = "Prod" }, `clusterName: invalid value "Prod"`},
		{"cluster name dash start", func(c *Config) { c.ClusterName = "-prod" }, `clusterName: invalid value "-prod": want 1 to 32 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`},
		{"cluster name too long", func(c *Config) { c.ClusterName = strings.Repeat("a", 33) }, `clusterName: invalid value "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": want 1 to 32`},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, `log.level: invalid value "verbose": want debug, info, warn or error`},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, `log.format: invalid value "xml": want text or json`},
		// controller
		{"negative batch interval", func(c *Config) { c.Controller.MinBatchInterval = -1 }, `controller.minBatchInterval: invalid value "-1ns": must not be negative`},
		{"zero healing backoff", func(c *Config) { c.Controller.HealingBackoff.Initial = 0 }, `controller.healingBackoff.initial: invalid value "0s": must be positive`},
		{"healing cap under initial", func(c *Config) { c.Controller.HealingBackoff.Max = Duration(time.Millisecond) }, `controller.healingBackoff.max: invalid value "1ms": must be at least controller.healingBackoff.initial (1s)`},
		{"negative resync", func(c *Config) { c.Controller.ResyncInterval = Duration(-time.Minute) }, `controller.resyncInterval: invalid value "-1m0s": must not be negative`},
		{"zero startup", func(c *Config) { c.Controller.StartupTimeout = 0 }, `controller.startupTimeout: invalid value "0s": must be positive`},
		// etcd
		{"endpoint without port", func(c *Config) { c.Etcd.Endpoints = []string{"etcd-0"} }, `etcd.endpoints[0]: invalid value "etcd-0": want http://host:port`},
		{"endpoint bad scheme", func(c *Config) { c.Etcd.Endpoints = []string{"ftp://a:1"} }, `etcd.endpoints[0]: invalid value "ftp://a:1": unknown scheme "ftp"`},
		{"endpoint bad port", func(c *Config) { c.Etcd.Endpoints = []string{"http://a:99999"} }, `etcd.endpoints[0]: invalid value "http://a:99999": port "99999" is not a number`},
		{"endpoint empty", func(c *Config) { c.Etcd.Endpoints = []string{""} }, `etcd.endpoints[0]: invalid value ""`},
		{"endpoint with path", func(c *Config) { c.Etcd.Endpoints = []string{"http://a:1/v3"} }, `etcd.endpoints[0]: invalid value "http://a:1/v3": want only scheme, host and port`},
		{"endpoint duplicate", func(c *Config) { c.Etcd.Endpoints = []string{"a:1", "b:1", "a:1"} }, `etcd.endpoints[2]: invalid value "a:1": duplicate of etcd.endpoints[0]`},
		{"no data dir", func(c *Config) { c.Etcd.Embedded.DataDir = "" }, `etcd.embedded.dataDir: required`},
		{"embedded https", func(c *Config) { c.Etcd.Embedded.ClientURL = "https://127.0.0.1:1" }, `etcd.embedded.clientURL: invalid value "https://127.0.0.1:1": want http://IP:port`},
		{"embedded host name", func(c *Config) { c.Etcd.Embedded.ClientURL = "http://localhost:1" }, `etcd.embedded.clientURL: invalid value "http://localhost:1": host "localhost" is not an IP address`},
		{"embedded no port", func(c *Config) { c.Etcd.Embedded.ClientURL = "http://127.0.0.1" }, `etcd.embedded.clientURL: invalid value "http://127.0.0.1": want http://IP:port: missing port`},
		{"zero dial timeout", func(c *Config) { c.Etcd.DialTimeout = 0 }, `etcd.dialTimeout: invalid value "0s": must be positive`},
		{"negative request timeout", func(c *Config) { c.Etcd.RequestTimeout = Duration(-time.Second) }, `etcd.requestTimeout: invalid value "-1s": must be positive`},
		{"cert without key", func(c *Config) { c.Etcd.Endpoints = []string{"https://a:1"}; c.Etcd.TLS.CertFile = "/c.pem" }, `etcd.tls.keyFile: required with etcd.tls.certFile ("/c.pem")`},
		{"key without cert", func(c *Config) { c.Etcd.Endpoints = []string{"https://a:1"}; c.Etcd.TLS.KeyFile = "/k.pem" }, `etcd.tls.certFile: required with etcd.tls.keyFile ("/k.pem")`},
		{"TLS with embedded", func(c *Config) {
			c.Etcd.Endpoints, c.Etcd.Embedded.Enabled, c.Etcd.TLS.CAFile = nil, true, "/ca.pem"
		}, `etcd.tls: set, but the embedded etcd (etcd.embedded.enabled) serves plain HTTP`},
		{"password without user", func(c *Config) { c.Etcd.Password = "s" }, `etcd.username: required with etcd.password`},
		// VPP
		{"no socket", func(c *Config) { c.VPP.Socket = "" }, `vpp.socket: required`},
		{"relative socket", func(c *Config) { c.VPP.Socket = "run/vpp/api.sock" }, `vpp.socket: invalid value "run/vpp/api.sock": want an absolute path`},
		{"socket dir", func(c *Config) { c.VPP.Socket = "/run/vpp/" }, `vpp.socket: invalid value "/run/vpp/": is a directory`},
		{"socket too long", func(c *Config) { c.VPP.Socket = "/" + strings.Repeat("s", 120) }, `vpp.socket: invalid value "/sss`},
		{"zero connect timeout", func(c *Config) { c.VPP.ConnectTimeout = 0 }, `vpp.connectTimeout: invalid value "0s": must be positive`},
		{"reconnect cap under initial", func(c *Config) { c.VPP.ReconnectBackoff.Max = Duration(time.Millisecond) }, `vpp.reconnectBackoff.max: invalid value "1ms": must be at least vpp.reconnectBackoff.initial (100ms)`},
		{"simulate", func(c *Config) { c.VPP.Simulate = "sometimes" }, `vpp.simulate: invalid value "sometimes": want auto, always or never`},
		// HTTP
		{"no http address", func(c *Config) { c.HTTP.Address = "" }, `http.address: required`},
		{"http no port", func(c *Config) { c.HTTP.Address = "9999" }, `http.address: invalid value "9999": want host:port or :port: missing port in address`},
		{"http bad port", func(c *Config) { c.HTTP.Address = ":http-alt" }, `http.address: invalid value ":http-alt": want host:port or :port: port "http-alt" is not a number`},
		{"http port too big", func(c *Config) { c.HTTP.Address = "0.0.0.0:70000" }, `http.address: invalid value "0.0.0.0:70000"`},
		// NAT44
		{"zero sessions", func(c *Config) { c.NAT44.SessionLimit = 0 }, `nat44.sessionLimit: invalid value 0: must be at least 1`},
		{"zero udp timeout", func(c *Config) { c.NAT44.Timeouts.UDP = 0 }, `nat44.timeouts.udp: invalid value "0s": must be positive`},
		{"fractional tcp timeout", func(c *Config) { c.NAT44.Timeouts.TCPEstablished = Duration(1500 * time.Millisecond) }, `nat44.timeouts.tcpEstablished: invalid value "1.5s": must be whole seconds`},
		{"huge transitory timeout", func(c *Config) { c.NAT44.Timeouts.TCPTransitory = Duration(200 * 365 * 24 * time.Hour) }, `nat44.timeouts.tcpTransitory: invalid value "1752000h0m0s": too long for VPP`},
		{"negative icmp timeout", func(c *Config) { c.NAT44.Timeouts.ICMP = Duration(-time.Second) }, `nat44.timeouts.icmp: invalid value "-1s": must be positive`},
		{"zero weight", func(c *Config) { c.NAT44.ServiceLocalEndpointWeight = 0 }, `nat44.serviceLocalEndpointWeight: invalid value 0: must be from 1 to 255`},
		{"empty tag", func(c *Config) { c.NAT44.PodInterfaceTag = "" }, `nat44.podInterfaceTag: invalid value "": required`},
		{"tag without pod", func(c *Config) { c.NAT44.PodInterfaceTag = "{{namespace}}" }, `nat44.podInterfaceTag: invalid value "{{namespace}}": want {{namespace}} and {{pod}} once each (found 1 and 0)`},
		{"tag twice", func(c *Config) { c.NAT44.PodInterfaceTag = "{{pod}}/{{namespace}}/{{pod}}" }, `(found 1 and 2)`},
		{"tag unknown placeholder", func(c *Config) { c.NAT44.PodInterfaceTag = "{{node}}/{{namespace}}/{{pod}}" }, `nat44.podInterfaceTag: invalid value "{{node}}/{{namespace}}/{{pod}}": unknown placeholder {{node}}`},
		{"tag unclosed", func(c *Config) { c.NAT44.PodInterfaceTag = "{{namespace}}/{{pod" }, `unclosed {{`},
		{"tag ambiguous separator", func(c *Config) { c.NAT44.PodInterfaceTag = "{{namespace}}-{{pod}}" }, `nat44.podInterfaceTag: invalid value "{{namespace}}-{{pod}}": between {{namespace}} and {{pod}} put a character`},
		// A NUL byte once passed for the {{namespace}} the check stands in for it
		// (found by FuzzTagParser): the agent's tag parser then had no namespace.
		{"tag with NUL", func(c *Config) { c.NAT44.PodInterfaceTag = "\x00/{{pod}}" }, `unprintable character '\x00' at byte 0`},
		{"tag not UTF-8", func(c *Config) { c.NAT44.PodInterfaceTag = "{{namespace}}/{{pod}}\xff" }, `not valid UTF-8`},
		// routing
		{"same VRFs", func(c *Config) { c.Routing.PodVRFID = 0 }, `routing.podVRFID: invalid value 0: must differ from routing.mainVRFID`},
		{"no-VRF main", func(c *Config) { c.Routing.MainVRFID = 1<<32 - 1 }, `routing.mainVRFID: invalid value 4294967295: is VPP's "no VRF"`},
		{"transport", func(c *Config) { c.Routing.NodeToNodeTransport = "srv6" }, `routing.nodeToNodeTransport: invalid value "srv6": want vxlan or nooverlay`},
		{"no host interconnect", func(c *Config) { c.Routing.HostInterconnectInterface = "" }, `routing.hostInterconnectInterface: required`},
		{"no BVI with vxlan", func(c *Config) { c.Routing.VXLANBVIInterface = "" }, `routing.vxlanBVIInterface: required with the vxlan transport`},
		{"BVI is the tap", func(c *Config) { c.Routing.VXLANBVIInterface = "tap0" }, `routing.vxlanBVIInterface: invalid value "tap0": is also routing.hostInterconnectInterface`},
		{"tenant VRF is the pod VRF", func(c *Config) { c.NAT44.ExternalIPTenantVRF = 1 }, `nat44.externalIPTenantVRF: invalid value 1: must be a VRF used for nothing else`},
		{"negative grace", func(c *Config) { c.VPP.PendingInterfaceGrace = -1 }, `vpp.pendingInterfaceGrace`},
		// IPAM
		{"no pod subnet", func(c *Config) { c.IPAM.PodSubnetCIDR = netip.Prefix{} }, `ipam.podSubnetCIDR: required`},
		{"IPv6 service range", func(c *Config) { c.IPAM.ServiceCIDR = pfx("fd00::/108") }, `ipam.serviceCIDR: invalid value fd00::/108: must be IPv4`},
		{"host bits", func(c *Config) { c.IPAM.PodSubnetCIDR = pfx("10.1.2.0/16") }, `ipam.podSubnetCIDR: invalid value 10.1.2.0/16: has host bits set (did you mean 10.1.0.0/16?)`},
		{"overlap", func(c *Config) { c.IPAM.VXLANCIDR = pfx("10.1.7.0/24") }, `ipam.vxlanCIDR: invalid value 10.1.7.0/24: overlaps ipam.podSubnetCIDR (10.1.0.0/16)`},
		{"per-node prefix not longer", func(c *Config) { c.IPAM.PodSubnetNodePrefixLength = 16 }, `ipam.podSubnetNodePrefixLength: invalid value 16: must be longer than ipam.podSubnetCIDR's /16`},
		{"per-node prefix too long", func(c *Config) { c.IPAM.PodSubnetNodePrefixLength = 30 }, `ipam.podSubnetNodePrefixLength: invalid value 30: at most 29`},
		{"host per-node prefix", func(c *Config) { c.IPAM.VPPHostSubnetNodePrefixLength = 8 }, `ipam.vppHostSubnetNodePrefixLength: invalid value 8: must be longer than ipam.vppHostSubnetCIDR's /16`},
		{"zero per-node prefix, no range", func(c *Config) { c.IPAM.VPPHostSubnetCIDR = netip.Prefix{}; c.IPAM.VPPHostSubnetNodePrefixLength = 0 }, `ipam.vppHostSubnetNodePrefixLength: invalid value 0: must be from 1 to 30`},
		{"IPv6 gateway", func(c *Config) { c.IPAM.DefaultGateway = addr("fe80::1") }, `ipam.defaultGateway: invalid value fe80::1: must be IPv4`},
		{"broadcast gateway", func(c *Config) { c.IPAM.DefaultGateway = addr("255.255.255.255") }, `ipam.defaultGateway: invalid value 255.255.255.255: not a unicast address`},
		// IPv6 (cnat)
		{"IPv4 pod range as v6", func(c *Config) { c.IPAM.PodSubnetCIDRv6 = pfx("10.2.0.0/16") }, `ipam.podSubnetCIDRv6: invalid value 10.2.0.0/16: must be IPv6`},
		{"4-in-6 service range", func(c *Config) { c.IPAM.ServiceCIDRv6 = pfx("::ffff:10.96.0.0/108") }, `ipam.serviceCIDRv6: invalid value ::ffff:10.96.0.0/108: must be IPv6`},
		{"v6 range host bits", func(c *Config) { c.IPAM.ServiceCIDRv6 = pfx("fd00:96::1/108") }, `ipam.serviceCIDRv6: invalid value fd00:96::1/108: has host bits set (did you mean fd00:96::/108?)`},
		{"link-local pod range", func(c *Config) { c.IPAM.PodSubnetCIDRv6 = pfx("fe80::/64") }, `ipam.podSubnetCIDRv6: invalid value fe80::/64: not a unicast range`},
		{"multicast service range", func(c *Config) { c.IPAM.ServiceCIDRv6 = pfx("ff05::/112") }, `ipam.serviceCIDRv6: invalid value ff05::/112: not a unicast range`},
		{"v6 range too wide", func(c *Config) { c.IPAM.PodSubnetCIDRv6 = pfx("::/0") }, `ipam.podSubnetCIDRv6: invalid value ::/0: not a unicast range`},
		{"v6 ranges overlap", func(c *Config) {
			c.IPAM.PodSubnetCIDRv6, c.IPAM.ServiceCIDRv6 = pfx("fd00:10::/48"), pfx("fd00:10:0:96::/108")
		}, `ipam.serviceCIDRv6: invalid value fd00:10:0:96::/108: overlaps ipam.podSubnetCIDRv6 (fd00:10::/48)`},
		{"interface ipv6CIDR is IPv4", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPv6CIDR: pfx("192.168.16.5/24")}}}
		}, `nodeConfig[0].mainInterface.ipv6CIDR: invalid value 192.168.16.5/24: must be IPv6`},
		{"interface ipv6CIDR link-local", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPv6CIDR: pfx("fe80::1/64")}}}
		}, `nodeConfig[0].mainInterface.ipv6CIDR: invalid value fe80::1/64: is link-local`},
		{"interface ipv6CIDR multicast", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", OtherInterfaces: []InterfaceConfig{{Name: "eth1", IPv6CIDR: pfx("ff02::1/64")}}}}
		}, `nodeConfig[0].otherInterfaces[0].ipv6CIDR: invalid value ff02::1/64: not a unicast address`},
		{"interface ipv6CIDR unspecified", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPv6CIDR: pfx("::/64")}}}
		}, `nodeConfig[0].mainInterface.ipv6CIDR: invalid value ::/64: not a unicast address`},
		{"interface ipv6CIDR subnet-router anycast", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPv6CIDR: pfx("2001:db8:16::/64")}}}
		}, `nodeConfig[0].mainInterface.ipv6CIDR: invalid value 2001:db8:16::/64: is the subnet's Subnet-Router anycast address, want a host address such as 2001:db8:16::1`},
		// NodeSync
		{"no state file", func(c *Config) { c.NodeSync.StateFile = "" }, `nodeSync.stateFile: required`},
		{"state file is a dir", func(c *Config) { c.NodeSync.StateFile = "/var/lib/contiv/" }, `nodeSync.stateFile: invalid value "/var/lib/contiv/": is a directory`},
		{"zero claim timeout", func(c *Config) { c.NodeSync.ClaimTimeout = 0 }, `nodeSync.claimTimeout: invalid value "0s": must be positive`},
		// per-node overrides
		{"override without name", func(c *Config) { c.NodeConfig = []NodeOverride{{}} }, `nodeConfig[0].nodeName: required`},
		{"override bad name", func(c *Config) { c.NodeConfig = []NodeOverride{{NodeName: "a_b"}} }, `nodeConfig[0].nodeName: invalid value "a_b": not a Kubernetes node name`},
		{"duplicate override", func(c *Config) { c.NodeConfig = []NodeOverride{{NodeName: "a"}, {NodeName: "b"}, {NodeName: "a"}} }, `nodeConfig[2].nodeName: invalid value "a": duplicate of nodeConfig[0]`},
		{"interface without name", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{IPCIDR: pfx("192.168.16.5/24")}}}
		}, `nodeConfig[0].mainInterface.name: required`},
		{"interface IP and DHCP", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPCIDR: pfx("192.168.16.5/24"), UseDHCP: true}}}
		}, `nodeConfig[0].mainInterface.ipCIDR: invalid value 192.168.16.5/24: must be empty when useDHCP is true`},
		{"interface network address", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPCIDR: pfx("192.168.16.0/24")}}}
		}, `nodeConfig[0].mainInterface.ipCIDR: invalid value 192.168.16.0/24: is the subnet's network address, want a host address such as 192.168.16.1`},
		{"interface broadcast address", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", OtherInterfaces: []InterfaceConfig{{Name: "eth1", IPCIDR: pfx("10.9.0.255/24")}}}}
		}, `nodeConfig[0].otherInterfaces[0].ipCIDR: invalid value 10.9.0.255/24: is the subnet's broadcast address`},
		{"interface IPv6", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", OtherInterfaces: []InterfaceConfig{{Name: "eth1", IPCIDR: pfx("fd00::5/64")}}}}
		}, `nodeConfig[0].otherInterfaces[0].ipCIDR: invalid value fd00::5/64: must be IPv4`},
		{"duplicate interface", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0"}, OtherInterfaces: []InterfaceConfig{{Name: "eth1"}, {Name: "eth0"}}}}
		}, `nodeConfig[0].otherInterfaces[1].name: invalid value "eth0": duplicate of nodeConfig[0].mainInterface.name`},
		{"gateway with DHCP", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", UseDHCP: true}, Gateway: addr("192.168.16.1")}}
		}, `nodeConfig[0].gateway: invalid value 192.168.16.1: must be empty when mainInterface.useDHCP is true`},
		{"gateway is own address", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPCIDR: pfx("192.168.16.1/24")}, Gateway: addr("192.168.16.1")}}
		}, `nodeConfig[0].gateway: invalid value 192.168.16.1: is mainInterface's own address`},
		{"gateway multicast", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", Gateway: addr("224.0.0.1"), NATExternalTraffic: &yes}}
		}, `nodeConfig[0].gateway: invalid value 224.0.0.1: not a unicast address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validDefaults()
			tt.change(&c)
			err := c.Validate()
			wantErrs(t, err, tt.want)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path == "" {
				t.Errorf("no FieldError with a path in %v", err)
			}
		})
	}
}

func TestValidateGoodVariants(t *testing.T) {
	pfx := netip.MustParsePrefix
	tests := []struct {
		name   string
		change func(c *Config)
	}{
		{"node name", func(c *Config) { c.NodeName = "worker-1.example.com" }},
		{"cluster name", func(c *Config) { c.ClusterName = "prod-eu.2" }},
		{"cluster name of 32", func(c *Config) { c.ClusterName = strings.Repeat("a", 32) }},
		{"cluster name of 1", func(c *Config) { c.ClusterName = "a" }},
		{"external etcd", func(c *Config) {
			c.Etcd.Endpoints = []string{"https://etcd-0:2379", "10.0.0.2:2379", "[fd00::1]:2379", "unix:///run/etcd.sock"}
			c.Etcd.TLS = TLSConfig{CAFile: "/ca", CertFile: "/c", KeyFile: "/k"}
			c.Etcd.Username, c.Etcd.Password = "agent", "secret"
		}},
		{"embedded on a free port", func(c *Config) {
			c.Etcd.Endpoints, c.Etcd.Embedded.Enabled, c.Etcd.Embedded.ClientURL = nil, true, ""
		}},
		{"no periodic resync", func(c *Config) { c.Controller.ResyncInterval = 0 }},
		{"http on one address", func(c *Config) { c.HTTP.Address = "127.0.0.1:0" }},
		{"http on IPv6", func(c *Config) { c.HTTP.Address = "[::1]:9999" }},
		{"tag with prefix", func(c *Config) { c.NAT44.PodInterfaceTag = "pod:{{pod}}@{{namespace}}" }},
		{"nooverlay", func(c *Config) { c.Routing.NodeToNodeTransport = TransportNoOverlay }},
		{"big cluster", func(c *Config) {
			c.IPAM.PodSubnetCIDR = pfx("10.128.0.0/9")
			c.IPAM.PodSubnetNodePrefixLength = 25
		}},
		{"IPv6 node side for cnat", func(c *Config) {
			c.Renderer = RendererCNAT
			c.IPAM.PodSubnetCIDRv6, c.IPAM.ServiceCIDRv6 = pfx("fd00:10:1::/56"), pfx("fd00:96::/108")
			c.NodeConfig = []NodeOverride{{
				NodeName:        "a",
				MainInterface:   &InterfaceConfig{Name: "eth0", UseDHCP: true, IPv6CIDR: pfx("2001:db8:16::1/64")},
				OtherInterfaces: []InterfaceConfig{{Name: "eth1", IPv6CIDR: pfx("fd00:16::1/127")}},
			}}
		}},
		{"point-to-point interface", func(c *Config) {
			c.NodeConfig = []NodeOverride{{NodeName: "a", MainInterface: &InterfaceConfig{Name: "eth0", IPCIDR: pfx("10.9.0.0/31")}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validDefaults()
			tt.change(&c)
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := validDefaults()
	c.Log.Level = "loud"
	c.NAT44.ServiceLocalEndpointWeight = 0
	c.IPAM.ServiceCIDR = netip.MustParsePrefix("10.96.0.1/12")
	c.NodeConfig = []NodeOverride{{}}
	err := c.Validate()
	wantErrs(t, err, "log.level", "nat44.serviceLocalEndpointWeight", "ipam.serviceCIDR", "nodeConfig[0].nodeName")
	if n := len(strings.Split(err.Error(), "\n")); n != 4 {
		t.Errorf("got %d problems, want 4:\n%v", n, err)
	}
}
