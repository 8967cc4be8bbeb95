package sim

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/core"
)

// tapNetns makes a network namespace for the test, removed at its end;
// it skips, loudly, where the kernel refuses one or a tap.
func tapNetns(t *testing.T) ns.NetNS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the simulated VPP's taps are real kernel taps: run as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("SKIPPED LOUDLY: no /dev/net/tun: %v", err)
	}
	n, err := testutils.NewNS()
	if err != nil {
		t.Skipf("SKIPPED LOUDLY: the kernel refuses a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = n.Close(); _ = testutils.UnmountNS(n) })
	return n
}

// podTap is the request the agent sends for a pod (plugins/vpp/pods.go),
// with the host_* fields the agent does not use set too.
func podTap(netns string) *tapv2.TapCreateV3 {
	return &tapv2.TapCreateV3{
		ID: noIndex, MacAddress: ethernet_types.MacAddress{0x02, 0xfe, 0, 0, 0, 1}, NumRxQueues: 1, NumTxQueues: 1,
		HostMacAddrSet: true, HostMacAddr: ethernet_types.MacAddress{0x02, 0xaa, 0, 0, 0, 5},
		HostNamespaceSet: true, HostNamespace: netns, HostIfNameSet: true, HostIfName: "eth0", Tag: "default/web",
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip_types.IP4Address{10, 1, 1, 5}, Len: 24},
		HostIP4GwSet: true, HostIP4Gw: ip_types.IP4Address{10, 1, 1, 1},
		HostMtuSet: true, HostMtuSize: 1400,
	}
}

// linkIn is the link called name in netns n (nil if none).
func linkIn(t *testing.T, n ns.NetNS, name string) (l netlink.Link, addrs []netlink.Addr, routes []netlink.Route) {
	t.Helper()
	_ = n.Do(func(ns.NetNS) error {
		var err error
		if l, err = netlink.LinkByName(name); err != nil {
			l = nil
			return nil
		}
		addrs, _ = netlink.AddrList(l, netlink.FAMILY_V4)
		routes, _ = netlink.RouteList(l, netlink.FAMILY_V4)
		return nil
	})
	return l, addrs, routes
}

func createTap(t *testing.T, conn *core.Connection, req *tapv2.TapCreateV3) (uint32, api.VPPApiError) {
	t.Helper()
	r := &tapv2.TapCreateV3Reply{}
	rv := call(t, conn, req, r)
	return uint32(r.SwIfIndex), rv
}

// TestTapMakesItsKernelEndInTheNetns: tap_create_v3 makes a kernel tap in
// the named netns with the MAC, address, gateway route and MTU asked for,
// up, as VPP's tap.c does; tap_delete_v2, a restart, a crash and Close
// remove it.
func TestTapMakesItsKernelEndInTheNetns(t *testing.T) {
	n := tapNetns(t)
	v, conn := connect(t, Options{})
	v.SetVhostNet(true)
	req := podTap(n.Path())
	idx, rv := createTap(t, conn, req)
	if rv != 0 {
		t.Fatalf("tap_create_v3: %v", rv)
	}
	d, ok := v.InterfaceNamed("tap0")
	if !ok || d.Index != idx || d.Tag != "default/web" || d.AdminUp || d.MAC.String() != "02:fe:00:00:00:01" {
		t.Errorf("VPP end %+v (%v); want tap0, index %d, tagged, admin down, 02:fe:00:00:00:01", d, ok, idx)
	}
	l, addrs, routes := linkIn(t, n, "eth0")
	if l == nil {
		t.Fatal("no eth0 in the pod's netns")
	}
	if tt, ok := l.(*netlink.Tuntap); !ok || tt.Mode != netlink.TUNTAP_MODE_TAP {
		t.Errorf("eth0 is a %s, want a tap", l.Type())
	}
	a := l.Attrs()
	if a.HardwareAddr.String() != "02:aa:00:00:00:05" || a.MTU != 1400 || a.Flags&net.FlagUp == 0 {
		t.Errorf("eth0: MAC %s, MTU %d, flags %v; want 02:aa:00:00:00:05, 1400, up", a.HardwareAddr, a.MTU, a.Flags)
	}
	if len(addrs) != 1 || addrs[0].IPNet.String() != "10.1.1.5/24" {
		t.Errorf("eth0's addresses %v, want 10.1.1.5/24", addrs)
	}
	var dflt bool
	for _, r := range routes {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw.Equal(net.IPv4(10, 1, 1, 1)) {
			dflt = true
		}
	}
	if !dflt {
		t.Errorf("no default route via 10.1.1.1: %v", routes)
	}
	if k := v.KernelTaps(); len(k) != 1 || k[0].Interface != idx || k[0].Name != "eth0" || k[0].Netns != n.Path() {
		t.Errorf("KernelTaps = %+v", k)
	}

	if rv := call(t, conn, &tapv2.TapDeleteV2{SwIfIndex: interface_types.InterfaceIndex(idx)}, &tapv2.TapDeleteV2Reply{}); rv != 0 {
		t.Fatalf("tap_delete_v2: %v", rv)
	}
	if l, _, _ := linkIn(t, n, "eth0"); l != nil {
		t.Error("tap_delete_v2 left the kernel end")
	}
	if _, ok := v.InterfaceNamed("tap0"); ok {
		t.Error("tap_delete_v2 left the VPP end")
	}

	// VPP exits: the kernel removes the taps whose fds it held.
	for _, exit := range []struct {
		name string
		do   func(*VPP)
	}{{"restart", (*VPP).Restart}, {"crash", func(v *VPP) { v.mu.Lock(); v.crashLocked("test"); v.mu.Unlock() }}, {"close", (*VPP).Close}} {
		v2, conn2 := connect(t, Options{})
		v2.SetVhostNet(true)
		if _, rv := createTap(t, conn2, podTap(n.Path())); rv != 0 {
			t.Fatalf("%s: tap_create_v3: %v", exit.name, rv)
		}
		exit.do(v2)
		if l, _, _ := linkIn(t, n, "eth0"); l != nil {
			t.Errorf("%s: the kernel end outlived VPP", exit.name)
		}
		if k := v2.KernelTaps(); len(k) != 0 {
			t.Errorf("%s: KernelTaps = %+v", exit.name, k)
		}
	}
}

// TestTapRefusals: what the real VPP refuses, the sim refuses, with the
// same retval and nothing left behind.
func TestTapRefusals(t *testing.T) {
	n := tapNetns(t)
	noKernelEnd := func(t *testing.T, v *VPP) {
		t.Helper()
		if l, _, _ := linkIn(t, n, "eth0"); l != nil {
			t.Error("a kernel end is left")
		}
		for _, i := range v.Interfaces() {
			if strings.HasPrefix(i.Name, "tap") {
				t.Errorf("a VPP end is left: %+v", i)
			}
		}
		if k := v.KernelTaps(); len(k) != 0 {
			t.Errorf("KernelTaps = %+v", k)
		}
	}
	t.Run("no vhost-net", func(t *testing.T) {
		v, conn := connect(t, Options{})
		v.SetVhostNet(false)
		if _, rv := createTap(t, conn, podTap(n.Path())); rv != api.SYSCALL_ERROR_1 {
			t.Errorf("without /dev/vhost-net: %v, want %v", rv, api.SYSCALL_ERROR_1)
		}
		noKernelEnd(t, v)
	})
	t.Run("netns", func(t *testing.T) {
		v, conn := connect(t, Options{})
		v.SetVhostNet(true)
		for _, netns := range []string{"/var/run/netns/no-such-netns", "no-such-netns", "pid:999999999",
			// 64 bytes: no room for the NUL in string[64].
			"/var/run/netns/" + strings.Repeat("x", 49)} {
			if _, rv := createTap(t, conn, podTap(netns)); rv != api.SYSCALL_ERROR_2 {
				t.Errorf("netns %q: %v, want %v", netns, rv, api.SYSCALL_ERROR_2)
			}
		}
		noKernelEnd(t, v)
		// By name: /var/run/netns/<name>.
		if _, rv := createTap(t, conn, podTap(filepath.Base(n.Path()))); rv != 0 {
			t.Errorf("netns by name: %v", rv)
		}
		if l, _, _ := linkIn(t, n, "eth0"); l == nil {
			t.Error("netns by name: no eth0")
		}
		v.Close()
	})
	t.Run("gateway unreachable", func(t *testing.T) {
		v, conn := connect(t, Options{})
		v.SetVhostNet(true)
		req := podTap(n.Path())
		req.HostIP4Prefix.Len = 32 // the gateway is not on-link
		if _, rv := createTap(t, conn, req); rv != api.NETLINK_ERROR {
			t.Errorf("gateway off-link: %v, want %v", rv, api.NETLINK_ERROR)
		}
		noKernelEnd(t, v)
	})
	t.Run("name taken", func(t *testing.T) {
		v, conn := connect(t, Options{})
		v.SetVhostNet(true)
		err := n.Do(func(ns.NetNS) error {
			return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}})
		})
		if err != nil {
			t.Fatalf("a bridge called eth0: %v", err)
		}
		if _, rv := createTap(t, conn, podTap(n.Path())); rv != api.SYSCALL_ERROR_3 {
			t.Errorf("eth0 taken by a bridge: %v, want %v", rv, api.SYSCALL_ERROR_3)
		}
		_ = n.Do(func(ns.NetNS) error {
			l, err := netlink.LinkByName("eth0")
			if err == nil {
				err = netlink.LinkDel(l)
			}
			return err
		})
		if k := v.KernelTaps(); len(k) != 0 {
			t.Errorf("KernelTaps = %+v", k)
		}
	})
	t.Run("id taken", func(t *testing.T) {
		v, conn := connect(t, Options{})
		v.SetVhostNet(true)
		req := podTap(n.Path())
		req.ID = 3
		if _, rv := createTap(t, conn, req); rv != 0 {
			t.Fatalf("tap id 3: %v", rv)
		}
		req = podTap(n.Path())
		req.ID, req.HostIfName = 3, "eth1"
		if _, rv := createTap(t, conn, req); rv != api.INVALID_INTERFACE {
			t.Errorf("tap id 3 again: %v, want %v (tap.c)", rv, api.INVALID_INTERFACE)
		}
		if l, _, _ := linkIn(t, n, "eth1"); l != nil {
			t.Error("a refused id made a kernel end")
		}
		v.Close()
	})
}
