package pods

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"unsafe"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The pod side of a pod's link, in the netns the runtime gave: eth0 with
// the pod's address as a /32 (so that nothing of the pod subnet, the NAT
// loopback included, is on-link), a link route to the gateway, the
// default route through it and a permanent ARP entry for the gateway
// (VPP's end answers no ARP for an unnumbered address it borrows).

// vethMTU is the MTU of a pod's veth pair.
const vethMTU = 1500

// netnsGone tells whether err says the pod's netns does not exist.
func netnsGone(err error) bool {
	var nse ns.NSPathNotExistErr
	return errors.As(err, &nse) || errors.Is(err, os.ErrNotExist)
}

// withNetns runs f in the netns at path; a missing netns wraps
// ErrNetnsGone.
func withNetns(path string, f func(ns.NetNS) error) error {
	n, err := ns.GetNS(path)
	if err != nil {
		if netnsGone(err) {
			return fmt.Errorf("netns %s: %w", path, ErrNetnsGone)
		}
		return fmt.Errorf("netns %s: %w", path, err)
	}
	defer n.Close()
	return n.Do(f)
}

// makeVeth makes the veth pair of an af_packet pod: hostName in the
// agent's netns (VPP's), up, and its peer made at once in the pod's netns
// as ifName (no move between netns: a move costs the kernel ~16-19 ms a
// link on the 2-CPU VM under load, the creation ~1.4 ms; docs/PERFORMANCE.md),
// without transmit checksum offload (txChecksumOff: what VPP sends
// through it carries whole checksums). It returns the pod end's MAC.
func makeVeth(netnsPath, ifName, hostName string) (net.HardwareAddr, error) {
	podNS, err := ns.GetNS(netnsPath)
	if err != nil {
		if netnsGone(err) {
			return nil, fmt.Errorf("netns %s: %w", netnsPath, ErrNetnsGone)
		}
		return nil, fmt.Errorf("netns %s: %w", netnsPath, err)
	}
	defer podNS.Close()
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = hostName, vethMTU
	veth := &netlink.Veth{LinkAttrs: la, PeerName: ifName, PeerNamespace: netlink.NsFd(int(podNS.Fd()))}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("veth %s/%s: %w", ifName, hostName, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return nil, fmt.Errorf("set %s up: %w", hostName, err)
	}
	var mac net.HardwareAddr
	err = podNS.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return fmt.Errorf("pod link %s: %w", ifName, err)
		}
		mac = l.Attrs().HardwareAddr
		return txChecksumOff(ifName)
	})
	return mac, err
}

// txChecksumOff turns off the transmit checksum offload of link name
// (in the calling thread's netns) with the one legacy ethtool request
// `ethtool -K name tx off` stands for (ETHTOOL_STXCSUM): the kernel clears
// every checksum feature of the link (NETIF_F_CSUM_MASK, and the
// segmentation offloads that need them with them). A veth end offloading
// its checksums hands the peer a packet whose TCP or UDP checksum is only
// partial: VPP's af_packet input does not complete it, so VPP forwards it
// as it is and the receiving pod's kernel drops it as corrupt (measured
// on VPP 25.02: no TCP connection between two pods of the node;
// TcpInCsumErrors counts the SYNs). One request, not the feature names'
// table read twice and the features read and written (~4 ms of an ADD on
// the loaded 2-CPU VM, docs/PERFORMANCE.md).
func txChecksumOff(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket for %s: %w", name, err)
	}
	defer unix.Close(fd)
	v := ethtoolValue{cmd: ethtoolSTxCsum, data: 0}
	req := ifreqData{data: unsafe.Pointer(&v)}
	if len(name) >= len(req.name) {
		return fmt.Errorf("interface name %q too long", name)
	}
	copy(req.name[:], name)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
	runtime.KeepAlive(&v)
	if errno != 0 {
		return fmt.Errorf("turning off the transmit checksum offload of %s: %w", name, errno)
	}
	return nil
}

// ethtoolSTxCsum is ETHTOOL_STXCSUM (linux/ethtool.h).
const ethtoolSTxCsum = 0x17

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct{ cmd, data uint32 }

// ifreqData is struct ifreq with its ifr_data member (40 bytes on 64-bit
// Linux: the name, then a 24-byte union).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// deleteHostLink deletes the agent's end of a pod's veth pair (the pod's
// end goes with it); a missing one is no error.
func deleteHostLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

// hostLinkExists tells whether the agent's netns has a link called name.
func hostLinkExists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

// podConfig is what the pod's eth0 gets.
type podConfig struct {
	ifName  string
	ip      netip.Addr
	gateway netip.Addr
	gwMAC   net.HardwareAddr
}

// configurePod sets up eth0 in the pod's netns (already holding the link).
func configurePod(netnsPath string, c podConfig) error {
	return withNetns(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(c.ifName)
		if err != nil {
			return fmt.Errorf("pod link %s: %w", c.ifName, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", c.ifName, err)
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: c.ip.AsSlice(), Mask: net.CIDRMask(32, 32)}}
		if err := netlink.AddrReplace(l, addr); err != nil {
			return fmt.Errorf("address %s on %s: %w", c.ip, c.ifName, err)
		}
		gw := &net.IPNet{IP: c.gateway.AsSlice(), Mask: net.CIDRMask(32, 32)}
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: gw, Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("route to the gateway %s: %w", c.gateway, err)
		}
		def := &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: def, Gw: c.gateway.AsSlice()}); err != nil {
			return fmt.Errorf("default route via %s: %w", c.gateway, err)
		}
		err = netlink.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: netlink.FAMILY_V4,
			State: netlink.NUD_PERMANENT, IP: c.gateway.AsSlice(), HardwareAddr: c.gwMAC})
		if err != nil {
			return fmt.Errorf("ARP entry for the gateway %s: %w", c.gateway, err)
		}
		return nil
	})
}

// deletePodLink removes ifName from the pod's netns; a missing netns or
// link is no error.
func deletePodLink(netnsPath, ifName string) error {
	err := withNetns(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return nil //nolint:nilerr // gone already
		}
		return netlink.LinkDel(l)
	})
	if errors.Is(err, ErrNetnsGone) {
		return nil
	}
	return err
}

// checkPod verifies the pod's eth0: the address, the gateway's link route
// and the default route through it.
func checkPod(netnsPath string, c podConfig) error {
	return withNetns(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(c.ifName)
		if err != nil {
			return fmt.Errorf("pod link %s: %w", c.ifName, err)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("addresses of %s: %w", c.ifName, err)
		}
		found := false
		for _, a := range addrs {
			if ones, _ := a.Mask.Size(); a.IP.Equal(c.ip.AsSlice()) && ones == 32 {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s lacks %s/32", c.ifName, c.ip)
		}
		routes, err := netlink.RouteList(l, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("routes of %s: %w", c.ifName, err)
		}
		var gwRoute, defRoute bool
		for _, r := range routes {
			switch {
			case r.Dst != nil && r.Dst.IP.Equal(c.gateway.AsSlice()) && r.Scope == netlink.SCOPE_LINK:
				gwRoute = true
			case (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw.Equal(c.gateway.AsSlice()):
				defRoute = true
			}
		}
		if !gwRoute {
			return fmt.Errorf("%s lacks the link route to the gateway %s", c.ifName, c.gateway)
		}
		if !defRoute {
			return fmt.Errorf("%s lacks the default route via %s", c.ifName, c.gateway)
		}
		return nil
	})
}
