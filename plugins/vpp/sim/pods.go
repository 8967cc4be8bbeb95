package sim

import (
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/tapv2"
)

// The messages a pod manager sends to wire pods (plugins/vpp/pods.go):
// af_packet and tap interfaces, their VRF, address or unnumbered source,
// and static neighbours.
//
// ASSUMPTION (all of this file): the corpus records none of these
// requests; VPP 25.02's message table (connect.jsonl, step 10) lists
// af_packet_create_v3, af_packet_delete, tap_create_v3, tap_delete_v2,
// sw_interface_set_table, sw_interface_add_del_address,
// sw_interface_set_unnumbered and ip_neighbor_add_del, and the replies
// below follow VPP's API definitions and its source as read, not a
// recording:
//
//   - af_packet_create_v3 opens the host interface host_if_name in VPP's
//     own network namespace: a missing one answers -71 (invalid
//     interface), one already attached -79 (interface exists); the new
//     interface is "host-<host_if_name>", admin down, its MAC hw_addr (or
//     the sim's index-derived one with use_random_hw_addr). The sim asks
//     the kernel of the caller's network namespace (a netlink request for that one link)
//     unless SetHostInterfaces replaced the check.
//   - af_packet_delete of a name not attached answers -71.
//   - tap_create_v3 makes "tap<id>", admin down, and its kernel end in
//     the pod's netns (tap.go: read in VPP's tap.c, no longer an
//     assumption). tap_delete_v2 of an index that is no tap answers -2.
//   - sw_interface_set_table: unknown index -2, a table that does not
//     exist -3 (as ip_route_add_del does).
//   - sw_interface_add_del_address: unknown index -2; the sim keeps one
//     IPv4 address per interface: adding a second one -105 (address in
//     use); deleting one the interface does not have -6.
//   - sw_interface_set_unnumbered: either index unknown -2; making an
//     interface unnumbered to one bound to other IPv4 tables, unicast or
//     multicast, -74 (unexpected interface state), as VPP checks
//     (interface.c, vnet_sw_interface_check_table_same). MEASURED on VPP
//     25.02: a table NAT44 made for a mapping's local has no multicast
//     table (locks "nat-low" only); an interface put in it is bound to
//     its unicast table only, one put in it once "ip table add" made the
//     multicast table too is bound to both, and the second cannot be made
//     unnumbered to the first ("When enabling unnumbered both interfaces
//     must be in the same tables").
//   - sw_interface_set_table binds the interface to the multicast table
//     of the VRF only where it exists (made by ip_table_add_del or the
//     startup configuration's "ip table add", not by NAT44 alone).
//   - ip_neighbor_add_del: unknown index -2; adding an existing entry
//     replaces its MAC; deleting a missing one -6.
//   - Interfaces made by these requests are gone after a restart (VPP's
//     startup configuration does not re-create them); so are neighbours
//     and unnumbered settings. Deleting an interface drops its
//     neighbours and its unnumbered setting.
func podMessageDefs() []*msgDef {
	const write = true
	return []*msgDef{
		def(write, &af_packet.AfPacketCreateV3{}, (*VPP).afPacketCreateV3, &af_packet.AfPacketCreateV3Reply{}),
		def(write, &af_packet.AfPacketDelete{}, (*VPP).afPacketDelete, &af_packet.AfPacketDeleteReply{}),
		def(write, &tapv2.TapCreateV3{}, (*VPP).tapCreateV3, &tapv2.TapCreateV3Reply{}),
		def(write, &tapv2.TapDeleteV2{}, (*VPP).tapDeleteV2, &tapv2.TapDeleteV2Reply{}),
		def(write, &interfaces.SwInterfaceSetTable{}, (*VPP).swInterfaceSetTable, &interfaces.SwInterfaceSetTableReply{}),
		def(write, &interfaces.SwInterfaceAddDelAddress{}, (*VPP).swInterfaceAddDelAddress, &interfaces.SwInterfaceAddDelAddressReply{}),
		def(write, &interfaces.SwInterfaceSetUnnumbered{}, (*VPP).swInterfaceSetUnnumbered, &interfaces.SwInterfaceSetUnnumberedReply{}),
		def(write, &ip_neighbor.IPNeighborAddDel{}, (*VPP).ipNeighborAddDel, &ip_neighbor.IPNeighborAddDelReply{}),
	}
}

// podState is what the pod requests keep beside the interfaces.
type podState struct {
	// hostIf tells whether a host interface exists for af_packet; nil
	// asks the kernel.
	hostIf func(name string) bool
	// vhostNet says whether /dev/vhost-net exists (nil: ask the host).
	vhostNet   *bool
	neighbours map[neighbourKey][6]byte
	unnumbered map[uint32]uint32 // interface -> the one lending its address
	// taps are the kernel ends of the taps made (tap.go), by VPP index.
	taps map[uint32]*kernelTap
}

type neighbourKey struct {
	ifIndex uint32
	ip      netip.Addr
}

func (p *podState) init() {
	if p.neighbours == nil {
		p.neighbours = map[neighbourKey][6]byte{}
		p.unnumbered = map[uint32]uint32{}
		p.taps = map[uint32]*kernelTap{}
	}
}

// reset forgets everything but the host-interface and vhost-net checks
// (a restart): VPP's exit closes the taps' fds, and the kernel removes
// their kernel ends.
func (p *podState) reset() {
	p.closeTaps()
	p.neighbours, p.unnumbered, p.taps = nil, nil, nil
	p.init()
}

// dropInterface forgets what was set on interface idx.
func (p *podState) dropInterface(idx uint32) {
	p.init()
	for k := range p.neighbours {
		if k.ifIndex == idx {
			delete(p.neighbours, k)
		}
	}
	delete(p.unnumbered, idx)
	if k := p.taps[idx]; k != nil {
		k.close() // tap_free: the kernel end goes with VPP's fds
		delete(p.taps, idx)
	}
	for i, src := range p.unnumbered {
		if src == idx {
			delete(p.unnumbered, i)
		}
	}
}

// SetHostInterfaces replaces the check af_packet_create_v3 makes that its
// host interface exists (default: the kernel of the caller's network
// namespace has an interface of that name).
func (v *VPP) SetHostInterfaces(exists func(name string) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pods.hostIf = exists
}

func (v *VPP) hostIfExists(name string) bool {
	if v.pods.hostIf != nil {
		return v.pods.hostIf(name)
	}
	// One link asked by name (net.InterfaceByName dumps every link of
	// the netns: with a hundred pods' veths that made each create cost
	// milliseconds under the sim's lock).
	_, err := netlink.LinkByName(name)
	return err == nil
}

func (v *VPP) afPacketCreateV3(req *af_packet.AfPacketCreateV3) []api.Message {
	r := &af_packet.AfPacketCreateV3Reply{SwIfIndex: interface_types.InterfaceIndex(noIndex)}
	name := "host-" + req.HostIfName
	switch {
	case req.HostIfName == "" || !v.hostIfExists(req.HostIfName):
		return reply(r, api.INVALID_INTERFACE)
	case v.ifaceByName(name) != nil:
		return reply(r, api.IF_ALREADY_EXISTS)
	}
	s := InterfaceSpec{Name: name, AdminDown: true}
	if !req.UseRandomHwAddr {
		s.MAC = [6]byte(req.HwAddr)
	}
	idx := v.createDynamicLocked(s)
	r.SwIfIndex = interface_types.InterfaceIndex(idx)
	return reply(r, 0)
}

func (v *VPP) afPacketDelete(req *af_packet.AfPacketDelete) []api.Message {
	r := &af_packet.AfPacketDeleteReply{}
	i := v.ifaceByName("host-" + req.HostIfName)
	if req.HostIfName == "" || i == nil || i.devType != devAFPacket {
		return reply(r, api.INVALID_INTERFACE)
	}
	v.deletePodIfLocked(i.index)
	return reply(r, 0)
}

// createDynamicLocked creates an interface made by the API (not
// re-created by a restart).
func (v *VPP) createDynamicLocked(s InterfaceSpec) uint32 {
	idx := v.createLocked(v.allocIndexLocked(), s)
	v.ifaces[idx].dynamic = true
	return idx
}

func (v *VPP) deletePodIfLocked(idx uint32) { v.deleteLocked(idx) }

func (v *VPP) swInterfaceSetTable(req *interfaces.SwInterfaceSetTable) []api.Message {
	r := &interfaces.SwInterfaceSetTableReply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	switch {
	case !ok:
		return reply(r, api.INVALID_SW_IF_INDEX)
	case req.IsIPv6:
		return reply(r, 0) // IPv6 tables are not modelled
	case !v.tableExists(req.VrfID):
		return reply(r, api.NO_SUCH_FIB)
	}
	i.vrf = req.VrfID
	v.cnatTableBoundLocked(req.VrfID)
	if req.VrfID == 0 || v.fib.tables[req.VrfID] {
		i.mvrf = req.VrfID
	}
	return reply(r, 0)
}

func (v *VPP) swInterfaceAddDelAddress(req *interfaces.SwInterfaceAddDelAddress) []api.Message {
	r := &interfaces.SwInterfaceAddDelAddressReply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	if !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	if req.DelAll {
		i.addr = netip.Prefix{}
		return reply(r, 0)
	}
	p, err := netip.ParsePrefix(req.Prefix.String())
	if err != nil || !p.Addr().Is4() {
		return reply(r, api.INVALID_VALUE)
	}
	switch {
	case req.IsAdd && i.addr == p:
		return reply(r, 0)
	case req.IsAdd && i.addr.IsValid():
		return reply(r, api.ADDRESS_IN_USE)
	case req.IsAdd:
		i.addr = p
	case i.addr != p:
		return reply(r, api.NO_SUCH_ENTRY)
	default:
		i.addr = netip.Prefix{}
	}
	return reply(r, 0)
}

func (v *VPP) swInterfaceSetUnnumbered(req *interfaces.SwInterfaceSetUnnumbered) []api.Message {
	r := &interfaces.SwInterfaceSetUnnumberedReply{}
	idx, src := uint32(req.UnnumberedSwIfIndex), uint32(req.SwIfIndex)
	un, ok1 := v.ifaces[idx]
	lender, ok2 := v.ifaces[src]
	if !ok1 || !ok2 {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	if req.IsAdd && (un.vrf != lender.vrf || un.mvrf != lender.mvrf) {
		return reply(r, api.UNEXPECTED_INTF_STATE)
	}
	v.pods.init()
	if req.IsAdd {
		v.pods.unnumbered[idx] = src
	} else {
		delete(v.pods.unnumbered, idx)
	}
	return reply(r, 0)
}

func (v *VPP) ipNeighborAddDel(req *ip_neighbor.IPNeighborAddDel) []api.Message {
	r := &ip_neighbor.IPNeighborAddDelReply{StatsIndex: noIndex}
	n := req.Neighbor
	if _, ok := v.ifaces[uint32(n.SwIfIndex)]; !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	ip, ok := netip.AddrFromSlice(ipBytes(n))
	if !ok {
		return reply(r, api.INVALID_VALUE)
	}
	v.pods.init()
	k := neighbourKey{uint32(n.SwIfIndex), ip}
	if req.IsAdd {
		v.pods.neighbours[k] = [6]byte(n.MacAddress)
		return reply(r, 0)
	}
	if _, ok := v.pods.neighbours[k]; !ok {
		return reply(r, api.NO_SUCH_ENTRY)
	}
	delete(v.pods.neighbours, k)
	return reply(r, 0)
}

func ipBytes(n ip_neighbor.IPNeighbor) []byte {
	a := n.IPAddress.ToIP()
	if a4 := a.To4(); a4 != nil {
		return a4
	}
	return a
}

// Neighbour is a static neighbour added with ip_neighbor_add_del.
type Neighbour struct {
	Interface uint32
	IP        netip.Addr
	MAC       net.HardwareAddr
}

// Neighbours lists the neighbours, by interface and address.
func (v *VPP) Neighbours() []Neighbour {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []Neighbour
	for k, mac := range v.pods.neighbours {
		out = append(out, Neighbour{Interface: k.ifIndex, IP: k.ip, MAC: net.HardwareAddr(mac[:])})
	}
	slices.SortFunc(out, func(a, b Neighbour) int {
		if a.Interface != b.Interface {
			return int(a.Interface) - int(b.Interface)
		}
		return a.IP.Compare(b.IP)
	})
	return out
}

// Unnumbered maps each unnumbered interface to the one lending it its
// address.
func (v *VPP) Unnumbered() map[uint32]uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.pods.unnumbered)
}

// InterfaceDetail is an interface as a test reads it back.
type InterfaceDetail struct {
	Interface
	MAC     net.HardwareAddr
	VRF     uint32
	Address netip.Prefix
	AdminUp bool
}

// InterfaceNamed returns the interface called name, if any.
func (v *VPP) InterfaceNamed(name string) (InterfaceDetail, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := v.ifaceByName(name)
	if i == nil {
		return InterfaceDetail{}, false
	}
	return InterfaceDetail{
		Interface: Interface{Index: i.index, Name: i.name, Tag: i.tag},
		MAC:       net.HardwareAddr(append([]byte(nil), i.mac[:]...)), VRF: i.vrf, Address: i.addr, AdminUp: i.adminUp,
	}, true
}
