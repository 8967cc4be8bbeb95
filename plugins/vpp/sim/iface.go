package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/codec"
)

// maxTag is the longest tag VPP keeps: tags are 64-byte C strings.
const maxTag = 63

// defaultMTU is the MTU VPP gives every interface but local0.
const defaultMTU = 9000

// iface is one simulated VPP interface.
type iface struct {
	index   uint32
	name    string
	tag     string
	mac     [6]byte
	devType string
	adminUp bool
	vrf     uint32
	// mvrf is the IPv4 multicast table the interface is bound to
	// (sw_interface_set_table binds it only where that table exists).
	mvrf uint32
	addr netip.Prefix // IPv4 address, if any
	// dynamic: made by af_packet_create_v3 or tap_create_v3 (pods.go); a
	// restart does not re-create it.
	dynamic bool
}

// flags are the interface's IF_STATUS_API_FLAGs: admin up, and link up
// (a loopback's link follows its admin state; an af_packet's host side
// is always up; local0 is down).
func (i *iface) flags() interface_types.IfStatusFlags {
	var f interface_types.IfStatusFlags
	if i.adminUp {
		f |= interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	switch {
	case i.index == 0:
	case i.devType == devLoopback:
		if i.adminUp {
			f |= interface_types.IF_STATUS_API_FLAG_LINK_UP
		}
	default:
		f |= interface_types.IF_STATUS_API_FLAG_LINK_UP
	}
	return f
}

func (i *iface) spec() InterfaceSpec {
	return InterfaceSpec{Name: i.name, Tag: i.tag, MAC: i.mac, VRF: i.vrf, Address: i.addr, AdminDown: !i.adminUp}
}

// Device types as sw_interface_details names them.
const (
	devLocal    = "local"
	devLoopback = "Loopback"
	devAFPacket = "af-packet"
	devVirtio   = "virtio"
	devVXLAN    = "VXLAN"
)

func newLocal0() *iface { return &iface{index: 0, name: "local0", devType: devLocal} }

// Interface describes one interface of the simulated VPP.
type Interface struct {
	Index uint32
	Name  string
	Tag   string
}

// InterfaceSpec describes an interface VPP's startup configuration or the
// CNI creates.
type InterfaceSpec struct {
	// Name is VPP's name for it: "loopN" makes a loopback, "tapN" a
	// virtio interface, "vxlan_tunnelN" a VXLAN tunnel, anything else an
	// af_packet one ("host-<veth>").
	Name string
	// Tag is cut to 63 bytes, as VPP does.
	Tag string
	// MAC is the interface's address; zero means VPP's default
	// (de:ad:00:00:00:<instance> for loopbacks, 02:fe:... otherwise).
	MAC [6]byte
	// VRF is the FIB table the interface is in; Address its IPv4 address
	// (none if invalid). NAT44 interface-address mappings resolve to it.
	VRF     uint32
	Address netip.Prefix
	// AdminDown leaves the interface admin down; the CNI sets its
	// interfaces up (the default).
	AdminDown bool
}

func devType(name string) string {
	switch {
	case strings.HasPrefix(name, "loop"):
		return devLoopback
	case strings.HasPrefix(name, "tap"):
		return devVirtio
	case strings.HasPrefix(name, "vxlan_tunnel"):
		// The startup configuration's "create vxlan tunnel" (records-e2evpp).
		return devVXLAN
	}
	return devAFPacket
}

// AddInterface creates an admin-up interface with a name and a tag (the
// CNI tags pod interfaces "<namespace>/<pod>"), as the CNI does, and
// returns its sw_if_index. A client registered with
// want_interface_events gets one event (admin up, link up).
func (v *VPP) AddInterface(name, tag string) (uint32, error) {
	return v.CreateInterface(InterfaceSpec{Name: name, Tag: tag})
}

// CreateInterface creates an interface and returns its sw_if_index: the
// last freed one if any (VPP reuses freed indices), else the next.
func (v *VPP) CreateInterface(s InterfaceSpec) (uint32, error) {
	if s.Name == "" {
		return 0, errors.New("simulated VPP: interface name is empty")
	}
	if len(s.Name) >= 64 {
		return 0, fmt.Errorf("simulated VPP: interface name %q is longer than 63 bytes", s.Name)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if i := v.ifaceByName(s.Name); i != nil {
		return 0, fmt.Errorf("simulated VPP: interface %q exists (sw_if_index %d)", s.Name, i.index)
	}
	return v.createLocked(v.allocIndexLocked(), s), nil
}

// allocIndexLocked picks the sw_if_index of a new interface.
func (v *VPP) allocIndexLocked() uint32 {
	if n := len(v.freeIf); n > 0 {
		idx := v.freeIf[n-1]
		v.freeIf = v.freeIf[:n-1]
		return idx
	}
	idx := v.nextIf
	v.nextIf++
	return idx
}

// createLocked creates an interface at idx and sends its event.
func (v *VPP) createLocked(idx uint32, s InterfaceSpec) uint32 {
	i := &iface{
		index: idx, name: s.Name, tag: cut(s.Tag), mac: s.MAC, devType: devType(s.Name),
		adminUp: !s.AdminDown, vrf: s.VRF, mvrf: s.VRF, addr: s.Address,
	}
	if i.mac == ([6]byte{}) {
		// ASSUMPTION: VPP randomises af_packet MACs (02:fe:...); the
		// sim derives them from the index so that they are stable.
		i.mac = [6]byte{0x02, 0xfe, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(i.mac[2:], idx)
		if i.devType == devLoopback {
			i.mac = [6]byte{0xde, 0xad, 0, 0, 0, 0}
			var n uint32
			fmt.Sscanf(strings.TrimPrefix(s.Name, "loop"), "%d", &n)
			binary.BigEndian.PutUint32(i.mac[2:], n)
		}
	}
	v.ifaces[idx] = i
	if idx >= v.nextIf {
		v.nextIf = idx + 1
	}
	v.eventLocked(idx, i.flags(), false)
	return idx
}

// DelInterface deletes an interface and the NAT44 and cnat features on
// it; a registered client gets a "deleted" event.
func (v *VPP) DelInterface(name string) error {
	return v.removing(name, "deleted", func(i *iface) { v.deleteLocked(i.index) })
}

// removing runs remove, with mu held, on the interface name names, unless
// there is none or it is local0, which cannot be what verb says.
func (v *VPP) removing(name, verb string, remove func(*iface)) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := v.ifaceByName(name)
	if i == nil {
		return fmt.Errorf("simulated VPP: no interface %q", name)
	}
	if i.index == 0 {
		return fmt.Errorf("simulated VPP: local0 cannot be %s", verb)
	}
	remove(i)
	return nil
}

func (v *VPP) deleteLocked(idx uint32) {
	delete(v.ifaces, idx)
	v.freeIf = append(v.freeIf, idx)
	v.pods.dropInterface(idx)
	v.nat.dropInterface(idx)
	v.cnat.dropInterface(idx)
	v.eventLocked(idx, 0, true)
}

// RecreateInterface deletes an interface and creates it again with the
// same name, tag and MAC, as when a pod's interface is re-created: it
// gets the index it had (VPP reuses the index freed last), and a
// registered client sees a "deleted" event, then an "up" one. NAT44
// features on it are lost.
func (v *VPP) RecreateInterface(name string) error {
	return v.removing(name, "re-created", func(i *iface) {
		s := i.spec()
		s.AdminDown = false
		v.deleteLocked(i.index)
		v.createLocked(v.allocIndexLocked(), s)
	})
}

// SetAdminUp sets an interface admin up or down, as
// sw_interface_set_flags does.
func (v *VPP) SetAdminUp(name string, up bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := v.ifaceByName(name)
	if i == nil {
		return fmt.Errorf("simulated VPP: no interface %q", name)
	}
	v.setAdminLocked(i, up)
	return nil
}

// setAdminLocked sets the admin state; the event says what came up with
// it (MEASURED, VPP 25.02, records-e2evpp/cni-nat44.jsonl: VPP's event
// carries the admin-up and link-up events of its batch, not the state: an
// af_packet set up gives flags 1, a loopback, whose link follows, 3; going
// down gives 0).
func (v *VPP) setAdminLocked(i *iface, up bool) {
	before := i.flags()
	i.adminUp = up
	if f := i.flags(); f != before {
		v.eventLocked(i.index, f&^before, false)
	}
}

// Interfaces lists the interfaces, sorted by index.
func (v *VPP) Interfaces() []Interface {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.interfacesLocked()
}

func (v *VPP) interfacesLocked() []Interface {
	out := make([]Interface, 0, len(v.ifaces))
	for _, i := range v.sortedIfaces() {
		out = append(out, Interface{Index: i.index, Name: i.name, Tag: i.tag})
	}
	return out
}

func (v *VPP) sortedIfaces() []*iface {
	out := make([]*iface, 0, len(v.ifaces))
	for _, i := range v.ifaces {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out
}

func (v *VPP) ifaceByName(name string) *iface {
	for _, i := range v.ifaces {
		if i.name == name {
			return i
		}
	}
	return nil
}

// ifaceName returns an interface's name ("" if none). Called with mu held.
func (v *VPP) ifaceName(idx uint32) string {
	if i, ok := v.ifaces[idx]; ok {
		return i.name
	}
	return ""
}

// ifaceAddr returns an interface's IPv4 address (invalid if none).
func (v *VPP) ifaceAddr(idx uint32) netip.Addr {
	if i, ok := v.ifaces[idx]; ok && i.addr.IsValid() {
		return i.addr.Addr()
	}
	return netip.Addr{}
}

// cut cuts a tag to the 63 bytes VPP keeps.
func cut(tag string) string {
	if len(tag) > maxTag {
		return tag[:maxTag]
	}
	return tag
}

// eventLocked sends sw_interface_event to the client registered with
// want_interface_events, if any.
func (v *VPP) eventLocked(idx uint32, flags interface_types.IfStatusFlags, deleted bool) {
	s := v.sess
	if s == nil || s.reset || !s.events {
		return
	}
	ev := &interfaces.SwInterfaceEvent{
		PID: s.eventsPID, SwIfIndex: interface_types.InterfaceIndex(idx), Flags: flags, Deleted: deleted,
	}
	id, ok := v.ids[msgKey(ev)]
	if !ok {
		return
	}
	b, err := codec.DefaultCodec.EncodeMsg(ev, id)
	if err != nil {
		v.log.Error("simulated VPP: encoding sw_interface_event", "err", err)
		return
	}
	// Events carry no context: govpp hands them to its event watchers.
	s.push([]outMsg{{id: id, data: b}})
}

func (v *VPP) swInterfaceDump(req *interfaces.SwInterfaceDump) []api.Message {
	var out []api.Message
	want := uint32(req.SwIfIndex)
	for _, i := range v.sortedIfaces() {
		// sw_if_index 0 (govpp's zero value) lists all, as ~0 does.
		if want != noIndex && want != 0 && want != i.index {
			continue
		}
		if req.NameFilterValid && !strings.Contains(i.name, req.NameFilter) {
			continue
		}
		d := &interfaces.SwInterfaceDetails{
			SwIfIndex:        interface_types.InterfaceIndex(i.index),
			SupSwIfIndex:     i.index,
			L2Address:        ethernet_types.MacAddress(i.mac),
			Flags:            i.flags(),
			Mtu:              []uint32{0, 0, 0, 0},
			InterfaceName:    i.name,
			InterfaceDevType: i.devType,
			Tag:              i.tag,
		}
		if i.index != 0 {
			d.LinkMtu = defaultMTU
			d.Mtu[0] = defaultMTU
		}
		out = append(out, d)
	}
	return out
}

func (v *VPP) swInterfaceTagAddDel(req *interfaces.SwInterfaceTagAddDel) []api.Message {
	r := &interfaces.SwInterfaceTagAddDelReply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	switch {
	case !ok:
		return reply(r, api.INVALID_SW_IF_INDEX)
	case !req.IsAdd:
		i.tag = ""
	case req.Tag == "":
		return reply(r, api.INVALID_VALUE)
	default:
		i.tag = cut(req.Tag)
	}
	return reply(r, 0)
}

func (v *VPP) swInterfaceSetFlags(req *interfaces.SwInterfaceSetFlags) []api.Message {
	r := &interfaces.SwInterfaceSetFlagsReply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	if !ok {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	v.setAdminLocked(i, req.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0)
	return reply(r, 0)
}

func (v *VPP) wantInterfaceEvents(req *interfaces.WantInterfaceEvents) []api.Message {
	r := &interfaces.WantInterfaceEventsReply{}
	s := v.sess
	on := req.EnableDisable != 0
	if on == s.events {
		// Registering twice, or unregistering when not registered.
		return reply(r, api.INVALID_REGISTRATION)
	}
	s.events, s.eventsPID = on, req.PID
	return reply(r, 0)
}

func (v *VPP) createLoopback(req *interfaces.CreateLoopback) []api.Message {
	idx, rv := v.createLoopbackLocked(req.MacAddress[:])
	return reply(&interfaces.CreateLoopbackReply{SwIfIndex: interface_types.InterfaceIndex(idx)}, rv)
}

// createLoopbackLocked creates loop<N> with the lowest free instance N,
// admin down.
func (v *VPP) createLoopbackLocked(mac []byte) (uint32, api.VPPApiError) {
	n := 0
	for v.ifaceByName(fmt.Sprintf("loop%d", n)) != nil {
		n++
	}
	s := InterfaceSpec{Name: fmt.Sprintf("loop%d", n), AdminDown: true}
	copy(s.MAC[:], mac)
	return v.createLocked(v.allocIndexLocked(), s), 0
}

func (v *VPP) deleteLoopback(req *interfaces.DeleteLoopback) []api.Message {
	r := &interfaces.DeleteLoopbackReply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	if !ok || i.devType != devLoopback {
		// ASSUMPTION: VPP refuses an index that is not a loopback.
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	v.deleteLocked(i.index)
	return reply(r, 0)
}
