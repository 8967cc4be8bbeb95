package addrplan

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/netip"
)

// Errors callers branch on. Both mean invalid input: retrying cannot help.
var (
	// ErrInvalidConfig: a configured range or prefix length is unusable.
	ErrInvalidConfig = errors.New("invalid IPAM config")
	// ErrNodeIDOutOfRange: the node ID does not fit the configured ranges.
	ErrNodeIDOutOfRange = errors.New("node ID out of range")
)

// Config is the cluster-wide address configuration, the same on every node.
// Error messages name the fields as the configuration file does (in
// parentheses below).
type Config struct {
	// PodSubnetCIDR holds the pods of all nodes (podSubnetCIDR).
	PodSubnetCIDR netip.Prefix
	// PodSubnetOneNodePrefixLen is the length of one node's share of
	// PodSubnetCIDR (podSubnetOneNodePrefixLen); it must leave at least 3
	// host bits.
	PodSubnetOneNodePrefixLen int
	// VPPHostSubnetCIDR holds the VPP-to-host interconnects of all nodes
	// (vppHostSubnetCIDR).
	VPPHostSubnetCIDR netip.Prefix
	// VPPHostSubnetOneNodePrefixLen is the length of one node's share of
	// VPPHostSubnetCIDR (vppHostSubnetOneNodePrefixLen); it must leave at
	// least 2 host bits.
	VPPHostSubnetOneNodePrefixLen int
	// NodeInterconnectCIDR is where node n gets host address n
	// (nodeInterconnectCIDR). Zero when the node's IP is configured or
	// comes from DHCP: the plan then has no NodeInterconnectIP.
	NodeInterconnectCIDR netip.Prefix
	// VXLANCIDR is where node n gets its VXLAN address, host n (vxlanCIDR).
	// Zero when there is no VXLAN overlay.
	VXLANCIDR netip.Prefix
	// ServiceCIDR holds the cluster IPs of services (serviceCIDR).
	ServiceCIDR netip.Prefix
}

// Field names as the configuration file spells them.
const (
	fieldPodCIDR      = "podSubnetCIDR"
	fieldPodLen       = "podSubnetOneNodePrefixLen"
	fieldHostCIDR     = "vppHostSubnetCIDR"
	fieldHostLen      = "vppHostSubnetOneNodePrefixLen"
	fieldNodeCIDR     = "nodeInterconnectCIDR"
	fieldVXLANCIDR    = "vxlanCIDR"
	fieldServiceCIDR  = "serviceCIDR"
	minPodHostBits    = 3 // network, gateway, a pod, NAT loopback, broadcast
	minHostIfHostBits = 2 // network, VPP end, Linux end, broadcast
)

// Validate checks c and returns every problem found, each naming its field
// and value and wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(args, ErrInvalidConfig)...))
	}
	checkPrefix := func(field string, p netip.Prefix, required bool) bool {
		switch {
		case !p.IsValid():
			if required {
				bad("%s: missing or not a CIDR", field)
			}
			return false
		case p.Addr().Is4In6():
			bad("%s %s: IPv4-mapped IPv6 range, write it as IPv4", field, p)
			return false
		case p != p.Masked():
			bad("%s %s: host bits set (the range is %s)", field, p, p.Masked())
			return false
		}
		return true
	}
	checkSplit := func(cidrField string, cidr netip.Prefix, lenField string, n, minHostBits int) {
		switch max := cidr.Addr().BitLen() - minHostBits; {
		case n <= cidr.Bits():
			bad("%s %d: must be longer than the /%d of %s %s", lenField, n, cidr.Bits(), cidrField, cidr)
		case n > max:
			bad("%s %d: leaves fewer than %d host bits (at most %d)", lenField, n, minHostBits, max)
		}
	}
	if checkPrefix(fieldPodCIDR, c.PodSubnetCIDR, true) {
		checkSplit(fieldPodCIDR, c.PodSubnetCIDR, fieldPodLen, c.PodSubnetOneNodePrefixLen, minPodHostBits)
	}
	if checkPrefix(fieldHostCIDR, c.VPPHostSubnetCIDR, true) {
		checkSplit(fieldHostCIDR, c.VPPHostSubnetCIDR, fieldHostLen, c.VPPHostSubnetOneNodePrefixLen, minHostIfHostBits)
	}
	for _, r := range []struct {
		field string
		p     netip.Prefix
	}{{fieldNodeCIDR, c.NodeInterconnectCIDR}, {fieldVXLANCIDR, c.VXLANCIDR}} {
		if checkPrefix(r.field, r.p, false) && hostCapacity(r.p) == 0 {
			bad("%s %s: no room for a single node", r.field, r.p)
		}
	}
	checkPrefix(fieldServiceCIDR, c.ServiceCIDR, true)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	ranges := []struct {
		field string
		p     netip.Prefix
	}{
		{fieldPodCIDR, c.PodSubnetCIDR}, {fieldHostCIDR, c.VPPHostSubnetCIDR},
		{fieldNodeCIDR, c.NodeInterconnectCIDR}, {fieldVXLANCIDR, c.VXLANCIDR},
		{fieldServiceCIDR, c.ServiceCIDR},
	}
	for i, a := range ranges {
		for _, b := range ranges[i+1:] {
			if a.p.IsValid() && b.p.IsValid() && a.p.Overlaps(b.p) {
				bad("%s %s overlaps %s %s", a.field, a.p, b.field, b.p)
			}
		}
	}
	return errors.Join(errs...)
}

// MaxNodeID is the largest node ID that fits every configured range. c must
// be valid.
func (c Config) MaxNodeID() uint32 {
	limit := uint64(math.MaxUint32)
	limit = min(limit, splitCapacity(c.PodSubnetCIDR, c.PodSubnetOneNodePrefixLen))
	limit = min(limit, splitCapacity(c.VPPHostSubnetCIDR, c.VPPHostSubnetOneNodePrefixLen))
	if c.NodeInterconnectCIDR.IsValid() {
		limit = min(limit, hostCapacity(c.NodeInterconnectCIDR))
	}
	if c.VXLANCIDR.IsValid() {
		limit = min(limit, hostCapacity(c.VXLANCIDR))
	}
	return uint32(limit)
}

// Plan is the address plan of one node. Prefix-valued addresses (the
// interconnect ends, the node and VXLAN IPs) carry the length of the network
// they sit in, as an interface is configured.
type Plan struct {
	// NodeID is the NodeSync ID the plan was derived from.
	NodeID uint32
	// PodCIDR holds the pods of all nodes.
	PodCIDR netip.Prefix
	// PodSubnet is this node's share of PodCIDR.
	PodSubnet netip.Prefix
	// PodGateway is the first host of PodSubnet: the pods' default gateway.
	PodGateway netip.Addr
	// NATLoopback is the last usable address of PodSubnet: the source of
	// twice-NATed traffic.
	NATLoopback netip.Addr
	// HostInterconnect is this node's share of the VPP-to-host range.
	HostInterconnect netip.Prefix
	// HostInterconnectVPP (host 1) and HostInterconnectLinux (host 2) are
	// the VPP and the Linux end of the host interconnect.
	HostInterconnectVPP   netip.Prefix
	HostInterconnectLinux netip.Prefix
	// NodeInterconnectIP is this node's IP on the node interconnect;
	// invalid (zero) when it is not derived.
	NodeInterconnectIP netip.Prefix
	// VXLANIP is this node's VXLAN address; invalid (zero) without overlay.
	VXLANIP netip.Prefix
	// ServiceCIDR holds the cluster IPs of services.
	ServiceCIDR netip.Prefix
}

// NewPlan derives node nodeID's plan from c. An invalid c wraps
// ErrInvalidConfig; an ID that does not fit wraps ErrNodeIDOutOfRange.
func NewPlan(c Config, nodeID uint32) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if nodeID == 0 {
		return nil, fmt.Errorf("node ID 0: IDs start at 1: %w", ErrNodeIDOutOfRange)
	}
	p := &Plan{NodeID: nodeID, PodCIDR: c.PodSubnetCIDR, ServiceCIDR: c.ServiceCIDR}
	var err error
	if p.PodSubnet, err = dissect(fieldPodCIDR, c.PodSubnetCIDR, c.PodSubnetOneNodePrefixLen, nodeID); err != nil {
		return nil, err
	}
	p.PodGateway = p.PodSubnet.Addr().Next()
	p.NATLoopback = lastAddr(p.PodSubnet).Prev()

	if p.HostInterconnect, err = dissect(fieldHostCIDR, c.VPPHostSubnetCIDR, c.VPPHostSubnetOneNodePrefixLen, nodeID); err != nil {
		return nil, err
	}
	vpp := p.HostInterconnect.Addr().Next()
	p.HostInterconnectVPP = netip.PrefixFrom(vpp, p.HostInterconnect.Bits())
	p.HostInterconnectLinux = netip.PrefixFrom(vpp.Next(), p.HostInterconnect.Bits())

	if c.NodeInterconnectCIDR.IsValid() {
		if p.NodeInterconnectIP, err = hostIn(fieldNodeCIDR, c.NodeInterconnectCIDR, nodeID); err != nil {
			return nil, err
		}
	}
	if c.VXLANCIDR.IsValid() {
		if p.VXLANIP, err = hostIn(fieldVXLANCIDR, c.VXLANCIDR, nodeID); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PodSubnetThisNode is this node's pod subnet.
func (p *Plan) PodSubnetThisNode() netip.Prefix { return p.PodSubnet }

// PodSubnetAllNodes is the range holding the pods of all nodes.
func (p *Plan) PodSubnetAllNodes() netip.Prefix { return p.PodCIDR }

// splitCapacity is how many node IDs a split of cidr into /n serves: IDs 1
// to 2^(n-bits), the last one taking subnet 0.
func splitCapacity(cidr netip.Prefix, n int) uint64 {
	extra := n - cidr.Bits()
	if extra >= 32 {
		return math.MaxUint32
	}
	return uint64(1) << extra
}

// hostCapacity is how many node IDs get a host address in cidr: hosts 1 to
// the last one (IPv4 keeps the broadcast address out).
func hostCapacity(cidr netip.Prefix) uint64 {
	reserved := uint64(1) // the network address
	if cidr.Addr().Is4() {
		reserved++ // and the broadcast address
	}
	return max(hostCount(cidr, math.MaxUint32+2), reserved) - reserved
}

// dissect returns subnet number id of cidr split into /n. ID 2^(n-bits)
// wraps to subnet 0, so that IDs starting at 1 use every subnet.
func dissect(field string, cidr netip.Prefix, n int, id uint32) (netip.Prefix, error) {
	capacity := splitCapacity(cidr, n)
	if uint64(id) > capacity {
		return netip.Prefix{}, fmt.Errorf("node ID %d does not fit %s %s split into /%d (at most %d nodes): %w",
			id, field, cidr, n, capacity, ErrNodeIDOutOfRange)
	}
	index := uint64(id) % capacity
	if capacity == math.MaxUint32 {
		index = uint64(id) // the split has room for every ID
	}
	off := new(big.Int).Lsh(new(big.Int).SetUint64(index), uint(cidr.Addr().BitLen()-n))
	base, _ := addrAdd(cidr.Addr(), off) // within cidr: index < 2^(n-bits)
	return netip.PrefixFrom(base, n), nil
}

// hostIn returns host number id of cidr, with cidr's length.
func hostIn(field string, cidr netip.Prefix, id uint32) (netip.Prefix, error) {
	if capacity := hostCapacity(cidr); uint64(id) > capacity {
		return netip.Prefix{}, fmt.Errorf("node ID %d has no host address in %s %s (at most %d nodes): %w",
			id, field, cidr, capacity, ErrNodeIDOutOfRange)
	}
	a, _ := addrAdd(cidr.Addr(), new(big.Int).SetUint64(uint64(id)))
	return netip.PrefixFrom(a, cidr.Bits()), nil
}
