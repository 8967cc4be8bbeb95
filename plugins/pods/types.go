package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
)

// Errors callers (the CNI socket) branch on.
var (
	// ErrInvalid: the request is malformed; the error names the field.
	ErrInvalid = errors.New("invalid request")
	// ErrNotReady: the agent cannot wire pods yet (no address plan, IPAM
	// not loaded, the event loop not started, or the deadline passed
	// before the request was taken in). Retry later.
	ErrNotReady = errors.New("agent not ready")
	// ErrNetnsGone: the pod's netns does not exist (any more).
	ErrNetnsGone = errors.New("pod network namespace gone")
	// ErrCheckFailed: CHECK found the pod's wiring incomplete.
	ErrCheckFailed = errors.New("pod check failed")
)

// Request is one CNI call as the plugin forwards it to the agent.
type Request = cniapi.Request

// podOf is the pod of the request.
func podOf(r Request) addrplan.PodID { return addrplan.PodID{Namespace: r.Namespace, Name: r.Pod} }

// dnsLabel is a Kubernetes name (a DNS subdomain: lower-case alphanumerics,
// '-' and '.').
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// containerID: CNI's rule (alphanumerics, then '_', '.', '-').
var containerID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// Validate checks the fields an operation needs; the error names the
// first one that is wrong and wraps ErrInvalid.
func validate(r Request, needNetns bool) error {
	bad := func(field, why string) error { return fmt.Errorf("%s: %s: %w", field, why, ErrInvalid) }
	switch {
	case r.ContainerID == "":
		return bad("containerID (CNI_CONTAINERID)", "missing")
	case !containerID.MatchString(r.ContainerID):
		return bad("containerID (CNI_CONTAINERID)", fmt.Sprintf("%q is not a container ID", r.ContainerID))
	case r.IfName == "":
		return bad("ifName (CNI_IFNAME)", "missing")
	case len(r.IfName) > 15 || !containerID.MatchString(r.IfName):
		return bad("ifName (CNI_IFNAME)", fmt.Sprintf("%q is not an interface name", r.IfName))
	case r.Namespace == "":
		return bad("podNamespace (K8S_POD_NAMESPACE in CNI_ARGS)", "missing")
	case !dnsLabel.MatchString(r.Namespace):
		return bad("podNamespace (K8S_POD_NAMESPACE in CNI_ARGS)", fmt.Sprintf("%q is not a namespace name", r.Namespace))
	case r.Pod == "":
		return bad("podName (K8S_POD_NAME in CNI_ARGS)", "missing")
	case !dnsLabel.MatchString(r.Pod):
		return bad("podName (K8S_POD_NAME in CNI_ARGS)", fmt.Sprintf("%q is not a pod name", r.Pod))
	case needNetns && r.Netns == "":
		return bad("netns (CNI_NETNS)", "missing")
	}
	return nil
}

// Result is what ADD gives the pod.
type Result = cniapi.Result

// VPP is the pod manager's port to VPP (implemented by vpp.Pods).
type VPP interface {
	EnsureGateway(ctx context.Context, tag string, vrf uint32, gw netip.Prefix) (uint32, error)
	AddPodInterface(ctx context.Context, l vpp.PodLink) (vpp.PodInterface, error)
	AddPodInterfaces(ctx context.Context, ls []vpp.PodLink) ([]vpp.PodInterface, []error)
	RewirePodInterface(ctx context.Context, idx uint32, l vpp.PodLink) error
	DeletePodInterface(ctx context.Context, l vpp.PodLink, idx uint32) error
	ListInterfaces(ctx context.Context) ([]vpp.PodInterfaceState, error)
	HasPodRoute(ctx context.Context, vrf, idx uint32, ip netip.Addr) (bool, error)
}

var _ VPP = (*vpp.Pods)(nil)

// Kind values of the configuration (contivconf's cni.podInterface).
const (
	KindAuto     = "auto"
	KindTap      = string(vpp.PodLinkTap)
	KindAFPacket = string(vpp.PodLinkAFPacket)
)

// vhostNet is the device a tap v2 needs (a variable for tests).
var vhostNet = "/dev/vhost-net"

// ResolveKind turns the configured kind into the one used: auto is a tap
// where /dev/vhost-net exists, an af_packet interface on a veth pair
// otherwise. It also says why, for logs and contivctl doctor: a tap
// configured where /dev/vhost-net is missing is used all the same (VPP,
// not the agent, opens the device, and may see one the agent's container
// does not), with a warning, since VPP refuses every tap without it
// (VPP's tap.c: tap_create_v3 answers -11).
func ResolveKind(configured string) (vpp.PodLinkKind, string, error) {
	_, err := os.Stat(vhostNet)
	have := err == nil
	switch configured {
	case "", KindAuto:
		if have {
			return vpp.PodLinkTap, "auto: " + vhostNet + " exists", nil
		}
		return vpp.PodLinkAFPacket, "auto: no " + vhostNet, nil
	case KindTap:
		if !have {
			return vpp.PodLinkTap, "configured, but no " + vhostNet + " here: VPP refuses every tap without it", nil
		}
		return vpp.PodLinkTap, "configured", nil
	case KindAFPacket:
		return vpp.PodLinkAFPacket, "configured", nil
	}
	return "", "", fmt.Errorf("pod interface kind %q: want auto, tap or af_packet", configured)
}

// GatewayTag tags the loopback that lends pod interfaces the gateway.
const GatewayTag = "contiv-pod-gateway"

// DefaultDeadline bounds one CNI request in the agent.
const DefaultDeadline = 20 * time.Second

// Params configures a Manager.
type Params struct {
	// VPP programs pod interfaces; required.
	VPP VPP
	// Allocator gives IPAM's allocator (nil while not loaded); required.
	Allocator func() *addrplan.Allocator
	// Plan gives the node's address plan (nil before it is known);
	// required.
	Plan func() *addrplan.Plan
	// VRF is the pod VRF.
	VRF uint32
	// Tag gives the tag of a pod's interface; nil means "<namespace>/<pod>".
	Tag func(namespace, pod string) string
	// Kind is the pod interface kind (ResolveKind).
	Kind vpp.PodLinkKind
	// StateDir keeps one record per wired pod; required.
	StateDir string
	// Refresh, when set, re-reads the agent's interface cache after a pod
	// interface was made or removed (before the service processor is told).
	Refresh func(context.Context) error
	// StartupInterfaces, when set, names the interfaces VPP's startup
	// configuration makes (the node's own: main NIC, host interconnect,
	// VXLAN BVI, other NICs). Pods whose interface VPP lost (a VPP
	// restart) are re-created only once VPP has them all: made before,
	// a pod's interface or the gateway loopback would take an index or a
	// name (loop0) the startup configuration's own interfaces get, and its
	// commands would configure the agent's interface instead.
	StartupInterfaces func() []string
	// KernelConcurrency bounds the pods whose kernel side (veth, eth0) is
	// worked on at once, off the controller's loop (default
	// DefaultKernelConcurrency).
	KernelConcurrency int
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}
