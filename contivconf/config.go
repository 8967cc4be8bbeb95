package contivconf

import (
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
)

// Config is the whole configuration of contiv-agent. Its YAML form uses the
// json field names below; deploy/examples/agent.yaml shows every field with
// its default.
type Config struct {
	// NodeName is this node's Kubernetes name. Empty means the host name
	// (Resolve fills it in).
	NodeName string `json:"nodeName"`
	// ClusterName names this Kubernetes cluster to the VPPs its agents
	// program: the agent marks the VPP it manages with it and its node name
	// (plugins/vpp owner.go), and refuses a VPP marked by another cluster's
	// agent. It must differ between clusters whose agents may reach the
	// same VPP, and stay the same across restarts and etcd restores.
	// Default DefaultClusterName.
	ClusterName string `json:"clusterName"`
	// Log configures the agent's structured logs.
	Log LogConfig `json:"log"`
	// Controller configures the event loop.
	Controller ControllerConfig `json:"controller"`
	// Etcd says where the cluster state is kept.
	Etcd EtcdConfig `json:"etcd"`
	// VPP says how to reach VPP's binary API.
	VPP VPPConfig `json:"vpp"`
	// HTTP configures the server of REST, metrics and probes.
	HTTP HTTPConfig `json:"http"`
	// Renderer is how services are rendered into VPP: nat44 (the NAT44-ED
	// plugin, the default) or cnat (VPP's cnat plugin).
	Renderer string `json:"renderer"`
	// NAT44 configures how services are rendered into VPP's NAT44-ED plugin.
	NAT44 NAT44Config `json:"nat44"`
	// Routing holds the VRFs and the node-to-node transport.
	Routing RoutingConfig `json:"routing"`
	// IPAM is the cluster's address plan.
	IPAM IPAMConfig `json:"ipam"`
	// NodeSync configures node ID allocation.
	NodeSync NodeSyncConfig `json:"nodeSync"`
	// NodeConfig lists per-node overrides; see ForNode.
	NodeConfig []NodeOverride `json:"nodeConfig"`
	// CNI configures the pod manager and the contiv-cni plugin's socket.
	CNI CNIConfig `json:"cni"`
}

// DefaultClusterName is Config.ClusterName's default (the name
// kube-controller-manager's --cluster-name also defaults to).
const DefaultClusterName = "kubernetes"

// Renderers accepted by Config.Renderer.
const (
	RendererNAT44 = "nat44"
	RendererCNAT  = "cnat"
)

// Log levels and formats accepted by LogConfig.
const (
	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelWarn  = "warn"
	LogLevelError = "error"

	LogFormatText = "text"
	LogFormatJSON = "json"
)

// LogConfig configures logging.
type LogConfig struct {
	// Level is debug, info, warn or error. Per-object detail is at debug.
	Level string `json:"level"`
	// Format is text or json.
	Format string `json:"format"`
}

// SlogLevel returns the slog level of l.Level (info when it is unknown;
// Validate refuses unknown levels).
func (l LogConfig) SlogLevel() slog.Level {
	switch l.Level {
	case LogLevelDebug:
		return slog.LevelDebug
	case LogLevelWarn:
		return slog.LevelWarn
	case LogLevelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// NewHandler returns a slog handler writing to w in l's format and level.
func (l LogConfig) NewHandler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: l.SlogLevel()}
	if l.Format == LogFormatJSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// Backoff is an exponential backoff: the first wait is Initial, each next
// one doubles, none exceeds Max.
type Backoff struct {
	// Initial is the first wait; must be positive.
	Initial Duration `json:"initial"`
	// Max caps the wait; must be at least Initial.
	Max Duration `json:"max"`
}

// ControllerConfig configures the event loop.
type ControllerConfig struct {
	// MinBatchInterval is the least time between two applied batches;
	// 0 applies as soon as possible.
	MinBatchInterval Duration `json:"minBatchInterval"`
	// HealingBackoff spaces the healing resyncs after failed applies.
	HealingBackoff Backoff `json:"healingBackoff"`
	// ResyncInterval is the period of the full reconcile that repairs drift;
	// 0 disables it.
	ResyncInterval Duration `json:"resyncInterval"`
	// StartupTimeout bounds the start: connecting to etcd and VPP, claiming
	// the node ID and applying the first full snapshot.
	StartupTimeout Duration `json:"startupTimeout"`
	// BatchHold batches changes that queue up: once the loop finds more
	// than one change queued, its next apply waits until BatchHold after
	// the last; a lone change is never held. 0 turns it off.
	BatchHold Duration `json:"batchHold"`
	// HistoryCheck is how often a running watch checks that etcd still
	// holds the history it follows (an etcd restored or wiped behind a
	// proxy tier is noticed and listed again); 0 turns it off.
	HistoryCheck Duration `json:"historyCheck"`
	// StartupHeapMiB: from the start to the first full apply, the agent
	// collects no garbage while its memory grows by less than this many MiB
	// (the start builds the whole state; at W(50 000) it allocates ~270
	// MiB); a collection then restores the runtime's own settings. 0 turns
	// it off.
	StartupHeapMiB int `json:"startupHeapMiB"`
}

// EtcdConfig says where the cluster state is kept.
type EtcdConfig struct {
	// Endpoints of an etcd cluster ("http://host:port", "https://host:port"
	// or "host:port"); required unless Embedded.Enabled.
	Endpoints []string `json:"endpoints"`
	// Embedded configures an embedded etcd, run only when enabled.
	Embedded EmbeddedEtcdConfig `json:"embedded"`
	// DialTimeout bounds connecting to etcd.
	DialTimeout Duration `json:"dialTimeout"`
	// RequestTimeout bounds one etcd request.
	RequestTimeout Duration `json:"requestTimeout"`
	// TLS holds the client's certificate files; all empty means plain
	// connections.
	TLS TLSConfig `json:"tls"`
	// Username and Password authenticate to etcd; empty means none.
	Username string `json:"username"`
	// Password goes with Username. Prefer the CONTIV_ETCD_PASSWORD
	// environment variable to writing it in the file.
	Password string `json:"password"`
}

// UseEmbedded reports whether the agent runs its own embedded etcd.
func (e EtcdConfig) UseEmbedded() bool { return e.Embedded.Enabled }

// EmbeddedEtcdConfig configures the embedded etcd.
type EmbeddedEtcdConfig struct {
	// Enabled runs a single-member etcd inside the agent (development,
	// make run): an explicit choice, never a fallback, as a DaemonSet's
	// agents must share one etcd.
	Enabled bool `json:"enabled"`
	// DataDir holds the embedded etcd's data.
	DataDir string `json:"dataDir"`
	// ClientURL is where it serves clients, "http://IP:port"; empty picks a
	// free loopback port.
	ClientURL string `json:"clientURL"`
}

// TLSConfig names the files of a TLS client.
type TLSConfig struct {
	// CAFile is the PEM bundle of trusted CAs; empty uses the system's.
	CAFile string `json:"caFile"`
	// CertFile is the client certificate; needs KeyFile.
	CertFile string `json:"certFile"`
	// KeyFile is the client certificate's key; needs CertFile.
	KeyFile string `json:"keyFile"`
}

// Enabled reports whether any TLS file is set.
func (t TLSConfig) Enabled() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// SimulateMode says when the agent runs against the simulated VPP.
type SimulateMode string

// Simulate modes.
const (
	// SimulateAuto simulates VPP when its API socket is absent.
	SimulateAuto SimulateMode = "auto"
	// SimulateAlways always simulates VPP (nothing forwards packets).
	SimulateAlways SimulateMode = "always"
	// SimulateNever requires a real VPP.
	SimulateNever SimulateMode = "never"
)

// VPPConfig says how to reach VPP.
type VPPConfig struct {
	// Socket is the path of VPP's binary API socket.
	Socket string `json:"socket"`
	// ConnectTimeout bounds one connection attempt.
	ConnectTimeout Duration `json:"connectTimeout"`
	// ReconnectBackoff spaces reconnection attempts after VPP goes away.
	ReconnectBackoff Backoff `json:"reconnectBackoff"`
	// Simulate is never (the default: wait for a real VPP), auto (simulate
	// when the socket is absent at start) or always.
	Simulate SimulateMode `json:"simulate"`
	// PendingInterfaceGrace is how long a NAT44 interface feature may wait
	// for its interface to appear in VPP before the agent reports not ready.
	PendingInterfaceGrace Duration `json:"pendingInterfaceGrace"`
	// HoldMappings is how long, at most, the NAT44 renderer holds its
	// mapping operations while an interface of the node's own is missing
	// (after a VPP restart, until its startup configuration has made the
	// interfaces): their features go first, since a feature enabled later
	// walks every mapping. 0 holds nothing.
	HoldMappings Duration `json:"holdMappings"`
	// TakeOver lets the agent program a VPP that another agent (another
	// node name or cluster) marked as its own; by default it refuses it
	// and reports not ready, naming the other owner.
	TakeOver bool `json:"takeOver"`
	// AllowUnsupported programs a VPP release with a renderer known not to
	// work on it (none today: docs/vpp-versions.md), for work on that
	// renderer; by default the agent refuses such a VPP and reports not
	// ready, naming the release and the reason.
	AllowUnsupported bool `json:"allowUnsupported"`
}

// Simulated reports whether the agent should use the simulated VPP, given
// whether the API socket exists.
func (v VPPConfig) Simulated(socketPresent bool) bool {
	switch v.Simulate {
	case SimulateAlways:
		return true
	case SimulateNever:
		return false
	}
	return !socketPresent
}

// HTTPConfig configures the agent's HTTP server.
type HTTPConfig struct {
	// Address is the listen address of REST, /metrics, /healthz and
	// /readyz, "host:port" or ":port".
	Address string `json:"address"`
	// ProxyHealthAddress is where kube-proxy's node health endpoint
	// (/healthz, /livez) is served, "host:port" or ":port"; "off" serves
	// none.
	ProxyHealthAddress string `json:"proxyHealthAddress"`
	// ServiceHealthAddress is the IP the health checks of LoadBalancer
	// services (healthCheckNodePort) are served on; empty: the host end of
	// the host interconnect, where VPP brings them.
	ServiceHealthAddress netip.Addr `json:"serviceHealthAddress,omitzero"`
}

// NAT44Config configures the NAT44-ED rendering of services. NAT44
// forwarding (traffic matching no mapping passes untranslated) is always on
// and not configurable: plain pod-to-pod traffic needs it.
type NAT44Config struct {
	// SessionLimit is the most NAT sessions per VPP worker thread.
	SessionLimit uint32 `json:"sessionLimit"`
	// Timeouts are the idle timeouts of NAT sessions (whole seconds).
	Timeouts NATTimeouts `json:"timeouts"`
	// ServiceLocalEndpointWeight is the load-balancing weight of a backend
	// on this node; remote backends weigh 1. From 1 to 255. VPP 25.02 holds
	// at most 255 weight units per NAT44 frontend, so each local backend
	// takes this many of them and fewer remote backends fit; changing it
	// re-adds every local backend (its sessions are cut).
	ServiceLocalEndpointWeight uint8 `json:"serviceLocalEndpointWeight"`
	// NATExternalTraffic source-NATs traffic leaving the cluster through the
	// default interface; nodeConfig can override it per node.
	NATExternalTraffic bool `json:"natExternalTraffic"`
	// ExternalIPTenantVRF is an otherwise unused VRF: with NATExternalTraffic,
	// every ExternalIP and LoadBalancer IP served by the node is added to the
	// NAT pool in this VRF, which keeps pod-to-external-IP traffic working
	// and is never used to source-NAT anything (see docs/vpp-nat44.md).
	ExternalIPTenantVRF uint32 `json:"externalIPTenantVRF"`
	// PodInterfaceTag is the format of the tag the CNI gives a pod's VPP
	// interface: text with the placeholders {{namespace}} and {{pod}}, both
	// required, separated by a character that cannot appear in Kubernetes
	// names, such as '/'.
	PodInterfaceTag string `json:"podInterfaceTag"`
}

// Placeholders of NAT44Config.PodInterfaceTag.
const (
	TagNamespace = "{{namespace}}"
	TagPod       = "{{pod}}"
)

// InterfaceTag returns the tag of the VPP interface of pod namespace/pod.
func (n NAT44Config) InterfaceTag(namespace, pod string) string {
	return strings.NewReplacer(TagNamespace, namespace, TagPod, pod).Replace(n.PodInterfaceTag)
}

// NATTimeouts are NAT session idle timeouts.
type NATTimeouts struct {
	// UDP sessions.
	UDP Duration `json:"udp"`
	// TCPEstablished is for established TCP sessions.
	TCPEstablished Duration `json:"tcpEstablished"`
	// TCPTransitory is for TCP sessions being opened or closed.
	TCPTransitory Duration `json:"tcpTransitory"`
	// ICMP sessions.
	ICMP Duration `json:"icmp"`
}

// Transport is how traffic between nodes travels.
type Transport string

// Node-to-node transports.
const (
	// TransportVXLAN tunnels pod traffic between nodes in VXLAN.
	TransportVXLAN Transport = "vxlan"
	// TransportNoOverlay routes pod traffic between nodes unencapsulated.
	TransportNoOverlay Transport = "nooverlay"
)

// RoutingConfig holds the VRFs and the node-to-node transport.
type RoutingConfig struct {
	// MainVRFID is the VRF of the node's own and host addresses.
	MainVRFID uint32 `json:"mainVRFID"`
	// PodVRFID is the VRF of pod addresses; must differ from MainVRFID.
	PodVRFID uint32 `json:"podVRFID"`
	// NodeToNodeTransport is vxlan or nooverlay.
	NodeToNodeTransport Transport `json:"nodeToNodeTransport"`
	// HostInterconnectInterface is the VPP name of the interface to the
	// host's network stack (a tap VPP names tapN); nodeConfig can override it.
	HostInterconnectInterface string `json:"hostInterconnectInterface"`
	// VXLANBVIInterface is the VPP name of the VXLAN overlay's BVI (VPP names
	// it bviN or loopN); used with the vxlan transport; nodeConfig can
	// override it.
	VXLANBVIInterface string `json:"vxlanBVIInterface"`
}

// IPAMConfig is the cluster's address plan: IPv4, every node taking one
// subnet of each per-node range, chosen by its node ID; and optional IPv6
// ranges, which only the cnat renderer uses (nat44 ignores them).
type IPAMConfig struct {
	// PodSubnetCIDR is the range of all pod subnets.
	PodSubnetCIDR netip.Prefix `json:"podSubnetCIDR"`
	// PodSubnetNodePrefixLength is the prefix length of one node's pod
	// subnet; longer than PodSubnetCIDR's, at most 29.
	PodSubnetNodePrefixLength int `json:"podSubnetNodePrefixLength"`
	// VPPHostSubnetCIDR is the range of the VPP-to-host interconnects.
	VPPHostSubnetCIDR netip.Prefix `json:"vppHostSubnetCIDR"`
	// VPPHostSubnetNodePrefixLength is the prefix length of one node's
	// VPP-to-host subnet; longer than VPPHostSubnetCIDR's, at most 30.
	VPPHostSubnetNodePrefixLength int `json:"vppHostSubnetNodePrefixLength"`
	// NodeInterconnectCIDR gives nodes their main interface address when
	// neither nodeConfig nor DHCP does.
	NodeInterconnectCIDR netip.Prefix `json:"nodeInterconnectCIDR"`
	// VXLANCIDR gives nodes their VXLAN BVI address.
	VXLANCIDR netip.Prefix `json:"vxlanCIDR"`
	// ServiceCIDR is the cluster's service IP range (kube-apiserver's
	// --service-cluster-ip-range).
	ServiceCIDR netip.Prefix `json:"serviceCIDR"`
	// DefaultGateway is the nodes' default gateway; empty means none.
	DefaultGateway netip.Addr `json:"defaultGateway"`
	// PodSubnetCIDRv6 is the cluster's IPv6 pod range; empty means none.
	// The cnat renderer excludes it from source NAT; IPAM does not
	// allocate from it.
	PodSubnetCIDRv6 netip.Prefix `json:"podSubnetCIDRv6"`
	// ServiceCIDRv6 is the cluster's IPv6 service range (the IPv6 half of
	// kube-apiserver's --service-cluster-ip-range); empty means none. The
	// cnat renderer excludes it from source NAT and owns the translations
	// in it.
	ServiceCIDRv6 netip.Prefix `json:"serviceCIDRv6"`
}

// NodeSyncConfig configures node ID allocation.
type NodeSyncConfig struct {
	// StateFile keeps this node's ID on local disk, so that the node claims
	// the same ID again even if etcd's data is lost.
	StateFile string `json:"stateFile"`
	// ClaimTimeout bounds claiming a node ID in etcd.
	ClaimTimeout Duration `json:"claimTimeout"`
}

// InterfaceConfig is one VPP interface of a node.
type InterfaceConfig struct {
	// Name is the VPP interface name, e.g. "GigabitEthernet0/8/0".
	Name string `json:"name"`
	// IPCIDR is the interface's address with its subnet's prefix length,
	// e.g. 192.168.16.1/24; empty with UseDHCP or to let IPAM choose.
	IPCIDR netip.Prefix `json:"ipCIDR"`
	// UseDHCP takes the (IPv4) address from DHCP.
	UseDHCP bool `json:"useDHCP"`
	// IPv6CIDR is the interface's IPv6 address with its subnet's prefix
	// length, e.g. 2001:db8:16::1/64; empty means none. On the main
	// interface it is the node's IPv6 source-NAT address under the cnat
	// renderer (nat44 ignores it); every interface's IPv6 subnet is
	// excluded from cnat's source NAT.
	IPv6CIDR netip.Prefix `json:"ipv6CIDR"`
}

// NodeOverride is one entry of Config.NodeConfig: settings of one node
// that replace the cluster-wide ones. Unset fields keep the cluster-wide
// value.
type NodeOverride struct {
	// NodeName is the node's Kubernetes name; required and unique.
	NodeName string `json:"nodeName"`
	// MainInterface is the interface to the node network; unset lets the
	// agent use the VPP interface that holds the node's IP (and say which),
	// and IPAM choose that IP.
	MainInterface *InterfaceConfig `json:"mainInterface,omitempty"`
	// OtherInterfaces are further NICs VPP owns.
	OtherInterfaces []InterfaceConfig `json:"otherInterfaces,omitempty"`
	// Gateway replaces ipam.defaultGateway.
	Gateway netip.Addr `json:"gateway,omitzero"`
	// NATExternalTraffic replaces nat44.natExternalTraffic.
	NATExternalTraffic *bool `json:"natExternalTraffic,omitempty"`
	// HostInterconnectInterface replaces routing.hostInterconnectInterface.
	HostInterconnectInterface string `json:"hostInterconnectInterface,omitempty"`
	// VXLANBVIInterface replaces routing.vxlanBVIInterface.
	VXLANBVIInterface string `json:"vxlanBVIInterface,omitempty"`
}

// NodeConfig is the effective configuration of one node: the cluster-wide
// settings with the node's override applied.
type NodeConfig struct {
	// NodeName is the node's name.
	NodeName string
	// MainInterface is the node's main interface; an empty Name lets the
	// agent choose.
	MainInterface InterfaceConfig
	// OtherInterfaces are further NICs VPP owns.
	OtherInterfaces []InterfaceConfig
	// Gateway is the default gateway; invalid (zero) means none, as when
	// the main interface uses DHCP.
	Gateway netip.Addr
	// NATExternalTraffic source-NATs traffic leaving the cluster.
	NATExternalTraffic bool
	// HostInterconnectInterface and VXLANBVIInterface are the VPP names of
	// the host interconnect and of the VXLAN BVI.
	HostInterconnectInterface string
	VXLANBVIInterface         string
}

// ForNode returns the configuration of node name: the cluster-wide settings
// with name's entry of NodeConfig, if any, merged on top. The result shares
// no memory with c.
func (c Config) ForNode(name string) NodeConfig {
	n := NodeConfig{
		NodeName:           name,
		Gateway:            c.IPAM.DefaultGateway,
		NATExternalTraffic: c.NAT44.NATExternalTraffic,

		HostInterconnectInterface: c.Routing.HostInterconnectInterface,
		VXLANBVIInterface:         c.Routing.VXLANBVIInterface,
	}
	i := slices.IndexFunc(c.NodeConfig, func(o NodeOverride) bool { return o.NodeName == name })
	if i < 0 {
		return n
	}
	o := c.NodeConfig[i]
	if o.MainInterface != nil {
		n.MainInterface = *o.MainInterface
		if n.MainInterface.UseDHCP {
			n.Gateway = netip.Addr{} // DHCP supplies it
		}
	}
	n.OtherInterfaces = slices.Clone(o.OtherInterfaces)
	if o.Gateway.IsValid() {
		n.Gateway = o.Gateway
	}
	if o.NATExternalTraffic != nil {
		n.NATExternalTraffic = *o.NATExternalTraffic
	}
	if o.HostInterconnectInterface != "" {
		n.HostInterconnectInterface = o.HostInterconnectInterface
	}
	if o.VXLANBVIInterface != "" {
		n.VXLANBVIInterface = o.VXLANBVIInterface
	}
	return n
}

// Redacted returns a copy of c safe to log or serve: the etcd password is
// replaced by "<redacted>".
func (c Config) Redacted() Config {
	if c.Etcd.Password != "" {
		c.Etcd.Password = "<redacted>"
	}
	c.Etcd.Endpoints = slices.Clone(c.Etcd.Endpoints)
	c.NodeConfig = slices.Clone(c.NodeConfig)
	return c
}
