package restapi

import (
	"net/netip"

	"contiv.dev/vpp/agent/healthcheck"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// IPAMView is the /v1/ipam view: this node's address plan and the pod IPs
// allocated, by "namespace/pod" (null before IPAM has started).
type IPAMView struct {
	NodeID           uint32                `json:"nodeID"`
	PodSubnet        netip.Prefix          `json:"podSubnet"`
	PodSubnetAll     netip.Prefix          `json:"podSubnetAll"`
	PodGateway       netip.Addr            `json:"podGateway"`
	NATLoopback      netip.Addr            `json:"natLoopback"`
	HostInterconnect netip.Prefix          `json:"hostInterconnect"`
	NodeIP           netip.Prefix          `json:"nodeIP"`
	VXLANIP          netip.Prefix          `json:"vxlanIP"`
	ServiceCIDR      netip.Prefix          `json:"serviceCIDR"`
	Pods             map[string]netip.Addr `json:"pods"`
}

// StatusView is the /v1/status view: this node, readiness, the
// controller, the VPP connection and the NAT44 apply step's counters.
// Note says loudly when the VPP is simulated.
type StatusView struct {
	Node     string   `json:"node"`
	NodeID   uint32   `json:"nodeID"`
	Ready    bool     `json:"ready"`
	NotReady []string `json:"notReady,omitempty"`
	// FirstSyncApplied is set once the controller applied its first full
	// sync, also while it keeps that state because etcd's last listing
	// was held (Controller.Ready is then false; NotReady says why).
	FirstSyncApplied bool              `json:"firstSyncApplied"`
	Controller       controller.Status `json:"controller"`
	VPP              vpp.Status        `json:"vpp"`
	NAT44            nat44.Stats       `json:"nat44"`
	// CNAT is the cnat renderer's counters (renderer: cnat).
	CNAT *cnat.Stats `json:"cnat,omitempty"`
	// Pending lists the NAT44 interface features waiting for VPP to
	// create their interface.
	Pending []nat44.PendingInterface `json:"pending,omitempty"`
	// NodeSync and IPAM say what the agent still owes etcd.
	NodeSync nodesync.WriteStatus `json:"nodesync"`
	IPAM     ipam.WriteStatus     `json:"ipam"`
	// ProxyHealth is what the proxy health endpoint answers (/livez:
	// Healthy; /healthz: Healthy and NodeEligible, false while the node is
	// to be deleted by the cluster autoscaler).
	ProxyHealth *healthcheck.ProxyStatus `json:"proxyHealth,omitempty"`
	Note        string                   `json:"note"`
}
