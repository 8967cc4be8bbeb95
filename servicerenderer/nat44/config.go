package nat44

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/servicerenderer"
)

// AnyVRF is the VRF of pool addresses usable from every VRF.
const AnyVRF uint32 = 0xFFFFFFFF

// MaxTagLen is the longest tag VPP keeps (a 64-byte string with its NUL).
const MaxTagLen = 63

// maxTagPrefixLen leaves room in a tag for a truncated service ID and the
// hashed suffix that keeps it unique.
const maxTagPrefixLen = 32

// tagHashLen is the length of the hashed suffix of an over-long tag
// ("~" and 16 hex digits).
const tagHashLen = 17

// DefaultTagPrefix is the tag prefix of the mappings the agent owns.
const DefaultTagPrefix = "contiv:"

// DefaultExternalIPTenantVRF is the default Config.ExternalIPTenantVRF:
// ~0 - 1, a VRF nothing else uses (~0 itself means "any VRF").
// ASSUMPTION: VPP 25.02 takes it as a pool address's tenant VRF as it
// takes VRF 77, which no table had (corpus pools.jsonl).
const DefaultExternalIPTenantVRF uint32 = 0xFFFFFFFE

// affinityMark starts the affinity part of a tag: "|a" and the timeout in
// decimal. Kubernetes names never hold '|', and a hashed tag ends in hex.
const affinityMark = "|a"

// SNAT is the source NAT of traffic leaving the cluster through the
// default interface. The zero value disables it.
type SNAT struct {
	// Interface is the VPP name of the default interface: it gets the
	// output feature instead of the outside feature.
	Interface string
	// IP is the default interface's address: NAT pool address and the
	// address of the identity mappings that keep node traffic untranslated.
	IP netip.Addr
}

// Enabled tells whether external traffic is source-NATed.
func (s SNAT) Enabled() bool { return s.Interface != "" && s.IP.IsValid() }

// Config is the renderer's configuration; cmd fills it from contivconf and
// IPAM. It does not change while the agent runs.
type Config struct {
	// MainVRF is the VRF of the node's own and host addresses; PodVRF that
	// of the pods.
	MainVRF uint32
	PodVRF  uint32
	// RejectAnyTable is set when the connected VPP takes a reject route
	// in any FIB table (VPP 26.02 and later; the agent sets it from the
	// release of its first connection): the verdict routes are then made
	// in a main VRF other than 0 too (servicerenderer.Rejects). Unset,
	// a main VRF other than 0 gets none (VPP 25.02 crashes on one there).
	RejectAnyTable bool
	// Overlay is set when nodes reach each other's pods through VXLAN; when
	// unset, addresses outside this node's pod subnet are routed in the
	// main VRF.
	Overlay bool
	// LocalEndpointWeight is the probability of a local backend relative to
	// a remote one (which has 1); at least 1.
	LocalEndpointWeight uint8
	// NATLoopback is this node's twice-NAT address.
	NATLoopback netip.Addr
	// PodSubnet is this node's pod subnet.
	PodSubnet netip.Prefix
	// SNAT configures source NAT of external traffic; zero disables it.
	SNAT SNAT
	// SessionLimit is NAT44-ED's per-thread session limit.
	SessionLimit uint32
	// Timeouts are the NAT44-ED session timeouts.
	Timeouts Timeouts
	// TagPrefix starts the tag of every mapping the agent owns; mappings
	// whose tag does not start with it are never touched.
	TagPrefix string
	// ServiceCIDR is the cluster's service CIDR (IPv4). When set, a drop
	// route for it in the pod VRF and the main VRF makes traffic to a
	// frontend with no usable endpoint drop instead of leaking out of the
	// node; the zero value programs no route.
	ServiceCIDR netip.Prefix
	// ExternalIPTenantVRF is the tenant VRF of the pool address each
	// external and LoadBalancer IP gets under source NAT (FACTS §4): a VRF
	// no pod or interface uses, so that the address never serves for
	// source NAT. DefaultConfig sets DefaultExternalIPTenantVRF.
	ExternalIPTenantVRF uint32
	// HealthCheckTarget is the host-side address (in the main VRF) where
	// the agent answers load balancers' health checks: each service's
	// health-check NodePort on this node's own IPs is mapped to
	// HealthCheckTarget:port. The zero value maps none.
	HealthCheckTarget netip.Addr
	// NodeInterfaces are the interfaces the node's configuration needs
	// (main NIC, host interconnect, VXLAN BVI, other NICs). While one of
	// them waits for VPP to create it (Pending), as after a VPP restart,
	// mapping operations wait too, at most HoldMappings from the first
	// apply that held them: enabling an outside feature walks every
	// mapping VPP holds (FACTS §7), so the features go first (hold.go).
	// HoldMappings 0 holds nothing.
	NodeInterfaces []string
	HoldMappings   time.Duration
	// SourceRangeInterface is the main NIC, whose input ACL enforces
	// loadBalancerSourceRanges (sourceranges.go); "" enforces nothing.
	SourceRangeInterface string
}

// DefaultConfig is a configuration with VPP's default timeouts and the
// default tag prefix; callers fill in the node-specific addresses.
func DefaultConfig() Config {
	return Config{
		MainVRF:             0,
		PodVRF:              1,
		Overlay:             true,
		LocalEndpointWeight: 1,
		SessionLimit:        63 * 1024,
		Timeouts:            Timeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60},
		TagPrefix:           DefaultTagPrefix,
		ExternalIPTenantVRF: DefaultExternalIPTenantVRF,
	}
}

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid NAT44 configuration")

// Validate checks the configuration; the error names every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, value any, why string) {
		errs = append(errs, fmt.Errorf("%w: %s=%v: %s", ErrConfig, field, value, why))
	}
	if c.MainVRF == c.PodVRF {
		bad("podVRF", c.PodVRF, "must differ from mainVRF")
	}
	if c.LocalEndpointWeight == 0 {
		bad("serviceLocalEndpointWeight", 0, "must be at least 1")
	}
	if !c.NATLoopback.Is4() {
		bad("natLoopback", c.NATLoopback, "must be an IPv4 address")
	}
	if !c.PodSubnet.IsValid() || !c.PodSubnet.Addr().Is4() {
		bad("podSubnet", c.PodSubnet, "must be an IPv4 prefix")
	} else if c.NATLoopback.IsValid() && !c.PodSubnet.Contains(c.NATLoopback) {
		bad("natLoopback", c.NATLoopback, "must be inside podSubnet "+c.PodSubnet.String())
	}
	if (c.SNAT.Interface == "") != !c.SNAT.IP.IsValid() {
		bad("snat", fmt.Sprintf("%q/%v", c.SNAT.Interface, c.SNAT.IP), "interface and IP go together")
	} else if c.SNAT.IP.IsValid() && !c.SNAT.IP.Is4() {
		bad("snat.ip", c.SNAT.IP, "must be an IPv4 address")
	}
	if c.SessionLimit == 0 {
		bad("sessionLimit", 0, "must be positive")
	}
	if c.HoldMappings < 0 {
		bad("holdMappings", c.HoldMappings, "must not be negative")
	}
	if c.TagPrefix == "" || len(c.TagPrefix) > maxTagPrefixLen || strings.Contains(c.TagPrefix, "/") {
		bad("tagPrefix", fmt.Sprintf("%q", c.TagPrefix), fmt.Sprintf("must be 1 to %d bytes without '/'", maxTagPrefixLen))
	}
	if c.ServiceCIDR.IsValid() && !c.ServiceCIDR.Addr().Is4() {
		bad("serviceCIDR", c.ServiceCIDR, "must be an IPv4 prefix")
	}
	if c.HealthCheckTarget.IsValid() && (!c.HealthCheckTarget.Is4() || c.HealthCheckTarget.IsUnspecified()) {
		bad("healthCheckTarget", c.HealthCheckTarget, "must be a specified IPv4 address")
	}
	if c.SNAT.Enabled() {
		switch c.ExternalIPTenantVRF {
		case c.MainVRF, c.PodVRF, AnyVRF:
			bad("externalIPTenantVRF", c.ExternalIPTenantVRF, "must be a VRF nothing else uses (not mainVRF, podVRF or ~0)")
		}
	}
	return errors.Join(errs...)
}

// ServiceTag is the tag of a service's mappings: the prefix and
// "namespace/name", shortened with a hashed suffix when longer than VPP
// keeps. Tags of different services differ.
func ServiceTag(prefix string, id servicerenderer.ServiceID) string {
	name := id.String()
	if len(prefix)+len(name) <= MaxTagLen {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	keep := max(MaxTagLen-len(prefix)-tagHashLen, 0)
	return prefix + name[:keep] + "~" + hex.EncodeToString(sum[:8])
}

// AffinityTag is the tag of a service's mappings with session affinity
// timeout seconds: ServiceTag when affinity is 0 (as older agents tagged
// every mapping), else ServiceTag with "|a<seconds>" appended, the service
// part shortened with a hashed suffix so that the whole fits MaxTagLen.
// VPP's dump never returns the affinity; TagAffinity reads it back.
func AffinityTag(prefix string, id servicerenderer.ServiceID, affinity uint32) string {
	if affinity == 0 {
		return ServiceTag(prefix, id)
	}
	mark := affinityMark + strconv.FormatUint(uint64(affinity), 10)
	name := id.String()
	if len(prefix)+len(name)+len(mark) <= MaxTagLen {
		return prefix + name + mark
	}
	sum := sha256.Sum256([]byte(name))
	keep := max(MaxTagLen-len(prefix)-tagHashLen-len(mark), 0)
	return prefix + name[:keep] + "~" + hex.EncodeToString(sum[:8]) + mark
}

// TagAffinity is the affinity a tag made by AffinityTag records; 0 for a
// tag without one (older agents' tags included).
func TagAffinity(tag string) uint32 {
	i := strings.LastIndex(tag, affinityMark)
	if i < 0 {
		return 0
	}
	digits := tag[i+len(affinityMark):]
	if digits == "" || digits[0] == '0' || len(digits) > 10 {
		return 0
	}
	v, err := strconv.ParseUint(digits, 10, 32)
	if err != nil {
		return 0
	}
	return uint32(v)
}

// tagOwner is a tag without its affinity part.
func tagOwner(tag string) string {
	if TagAffinity(tag) == 0 {
		return tag
	}
	return tag[:strings.LastIndex(tag, affinityMark)]
}

// IdentityTag is the tag of the identity mappings of source NAT. It holds
// no '/', so it never equals a service tag.
func IdentityTag(prefix string) string { return prefix + "snat" }

// Owned tells whether a tag marks an object the agent owns.
func (c *Config) Owned(tag string) bool { return strings.HasPrefix(tag, c.TagPrefix) }
