package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
)

// The pod manager's port (plugins/pods): one VPP interface per pod, wired
// into the pod VRF. ASSUMPTION: none of these requests is in the corpus;
// VPP 25.02's message table lists them all (connect.jsonl, step 10) and
// govpp v0.13.0's binapi af_packet, tapv2, ip_neighbor and interface are
// taken to be compatible (PodMessages is checked at every connect when
// the agent wires pods, so a VPP that disagrees is refused by name).

// Errors of the pod port callers branch on.
var (
	// ErrPodRefused: VPP refused a pod's interface or its wiring (an
	// invalid value, a missing host interface, an existing one): retrying
	// the same request gives the same answer.
	ErrPodRefused = errors.New("VPP refused the interface")
)

// PodLinkKind is how a pod's interface reaches VPP.
type PodLinkKind string

// The kinds of pod interface.
const (
	// PodLinkTap is a tap v2 (virtio; needs /dev/vhost-net): VPP makes
	// both ends and moves the host end into the pod's netns.
	PodLinkTap PodLinkKind = "tap"
	// PodLinkAFPacket is an af_packet interface on the VPP end of a veth
	// pair whose other end is in the pod.
	PodLinkAFPacket PodLinkKind = "af_packet"
)

// PodLink is one pod's VPP interface as the pod manager wants it.
type PodLink struct {
	// Kind says which interface.
	Kind PodLinkKind
	// HostIfName is, for af_packet, the veth end VPP attaches to (in
	// VPP's netns); for a tap, the name its host end gets in the pod.
	HostIfName string
	// HostNetns is, for a tap, the pod's netns (a path or a name under
	// /var/run/netns) VPP moves the host end into.
	HostNetns string
	// MAC is the VPP end's MAC address (the pod's gateway MAC).
	MAC [6]byte
	// Tag identifies the pod ("<namespace>/<pod>").
	Tag string
	// VRF is the pod VRF.
	VRF uint32
	// Unnumbered is the interface lending the VPP end the pod gateway
	// (PodGateway's loopback).
	Unnumbered uint32
	// PodIP is the pod's address; PodMAC its eth0's MAC.
	PodIP  netip.Addr
	PodMAC [6]byte
}

// PodInterface is a VPP interface made for a pod.
type PodInterface struct {
	Index uint32
	Name  string
}

// Pods implements the pod manager's port over the binary API.
type Pods struct {
	conn *Conn
	log  *slog.Logger
}

// NewPods returns the pod port over conn.
func NewPods(conn *Conn, log *slog.Logger) *Pods {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pods{conn: conn, log: log}
}

// PodMessages are the messages Pods sends and receives for both kinds of
// pod interface (PodMessagesFor names one kind's).
func PodMessages() []api.Message {
	return append(PodMessagesFor(PodLinkAFPacket), tapMessages()...)
}

// PodMessagesFor are the messages Pods sends and receives when its pods
// are of kind k (add them to Config.ExtraMessages when the agent wires
// pods): the other kind's are not asked of VPP, so that a VPP without the
// tap plugin (26.06 builds it as a plugin the node may not load) serves
// af_packet pods.
func PodMessagesFor(k PodLinkKind) []api.Message {
	if k == PodLinkTap {
		return append(commonPodMessages(), tapMessages()...)
	}
	return append(commonPodMessages(),
		&af_packet.AfPacketCreateV3{}, &af_packet.AfPacketCreateV3Reply{},
		&af_packet.AfPacketDelete{}, &af_packet.AfPacketDeleteReply{})
}

func tapMessages() []api.Message {
	return []api.Message{
		&tapv2.TapCreateV3{}, &tapv2.TapCreateV3Reply{},
		&tapv2.TapDeleteV2{}, &tapv2.TapDeleteV2Reply{},
	}
}

func commonPodMessages() []api.Message {
	return []api.Message{
		&interfaces.CreateLoopback{}, &interfaces.CreateLoopbackReply{},
		&interfaces.SwInterfaceSetTable{}, &interfaces.SwInterfaceSetTableReply{},
		&interfaces.SwInterfaceAddDelAddress{}, &interfaces.SwInterfaceAddDelAddressReply{},
		&interfaces.SwInterfaceSetUnnumbered{}, &interfaces.SwInterfaceSetUnnumberedReply{},
		&interfaces.SwInterfaceTagAddDel{}, &interfaces.SwInterfaceTagAddDelReply{},
		&interfaces.SwInterfaceSetFlags{}, &interfaces.SwInterfaceSetFlagsReply{},
		&ip_neighbor.IPNeighborAddDel{}, &ip_neighbor.IPNeighborAddDelReply{},
		&ipapi.IPAddressDump{}, &ipapi.IPAddressDetails{},
		&ipapi.IPTableAddDel{}, &ipapi.IPTableAddDelReply{},
	}
}

// podRefusals are the retvals that say the request itself is wrong.
var podRefusals = []api.VPPApiError{
	api.INVALID_SW_IF_INDEX, api.NO_SUCH_FIB, api.INVALID_VALUE, api.INVALID_INTERFACE,
	api.IF_ALREADY_EXISTS, api.ADDRESS_IN_USE, api.NO_SUCH_ENTRY, api.SYSCALL_ERROR_1,
}

func podErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var rv api.VPPApiError
	if errors.As(err, &rv) && slices.Contains(podRefusals, rv) {
		return fmt.Errorf("%s: %w: %w", what, ErrPodRefused, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// missing tells whether err is VPP saying the object is not there.
func missing(err error) bool {
	var rv api.VPPApiError
	return errors.As(err, &rv) && (rv == api.INVALID_SW_IF_INDEX || rv == api.NO_SUCH_ENTRY || rv == api.INVALID_INTERFACE)
}

// EnsureGateway makes sure a loopback tagged tag is in vrf, up, with gw
// as its address (the pods' interfaces borrow it: unnumbered), making it
// when VPP has none (after a restart), and returns its index.
func (p *Pods) EnsureGateway(ctx context.Context, tag string, vrf uint32, gw netip.Prefix) (uint32, error) {
	cur, found, err := p.byTag(ctx, tag)
	if err != nil {
		return 0, err
	}
	idx := cur.Index
	if !found {
		r := &interfaces.CreateLoopbackReply{}
		if err := p.conn.invoke(ctx, &interfaces.CreateLoopback{}, r); err != nil {
			return 0, podErr(err, "create the pod gateway loopback")
		}
		idx = uint32(r.SwIfIndex)
		if err := p.tag(ctx, idx, tag); err != nil {
			return 0, err
		}
		p.log.Info("pod gateway loopback created", "index", idx, "vrf", vrf, "gateway", gw)
	}
	has, err := p.addresses(ctx, idx)
	if err != nil {
		return 0, err
	}
	if !slices.Contains(has, gw) {
		// The table first: VPP moves no addressed interface. And the VRF
		// made first, unicast and multicast: one NAT44 made alone (its
		// mappings' locals in it, as after a VPP restart the agent came
		// back to before the startup configuration's "ip table add") has
		// no multicast table, and a loopback bound without one lends its
		// address to no pod interface bound once the table is complete
		// (VPP refuses the unnumbered: -74, measured on 25.02).
		if err := p.addTable(ctx, vrf); err != nil {
			return 0, err
		}
		if err := p.setTable(ctx, idx, vrf); err != nil {
			return 0, err
		}
		if err := p.address(ctx, idx, gw, true); err != nil {
			return 0, err
		}
	}
	if cur.AdminUp {
		return idx, nil
	}
	return idx, p.setUp(ctx, idx, true)
}

// AddPodInterface makes and wires a pod's interface: created, tagged, in
// the pod VRF, unnumbered to the gateway, up, a static neighbour for the
// pod and a /32 route to it. On failure it removes what it made.
func (p *Pods) AddPodInterface(ctx context.Context, l PodLink) (PodInterface, error) {
	pis, errs := p.AddPodInterfaces(ctx, []PodLink{l})
	return pis[0], errs[0]
}

// AddPodInterfaces makes and wires the interfaces of several pods at once
// (the CNI's ADDs taken in together): every creation in one pipeline, then
// every interface's settings (wire's) in another, VPP answering in order:
// two round trips for them all instead of two for each. Each pod's
// outcome is its own: errs[i] is pod i's error (its half-made interface
// removed), nil when pis[i] is wired.
func (p *Pods) AddPodInterfaces(ctx context.Context, ls []PodLink) (pis []PodInterface, errs []error) {
	pis, errs = make([]PodInterface, len(ls)), make([]error, len(ls))
	made := make([]bool, len(ls))
	if err := p.createAll(ctx, ls, pis, errs, made); err != nil {
		for i := range errs {
			if errs[i] == nil && !made[i] {
				errs[i] = err
			}
		}
	}
	for i := range ls {
		if made[i] && pis[i].Name == "" {
			pis[i].Name = p.nameOf(ctx, pis[i].Index)
		}
	}
	st, err := openStream[int](ctx, p.conn)
	if err == nil {
		for i, l := range ls {
			if made[i] {
				p.sendWire(st, i, pis[i].Index, l)
			}
		}
		for {
			c, ok := st.pop()
			if !ok {
				break
			}
			if c.err != nil && errs[c.meta] == nil {
				errs[c.meta] = podErr(c.err, fmt.Sprintf("wire pod interface %d", pis[c.meta].Index))
			}
		}
		st.close()
	}
	for i, l := range ls {
		if !made[i] {
			continue
		}
		if errs[i] == nil && err != nil {
			errs[i] = podErr(err, fmt.Sprintf("wire interface %d", pis[i].Index))
		}
		if errs[i] != nil {
			if derr := p.DeletePodInterface(ctx, l, pis[i].Index); derr != nil {
				p.log.Warn("removing a half-made pod interface", "index", pis[i].Index, "err", derr)
			}
			pis[i] = PodInterface{}
			continue
		}
		p.log.Debug("pod interface wired", "index", pis[i].Index, "name", pis[i].Name, "tag", l.Tag, "ip", l.PodIP)
	}
	return pis, errs
}

// createAll sends the creation of every link's interface in one pipeline;
// made[i] tells that pis[i] was created. The error is the stream's when
// it could not be opened.
func (p *Pods) createAll(ctx context.Context, ls []PodLink, pis []PodInterface, errs []error, made []bool) error {
	st, err := openStream[int](ctx, p.conn)
	if err != nil {
		return podErr(err, "create pod interfaces")
	}
	defer st.close()
	for i, l := range ls {
		req, reply := createReq(l)
		if req == nil {
			errs[i] = fmt.Errorf("pod interface kind %q: %w", l.Kind, ErrPodRefused)
			st.settled(i)
			continue
		}
		st.send(i, req, reply)
	}
	for {
		c, ok := st.pop()
		if !ok {
			return nil
		}
		i, l := c.meta, ls[c.meta]
		if errs[i] != nil {
			continue
		}
		if c.err != nil {
			errs[i] = podErr(c.err, fmt.Sprintf("create %s interface on %s", l.Kind, l.HostIfName)+tapHint(l, c.err))
			continue
		}
		switch r := c.msg.(type) {
		case *af_packet.AfPacketCreateV3Reply:
			pis[i], made[i] = PodInterface{Index: uint32(r.SwIfIndex), Name: "host-" + l.HostIfName}, true
		case *tapv2.TapCreateV3Reply:
			pis[i], made[i] = PodInterface{Index: uint32(r.SwIfIndex)}, true
		}
	}
}

// createReq is the request creating l's interface and its reply; nil for
// an unknown kind.
func createReq(l PodLink) (api.Message, api.Message) {
	switch l.Kind {
	case PodLinkAFPacket:
		return &af_packet.AfPacketCreateV3{
			Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HwAddr: ethernet_types.MacAddress(l.MAC),
			HostIfName: l.HostIfName, NumRxQueues: 1, NumTxQueues: 1,
		}, &af_packet.AfPacketCreateV3Reply{}
	case PodLinkTap:
		return &tapv2.TapCreateV3{
			ID: noIndex, MacAddress: ethernet_types.MacAddress(l.MAC), NumRxQueues: 1, NumTxQueues: 1,
			TxRingSz: 256, RxRingSz: 256, HostMacAddrSet: true, HostMacAddr: ethernet_types.MacAddress(l.PodMAC),
			HostNamespaceSet: l.HostNetns != "", HostNamespace: l.HostNetns,
			HostIfNameSet: true, HostIfName: l.HostIfName, Tag: l.Tag,
		}, &tapv2.TapCreateV3Reply{}
	}
	return nil, nil
}

// TapNetnsMax is the longest netns tap_create_v3 takes (its
// host_namespace is a string[64] VPP reads up to a NUL).
const TapNetnsMax = 63

// tapHint says what a tap_create_v3 failure means (VPP's tap.c): -11 is
// /dev/vhost-net missing where VPP runs, -12 the netns not found.
func tapHint(l PodLink, err error) string {
	var rv api.VPPApiError
	if l.Kind != PodLinkTap || !errors.As(err, &rv) {
		return ""
	}
	switch rv {
	case api.SYSCALL_ERROR_1:
		return " (VPP cannot open /dev/vhost-net, which a tap v2 needs: give VPP the device or set cni.podInterface to af_packet)"
	case api.SYSCALL_ERROR_2:
		return fmt.Sprintf(" (VPP cannot open the netns %s or /dev/net/tun)", l.HostNetns)
	}
	return ""
}

// RewirePodInterface wires an existing pod interface again (idempotent
// steps: after an agent restart that found it incomplete).
func (p *Pods) RewirePodInterface(ctx context.Context, idx uint32, l PodLink) error {
	return p.wire(ctx, idx, l)
}

// wire sends the interface's settings in one pipeline (VPP answers in
// order; one round trip instead of six): the tag, the pod VRF, unnumbered
// to the gateway, up, the pod's static neighbour and its /32 route. It
// returns the first refusal (the later settings were sent all the same:
// each is idempotent, and a failed ADD deletes the interface).
func (p *Pods) wire(ctx context.Context, idx uint32, l PodLink) error {
	st, err := openStream[int](ctx, p.conn)
	if err != nil {
		return podErr(err, fmt.Sprintf("wire interface %d", idx))
	}
	defer st.close()
	p.sendWire(st, 0, idx, l)
	var first error
	for {
		c, ok := st.pop()
		if !ok {
			return first
		}
		if c.err != nil && first == nil {
			first = podErr(c.err, fmt.Sprintf("wire pod interface %d", idx))
		}
	}
}

// sendWire sends interface idx's settings on st (meta for each).
func (p *Pods) sendWire(st *stream[int], meta int, idx uint32, l PodLink) {
	ix := interface_types.InterfaceIndex(idx)
	st.send(meta, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: ix, Tag: l.Tag}, &interfaces.SwInterfaceTagAddDelReply{})
	st.send(meta, &interfaces.SwInterfaceSetTable{SwIfIndex: ix, VrfID: l.VRF}, &interfaces.SwInterfaceSetTableReply{})
	st.send(meta, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: interface_types.InterfaceIndex(l.Unnumbered), UnnumberedSwIfIndex: ix, IsAdd: true},
		&interfaces.SwInterfaceSetUnnumberedReply{})
	st.send(meta, &interfaces.SwInterfaceSetFlags{SwIfIndex: ix, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
	st.send(meta, podNeighbourReq(idx, l.PodIP, l.PodMAC, true), &ip_neighbor.IPNeighborAddDelReply{})
	st.send(meta, podRouteReq(idx, l, true), &ipapi.IPRouteAddDelReply{})
}

// DeletePodInterface removes a pod's route, neighbour and interface; what
// is already gone is no error.
func (p *Pods) DeletePodInterface(ctx context.Context, l PodLink, idx uint32) error {
	var errs []error
	if l.PodIP.IsValid() {
		if err := p.route(ctx, idx, l, false); err != nil && !missing(err) {
			errs = append(errs, err)
		}
		if err := p.neighbour(ctx, idx, l.PodIP, l.PodMAC, false); err != nil && !missing(err) {
			errs = append(errs, err)
		}
	}
	var err error
	switch l.Kind {
	case PodLinkAFPacket:
		err = p.conn.invoke(ctx, &af_packet.AfPacketDelete{HostIfName: l.HostIfName}, &af_packet.AfPacketDeleteReply{})
	case PodLinkTap:
		err = p.conn.invoke(ctx, &tapv2.TapDeleteV2{SwIfIndex: interface_types.InterfaceIndex(idx)}, &tapv2.TapDeleteV2Reply{})
	}
	if err != nil && !missing(err) {
		errs = append(errs, podErr(err, fmt.Sprintf("delete %s interface %d", l.Kind, idx)))
	}
	return errors.Join(errs...)
}

// PodInterfaceState is what VPP holds of one interface, for checks.
type PodInterfaceState struct {
	Index   uint32
	Name    string
	Tag     string
	MAC     [6]byte
	AdminUp bool
}

// ListInterfaces dumps VPP's interface table.
func (p *Pods) ListInterfaces(ctx context.Context) ([]PodInterfaceState, error) {
	var out []PodInterfaceState
	err := p.conn.dump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)}, func(m api.Message) error {
		d, ok := m.(*interfaces.SwInterfaceDetails)
		if !ok {
			return unexpected(m)
		}
		out = append(out, PodInterfaceState{Index: uint32(d.SwIfIndex), Name: d.InterfaceName, Tag: d.Tag,
			MAC: [6]byte(d.L2Address), AdminUp: d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0})
		return nil
	})
	if err != nil {
		return nil, podErr(err, "dump interfaces")
	}
	return out, nil
}

// HasPodRoute tells whether VPP's vrf has a /32 to ip through interface
// idx.
func (p *Pods) HasPodRoute(ctx context.Context, vrf, idx uint32, ip netip.Addr) (bool, error) {
	found := false
	err := p.conn.dump(ctx, &ipapi.IPRouteV2Dump{Table: ipapi.IPTable{TableID: vrf}}, func(m api.Message) error {
		d, ok := m.(*ipapi.IPRouteV2Details)
		if !ok {
			return unexpected(m)
		}
		r := d.Route
		if r.Prefix.Len == 32 && r.Prefix.Address.Un.GetIP4() == ip.As4() && len(r.Paths) == 1 && r.Paths[0].SwIfIndex == idx {
			found = true
		}
		return nil
	})
	if err != nil {
		return false, podErr(err, fmt.Sprintf("dump routes of VRF %d", vrf))
	}
	return found, nil
}

func (p *Pods) byTag(ctx context.Context, tag string) (PodInterfaceState, bool, error) {
	ifs, err := p.ListInterfaces(ctx)
	if err != nil {
		return PodInterfaceState{}, false, err
	}
	for _, i := range ifs {
		if i.Tag == tag {
			return i, true, nil
		}
	}
	return PodInterfaceState{}, false, nil
}

func (p *Pods) nameOf(ctx context.Context, idx uint32) string {
	ifs, err := p.ListInterfaces(ctx)
	if err == nil {
		for _, i := range ifs {
			if i.Index == idx {
				return i.Name
			}
		}
	}
	return fmt.Sprintf("if%d", idx)
}

func (p *Pods) tag(ctx context.Context, idx uint32, tag string) error {
	err := p.conn.invoke(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(idx), Tag: tag},
		&interfaces.SwInterfaceTagAddDelReply{})
	return podErr(err, fmt.Sprintf("tag interface %d %q", idx, tag))
}

// addTable makes IPv4 table vrf, unicast and multicast, where it is not
// complete yet (VPP answers 0 for one that exists).
func (p *Pods) addTable(ctx context.Context, vrf uint32) error {
	err := p.conn.invoke(ctx, &ipapi.IPTableAddDel{IsAdd: true, Table: ipapi.IPTable{TableID: vrf}}, &ipapi.IPTableAddDelReply{})
	return podErr(err, fmt.Sprintf("add IPv4 table %d", vrf))
}

func (p *Pods) setTable(ctx context.Context, idx, vrf uint32) error {
	err := p.conn.invoke(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: interface_types.InterfaceIndex(idx), VrfID: vrf},
		&interfaces.SwInterfaceSetTableReply{})
	return podErr(err, fmt.Sprintf("put interface %d in VRF %d", idx, vrf))
}

func (p *Pods) setUp(ctx context.Context, idx uint32, up bool) error {
	var f interface_types.IfStatusFlags
	if up {
		f = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	err := p.conn.invoke(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(idx), Flags: f},
		&interfaces.SwInterfaceSetFlagsReply{})
	return podErr(err, fmt.Sprintf("set interface %d up", idx))
}

func (p *Pods) address(ctx context.Context, idx uint32, a netip.Prefix, add bool) error {
	err := p.conn.invoke(ctx, &interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add,
		Prefix: ip_types.AddressWithPrefix{Address: address(a.Addr()), Len: uint8(a.Bits())},
	}, &interfaces.SwInterfaceAddDelAddressReply{})
	return podErr(err, fmt.Sprintf("%s address %s on interface %d", addDel(add), a, idx))
}

func (p *Pods) addresses(ctx context.Context, idx uint32) ([]netip.Prefix, error) {
	var out []netip.Prefix
	err := p.conn.dump(ctx, &ipapi.IPAddressDump{SwIfIndex: interface_types.InterfaceIndex(idx)}, func(m api.Message) error {
		d, ok := m.(*ipapi.IPAddressDetails)
		if !ok {
			return unexpected(m)
		}
		if pf, err := netip.ParsePrefix(d.Prefix.String()); err == nil {
			out = append(out, pf)
		}
		return nil
	})
	return out, podErr(err, fmt.Sprintf("dump addresses of interface %d", idx))
}

func (p *Pods) neighbour(ctx context.Context, idx uint32, ip netip.Addr, mac [6]byte, add bool) error {
	err := p.conn.invoke(ctx, podNeighbourReq(idx, ip, mac, add), &ip_neighbor.IPNeighborAddDelReply{})
	return podErr(err, fmt.Sprintf("%s neighbour %s on interface %d", addDel(add), ip, idx))
}

func podNeighbourReq(idx uint32, ip netip.Addr, mac [6]byte, add bool) *ip_neighbor.IPNeighborAddDel {
	return &ip_neighbor.IPNeighborAddDel{IsAdd: add, Neighbor: ip_neighbor.IPNeighbor{
		SwIfIndex: interface_types.InterfaceIndex(idx), Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC,
		MacAddress: ethernet_types.MacAddress(mac), IPAddress: address(ip),
	}}
}

func (p *Pods) route(ctx context.Context, idx uint32, l PodLink, add bool) error {
	err := p.conn.invoke(ctx, podRouteReq(idx, l, add), &ipapi.IPRouteAddDelReply{})
	return podErr(err, fmt.Sprintf("%s route %s/32 in VRF %d", addDel(add), l.PodIP, l.VRF))
}

func podRouteReq(idx uint32, l PodLink, add bool) *ipapi.IPRouteAddDel {
	return &ipapi.IPRouteAddDel{IsAdd: add, Route: ipapi.IPRoute{
		TableID: l.VRF,
		Prefix:  ip_types.Prefix{Address: address(l.PodIP), Len: 32},
		NPaths:  1,
		Paths: []fib_types.FibPath{{SwIfIndex: idx, Weight: 1, Type: fib_types.FIB_API_PATH_TYPE_NORMAL,
			Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4, Nh: fib_types.FibPathNh{Address: ip_types.AddressUnionIP4(l.PodIP.As4())}}},
	}}
}
