package pods

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"

	"contiv.dev/vpp/plugins/vpp"
)

// The tap v2 path: the simulated VPP makes a tap's kernel end in the pod's
// netns as the real VPP does (sim/tap.go), and removes it when the tap is
// deleted or VPP exits.

// newTapEnv is newEnv with pods wired by taps and a VPP that has
// /dev/vhost-net.
func newTapEnv(t *testing.T) *env {
	t.Helper()
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("SKIPPED LOUDLY: no /dev/net/tun for the simulated VPP's taps: %v", err)
	}
	e := newEnv(t, 24)
	e.kind = vpp.PodLinkTap
	e.vpp.SetVhostNet(true)
	t.Cleanup(e.vpp.Close) // VPP exits: its taps go
	e.m = e.newManager()
	return e
}

// podTap returns the pod's eth0 if it is a tap (nil if there is none),
// and fails the test if it is something else.
func (e *env) podTap(req Request) netlink.Link {
	e.t.Helper()
	var l netlink.Link
	err := withNetns(req.Netns, func(ns.NetNS) error {
		var err error
		l, err = netlink.LinkByName(req.IfName)
		if err != nil {
			l = nil
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("pod netns: %v", err)
	}
	if l == nil {
		return nil
	}
	if tt, ok := l.(*netlink.Tuntap); !ok || tt.Mode != netlink.TUNTAP_MODE_TAP {
		e.t.Fatalf("the pod's %s is a %s, not a tap", req.IfName, l.Type())
	}
	return l
}

// assertTapWired is assertWired and the tap's kernel end: VPP's tap in the
// pod's netns with the pod's MAC.
func (e *env) assertTapWired(req Request, res Result) {
	e.t.Helper()
	e.assertWired(req, res)
	l := e.podTap(req)
	if l == nil {
		e.t.Fatalf("no tap %s in the pod's netns", req.IfName)
	}
	if l.Attrs().HardwareAddr.String() != res.MAC {
		e.t.Errorf("the pod's tap has MAC %s; the result says %s", l.Attrs().HardwareAddr, res.MAC)
	}
	tag := req.Namespace + "/" + req.Pod
	i := e.podInterfaces()[tag]
	if !strings.HasPrefix(i.Name, "tap") || res.VPPInterface != i.Name {
		e.t.Errorf("VPP interface %s (result: %s); want a tap", i.Name, res.VPPInterface)
	}
	found := false
	for _, k := range e.vpp.KernelTaps() {
		found = found || (k.Interface == i.Index && k.Netns == req.Netns && k.Name == req.IfName)
	}
	if !found {
		e.t.Errorf("VPP holds no kernel end %s in %s for %s: %+v", req.IfName, req.Netns, i.Name, e.vpp.KernelTaps())
	}
}

// TestTapAddCheckDel: over the tap path, ADD gives the pod VPP's tap as
// eth0 with its address, the gateway and default routes and the
// gateway's ARP entry, and a tagged VPP interface; CHECK passes, and
// fails once the pod side is broken; DEL removes both ends, twice.
func TestTapAddCheckDel(t *testing.T) {
	e := newTapEnv(t)
	ctx := context.Background()
	req := e.request("web", e.netns())
	res, err := e.m.Add(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.assertTapWired(req, res)
	if err := e.m.Check(ctx, req); err != nil {
		t.Fatalf("CHECK after ADD: %v", err)
	}
	writes := e.vpp.Writes()
	if again, err := e.m.Add(ctx, req); err != nil || again != res {
		t.Fatalf("ADD again = %+v, %v; want %+v", again, err, res)
	}
	if w := e.vpp.Writes(); w != writes {
		t.Errorf("ADD again wrote %d times to VPP; want 0", w-writes)
	}

	// The pod side broken: its default route gone, then its address.
	breakPod := func(what string, f func(netlink.Link) error) {
		t.Helper()
		err := withNetns(req.Netns, func(ns.NetNS) error {
			l, err := netlink.LinkByName(req.IfName)
			if err != nil {
				return err
			}
			return f(l)
		})
		if err != nil {
			t.Fatalf("breaking the pod (%s): %v", what, err)
		}
		if err := e.m.Check(ctx, req); !errors.Is(err, ErrCheckFailed) {
			t.Errorf("CHECK without %s = %v; want ErrCheckFailed", what, err)
		}
	}
	breakPod("the default route", func(l netlink.Link) error {
		return netlink.RouteDel(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, Gw: e.plan.PodGateway.AsSlice()})
	})
	breakPod("the address", func(l netlink.Link) error {
		return netlink.AddrDel(l, &netlink.Addr{IPNet: &net.IPNet{IP: res.IP.Addr().AsSlice(), Mask: net.CIDRMask(32, 32)}})
	})

	for i := range 2 {
		if err := e.m.Del(ctx, req); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
		e.assertGone(req)
		if e.podTap(req) != nil {
			t.Errorf("DEL %d left the tap in the pod", i+1)
		}
		if k := e.vpp.KernelTaps(); len(k) != 0 {
			t.Errorf("DEL %d: VPP still holds kernel taps %+v", i+1, k)
		}
	}
}

// TestTapVPPRestartRecreatesThePodEnd: a tap's pod end dies with VPP; the
// manager's resync makes the tap again and its pod end in the pod's
// netns, with the same address, routes and ARP entry.
func TestTapVPPRestartRecreatesThePodEnd(t *testing.T) {
	e := newTapEnv(t)
	ctx := context.Background()
	reqs := []Request{e.request("a", e.netns()), e.request("b", e.netns())}
	var res []Result
	for _, r := range reqs {
		x, err := e.m.Add(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, x)
	}
	e.vpp.Restart()
	e.vpp.CreateTable(1) // the startup configuration's table
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for e.conn.Status().Connects < 2 {
		if wctx.Err() != nil {
			t.Fatal("no reconnection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range reqs {
		if e.podTap(r) != nil {
			t.Fatalf("pod %s kept its tap across a VPP restart", r.Pod)
		}
	}
	ev := resyncEvent()
	ev.DataplaneRestarted = true
	if err := e.m.Resync(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if back, why := e.m.Back(); !back {
		t.Errorf("not back after the resync: %s", why)
	}
	for i, r := range reqs {
		e.assertTapWired(r, res[i])
		if err := e.m.Check(ctx, r); err != nil {
			t.Errorf("CHECK after VPP restart: %v", err)
		}
	}
}

// TestTapAgentRestartWritesNothing: an agent restart finds every tap in
// place and writes nothing to VPP; the pod keeps its tap.
func TestTapAgentRestartWritesNothing(t *testing.T) {
	e := newTapEnv(t)
	ctx := context.Background()
	req := e.request("survivor", e.netns())
	res, err := e.m.Add(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.alloc = e.newAllocator()
	e.m = e.newManager()
	writes := e.vpp.Writes()
	if err := e.m.Resync(ctx, resyncEvent()); err != nil {
		t.Fatal(err)
	}
	if w := e.vpp.Writes(); w != writes {
		t.Errorf("the restarted agent wrote %d times to VPP; want 0", w-writes)
	}
	e.assertTapWired(req, res)
	if again, err := e.m.Add(ctx, req); err != nil || again != res {
		t.Fatalf("ADD after the agent restart = %+v, %v; want %+v", again, err, res)
	}
}

// TestTapWithoutVhostNetFails: a VPP without /dev/vhost-net refuses the
// tap (as the real one does): ADD fails saying so, and leaves nothing.
func TestTapWithoutVhostNetFails(t *testing.T) {
	e := newTapEnv(t)
	e.vpp.SetVhostNet(false)
	req := e.request("novhost", e.netns())
	_, err := e.m.Add(context.Background(), req)
	if !errors.Is(err, vpp.ErrPodRefused) || !strings.Contains(err.Error(), "/dev/vhost-net") {
		t.Errorf("ADD = %v; want VPP's refusal naming /dev/vhost-net", err)
	}
	e.assertGone(req)
	if e.podTap(req) != nil {
		t.Error("a refused tap left its pod end")
	}
}

// TestTapNetnsTooLongForVPP: tap_create_v3 takes the netns in a
// string[64]; a longer path would reach VPP cut, and fail there obscurely
// (or name another netns). ADD refuses it at once, naming the field, and
// leaves nothing.
func TestTapNetnsTooLongForVPP(t *testing.T) {
	e := newTapEnv(t)
	n := e.netns()
	dir := t.TempDir() + "/" + strings.Repeat("n", 40)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	long := dir + "/netns"
	if err := os.Symlink(n.Path(), long); err != nil {
		t.Fatal(err)
	}
	req := e.request("longns", n)
	req.Netns = long
	_, err := e.m.Add(context.Background(), req)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "netns (CNI_NETNS)") {
		t.Errorf("ADD with a %d-byte netns = %v; want ErrInvalid naming netns", len(long), err)
	}
	e.assertGone(req)
	if e.podTap(req) != nil {
		t.Error("a tap was made")
	}
}

// TestResolveKindSaysWhichAndWhy: auto picks a tap where /dev/vhost-net
// exists and af_packet elsewhere; a tap configured without the device is
// kept but its reason warns that VPP refuses every tap.
func TestResolveKindSaysWhichAndWhy(t *testing.T) {
	saved := vhostNet
	t.Cleanup(func() { vhostNet = saved })
	present := t.TempDir() + "/vhost-net"
	if err := os.WriteFile(present, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		configured string
		device     string
		kind       vpp.PodLinkKind
		why        string
	}{
		{"auto", present, vpp.PodLinkTap, "exists"},
		{"", t.TempDir() + "/none", vpp.PodLinkAFPacket, "auto: no "},
		{"tap", present, vpp.PodLinkTap, "configured"},
		{"tap", t.TempDir() + "/none", vpp.PodLinkTap, "VPP refuses every tap without it"},
		{"af_packet", present, vpp.PodLinkAFPacket, "configured"},
	} {
		vhostNet = c.device
		k, why, err := ResolveKind(c.configured)
		if err != nil || k != c.kind || !strings.Contains(why, c.why) {
			t.Errorf("ResolveKind(%q) with %s = %s, %q, %v; want %s saying %q", c.configured, c.device, k, why, err, c.kind, c.why)
		}
	}
	if _, _, err := ResolveKind("vhost"); err == nil {
		t.Error("ResolveKind(vhost) took an unknown kind")
	}
}

// TestTapPodWhoseNetnsIsGone: the netns of a tap pod goes (the kernel
// takes the tap's pod end with it). Its DEL succeeds and removes the VPP
// end; after a VPP restart, a record whose netns is gone is swept, not
// re-made.
func TestTapPodWhoseNetnsIsGone(t *testing.T) {
	e := newTapEnv(t)
	ctx := context.Background()
	gone := func() (Request, func()) {
		n, err := testutils.NewNS()
		if err != nil {
			t.Fatal(err)
		}
		remove := func() { _ = n.Close(); _ = testutils.UnmountNS(n) }
		t.Cleanup(remove)
		return e.request("gone-"+uniq("")[:6], n), remove
	}
	del, rmDel := gone()
	if _, err := e.m.Add(ctx, del); err != nil {
		t.Fatal(err)
	}
	rmDel()
	if err := e.m.Del(ctx, del); err != nil {
		t.Fatalf("DEL with the netns gone: %v", err)
	}
	e.assertGone(del)

	swept, rmSwept := gone()
	if _, err := e.m.Add(ctx, swept); err != nil {
		t.Fatal(err)
	}
	rmSwept()
	e.vpp.Restart()
	e.vpp.CreateTable(1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for e.conn.Status().Connects < 2 {
		if wctx.Err() != nil {
			t.Fatal("no reconnection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ev := resyncEvent()
	ev.DataplaneRestarted = true
	if err := e.m.Resync(ctx, ev); err != nil {
		t.Fatal(err)
	}
	e.assertGone(swept)
	if k := e.vpp.KernelTaps(); len(k) != 0 {
		t.Errorf("VPP holds kernel taps %+v", k)
	}
}
