package sim

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/tapv2"
	"golang.org/x/sys/unix"
)

// The tap v2 interfaces: tap_create_v3 makes the VPP end and, as the real
// VPP does, the kernel end, a real tap device (/dev/net/tun) in the
// network namespace the request names, with the attributes it asks for;
// tap_delete_v2 and a VPP exit (restart, crash, Close) remove it.
//
// As read in VPP 25.02's src/vnet/devices/tap/tap.c (tap_create_if,
// tap_delete_if, tap_free) and tapv2_api.c, and 26.06's
// src/plugins/tap/tap.c (the same steps and return values):
//
//   - An id already taken answers -71 (invalid interface); id ~0 takes the
//     lowest free one; one above 8192 -1.
//   - host_namespace names the netns all the kernel work runs in
//     (vppinfra's clib_netns_open): "pid:<n>" is /proc/<n>/ns/net, a path
//     starting with '/' is taken as it is, any other name is
//     /var/run/netns/<name>. A netns that cannot be opened answers -12,
//     one that cannot be entered -13. The field is a string[64]: a
//     longer name reaches VPP without its terminating NUL and is read on
//     into the next fields, a path that does not exist (-12).
//   - /dev/net/tun is opened there (failure -12), its features must
//     include IFF_VNET_HDR (-12), IFF_MULTI_QUEUE is asked for where the
//     kernel has it, and TUNSETIFF makes the device IFF_TAP|IFF_NO_PI|
//     IFF_VNET_HDR named host_if_name (the kernel's "tap%d" without one);
//     an ioctl that fails answers -13. One more /dev/net/tun queue is
//     attached per extra rx queue. The device is not persistent (unless
//     TAP_API_FLAG_PERSIST): it lives as long as VPP holds its fds.
//   - /dev/vhost-net is opened once the device exists: without it VPP
//     answers -11 (SYSCALL_ERROR_1) and closes the device (the kernel
//     removes it): nothing is left, in VPP or in the kernel. The sim does
//     not open /dev/vhost-net; SetVhostNet says whether it exists
//     (default: whether the host has it).
//   - Then, by netlink in that netns, each failure -145 (netlink error)
//     and the device closed: host_mac_addr (a random one when zero) and
//     host_bridge as master (tap mode), host_ip4_prefix and
//     host_ip6_prefix added, the link set up (always), a default route
//     via host_ip4_gw (and host_ip6_gw) added, replacing, in the main
//     table with no output interface (the gateway must be reachable
//     already: a /32 address alone gives "network unreachable"), and
//     host_mtu_size when host_mtu_set (else the kernel's default; 25.02
//     also takes a startup configuration "tap { host-mtu }", not
//     modelled).
//   - The VPP end is made last ("tap<id>", admin down, the tag applied).
//   - tap_delete_v2 removes the VPP end and closes the fds (the kernel end
//     goes with them); a VPP exit closes every fd the same way.
//
// ASSUMPTION: what the sim leaves out has no effect the agent can see:
// the vhost rings, TUNSETVNETHDRSZ, TUNSETSNDBUF, TUNSETOFFLOAD (GSO and
// checksum offload flags), packed rings. TUN mode (TAP_API_FLAG_TUN) is
// not modelled: the sim answers it -126 (unsupported) and says so in its
// log. The taps VPP's startup configuration makes (InterfaceSpec "tapN")
// have no kernel end in the sim.

// tapMaxInstance is TAP_MAX_INSTANCE (tap.c).
const tapMaxInstance = 8192

// tapIDTaken is the retval of tap_create_v3 for an id in use
// (tap.c: VNET_API_ERROR_INVALID_INTERFACE).
const tapIDTaken = api.INVALID_INTERFACE

// kernelTap is the kernel end of a tap the sim made: its open queues.
type kernelTap struct {
	fds   []int
	netns string // the path opened ("" for the sim's own netns)
	name  string
}

func (k *kernelTap) close() {
	for _, fd := range k.fds {
		_ = unix.Close(fd)
	}
	k.fds = nil
}

// SetVhostNet says whether /dev/vhost-net exists for this VPP (tests of
// the tap path say it does). Without it, tap_create_v3 answers -11 as
// the real VPP does. Default: whether the host has it.
func (v *VPP) SetVhostNet(present bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pods.vhostNet = &present
}

func (v *VPP) vhostNetPresent() bool {
	if v.pods.vhostNet != nil {
		return *v.pods.vhostNet
	}
	_, err := os.Stat("/dev/vhost-net")
	return err == nil
}

// KernelTap is the kernel end of a tap the sim made, as a test reads it.
type KernelTap struct {
	// Interface is the VPP end's index.
	Interface uint32
	// Netns is the path VPP opened ("" for VPP's own netns); Name the
	// device's name there.
	Netns, Name string
}

// KernelTaps lists the kernel ends of the taps the sim holds open, by VPP
// interface index.
func (v *VPP) KernelTaps() []KernelTap {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]KernelTap, 0, len(v.pods.taps))
	for idx, k := range v.pods.taps {
		out = append(out, KernelTap{Interface: idx, Netns: k.netns, Name: k.name})
	}
	slices.SortFunc(out, func(a, b KernelTap) int { return int(a.Interface) - int(b.Interface) })
	return out
}

// closeTaps closes every kernel tap (VPP exits: the kernel removes
// the non-persistent ones).
func (p *podState) closeTaps() {
	for idx, k := range p.taps {
		k.close()
		delete(p.taps, idx)
	}
}

// netnsPath is clib_netns_open's name resolution (vppinfra/linux/netns.c).
func netnsPath(name string) string {
	switch {
	case strings.HasPrefix(name, "pid:"):
		n, _ := strconv.Atoi(name[4:]) // atoi: garbage is 0
		return fmt.Sprintf("/proc/%d/ns/net", n)
	case strings.HasPrefix(name, "/"):
		return name
	}
	return "/var/run/netns/" + name
}

// tapFailure is a tap_create_v3 failure: its retval and why.
type tapFailure struct {
	rv  api.VPPApiError
	err error
}

func (f *tapFailure) Error() string { return fmt.Sprintf("%v (retval %d)", f.err, f.rv) }

func tapFail(rv api.VPPApiError, format string, a ...any) error {
	return &tapFailure{rv: rv, err: fmt.Errorf(format, a...)}
}

func (v *VPP) tapCreateV3(req *tapv2.TapCreateV3) []api.Message {
	r := &tapv2.TapCreateV3Reply{SwIfIndex: interface_types.InterfaceIndex(noIndex)}
	id := req.ID
	if id == noIndex {
		id = 0
		for v.ifaceByName(fmt.Sprintf("tap%d", id)) != nil {
			id++
		}
	} else if v.ifaceByName(fmt.Sprintf("tap%d", id)) != nil {
		return reply(r, tapIDTaken)
	}
	if id > tapMaxInstance {
		return reply(r, api.UNSPECIFIED)
	}
	if req.TapFlags&tapv2.TAP_API_FLAG_TUN != 0 {
		v.log.Error("SIMULATED VPP: tap_create_v3 in TUN mode is not modelled; answering unsupported")
		return reply(r, api.UNSUPPORTED)
	}
	k, err := v.makeKernelTap(req)
	if err != nil {
		v.log.Warn("simulated VPP: tap_create_v3 failed as the real VPP would", "err", err)
		var f *tapFailure
		if errors.As(err, &f) {
			return reply(r, f.rv)
		}
		return reply(r, api.SYSCALL_ERROR_3)
	}
	s := InterfaceSpec{Name: fmt.Sprintf("tap%d", id), AdminDown: true, Tag: req.Tag}
	if !req.UseRandomMac {
		s.MAC = [6]byte(req.MacAddress)
	}
	idx := v.createDynamicLocked(s)
	v.pods.init()
	v.pods.taps[idx] = k
	r.SwIfIndex = interface_types.InterfaceIndex(idx)
	return reply(r, 0)
}

// makeKernelTap makes the kernel end as tap_create_if does (see the top
// of the file); on failure nothing is left.
func (v *VPP) makeKernelTap(req *tapv2.TapCreateV3) (*kernelTap, error) {
	k := &kernelTap{}
	run := func(f func() error) error { return f() }
	if req.HostNamespaceSet {
		if len(req.HostNamespace) >= 64 {
			return nil, tapFail(api.SYSCALL_ERROR_2, "clib_netns_open %q: no NUL within string[64]", req.HostNamespace)
		}
		k.netns = netnsPath(req.HostNamespace)
		netns, err := ns.GetNS(k.netns)
		if err != nil {
			return nil, tapFail(api.SYSCALL_ERROR_2, "clib_netns_open '%s': %w", k.netns, err)
		}
		defer netns.Close()
		run = func(f func() error) error {
			err := netns.Do(func(ns.NetNS) error { return f() })
			var f2 *tapFailure
			if err != nil && !errors.As(err, &f2) {
				return tapFail(api.SYSCALL_ERROR_3, "setns '%s': %w", k.netns, err)
			}
			return err
		}
	}
	err := run(func() error { return v.tapInNetns(req, k) })
	if err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// tapInNetns is the kernel work, in the calling thread's netns.
func (v *VPP) tapInNetns(req *tapv2.TapCreateV3, k *kernelTap) error {
	name := ""
	if req.HostIfNameSet {
		name = req.HostIfName
		if len(name) >= unix.IFNAMSIZ {
			name = name[:unix.IFNAMSIZ-1] // the kernel ends the name there
		}
	}
	open := func() (int, error) {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, tapFail(api.SYSCALL_ERROR_2, "open '/dev/net/tun': %w", err)
		}
		k.fds = append(k.fds, fd)
		return fd, nil
	}
	fd, err := open()
	if err != nil {
		return err
	}
	features, err := unix.IoctlGetUint32(fd, unix.TUNGETFEATURES)
	if err != nil {
		return tapFail(api.SYSCALL_ERROR_3, "ioctl(TUNGETFEATURES): %w", err)
	}
	if features&unix.IFF_VNET_HDR == 0 {
		return tapFail(api.SYSCALL_ERROR_2, "vhost-net backend not available")
	}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	rxqs := max(int(req.NumRxQueues), 1)
	if features&unix.IFF_MULTI_QUEUE == 0 {
		if rxqs > 1 {
			return tapFail(api.SYSCALL_ERROR_2, "multiqueue not supported")
		}
	} else {
		flags |= unix.IFF_MULTI_QUEUE
	}
	setIff := func(fd int) error {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return tapFail(api.SYSCALL_ERROR_3, "ioctl(TUNSETIFF): %w", err)
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return tapFail(api.SYSCALL_ERROR_3, "ioctl(TUNSETIFF) %q: %w", name, err)
		}
		name = ifr.Name()
		return nil
	}
	if err := setIff(fd); err != nil {
		return err
	}
	k.name = name
	switch {
	case req.TapFlags&tapv2.TAP_API_FLAG_ATTACH != 0:
		if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 0); err != nil {
			return tapFail(api.SYSCALL_ERROR_3, "ioctl(TUNSETPERSIST): %w", err)
		}
	case req.TapFlags&tapv2.TAP_API_FLAG_PERSIST != 0:
		if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
			return tapFail(api.SYSCALL_ERROR_3, "ioctl(TUNSETPERSIST): %w", err)
		}
	}
	for range rxqs - 1 {
		qfd, err := open()
		if err != nil {
			return err
		}
		if err := setIff(qfd); err != nil {
			return err
		}
	}
	if !v.vhostNetPresent() {
		return tapFail(api.SYSCALL_ERROR_1, "open '/dev/vhost-net': no such file or directory")
	}
	return configureKernelTap(req, name)
}

// configureKernelTap applies the host_* fields by netlink, as tap_create_if
// does, in its order.
func configureKernelTap(req *tapv2.TapCreateV3, name string) error {
	nlErr := func(what string, err error) error { return tapFail(api.NETLINK_ERROR, "%s on %s: %w", what, name, err) }
	l, err := netlink.LinkByName(name)
	if err != nil {
		return nlErr("if_nametoindex", err)
	}
	mac := net.HardwareAddr(req.HostMacAddr[:])
	if req.HostMacAddr == [6]byte{} {
		mac = randomMAC()
	}
	if err := netlink.LinkSetHardwareAddr(l, mac); err != nil {
		return nlErr("set the MAC", err)
	}
	if req.HostBridgeSet {
		br, err := netlink.LinkByName(req.HostBridge)
		if err == nil {
			err = netlink.LinkSetMaster(l, br)
		}
		if err != nil {
			return nlErr("set master "+req.HostBridge, err)
		}
	}
	if req.HostIP4PrefixSet {
		p := req.HostIP4Prefix
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(p.Address[:]), Mask: net.CIDRMask(int(p.Len), 32)}}
		if err := netlink.AddrAdd(l, a); err != nil {
			return nlErr("add the IPv4 address", err)
		}
	}
	if req.HostIP6PrefixSet {
		p := req.HostIP6Prefix
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(p.Address[:]), Mask: net.CIDRMask(int(p.Len), 128)}}
		if err := netlink.AddrAdd(l, a); err != nil {
			return nlErr("add the IPv6 address", err)
		}
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return nlErr("set the link up", err)
	}
	if req.HostIP4GwSet {
		dst := &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
		if err := netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: net.IP(req.HostIP4Gw[:])}); err != nil {
			return nlErr("add ip4 route", err)
		}
	}
	if req.HostIP6GwSet {
		dst := &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
		if err := netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: net.IP(req.HostIP6Gw[:])}); err != nil {
			return nlErr("add ip6 route", err)
		}
	}
	if req.HostMtuSet {
		if err := netlink.LinkSetMTU(l, int(req.HostMtuSize)); err != nil {
			return nlErr("set the MTU", err)
		}
	}
	return nil
}

// randomMAC is a random locally administered unicast MAC (VPP's
// ethernet_mac_address_generate makes one of that kind).
func randomMAC() net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	_, _ = rand.Read(m)
	m[0] = m[0]&^1 | 2
	return m
}

func (v *VPP) tapDeleteV2(req *tapv2.TapDeleteV2) []api.Message {
	r := &tapv2.TapDeleteV2Reply{}
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	if !ok || i.devType != devVirtio {
		return reply(r, api.INVALID_SW_IF_INDEX)
	}
	v.deletePodIfLocked(i.index)
	return reply(r, 0)
}
