package agent

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// podEth0 is the pod's eth0, if it is a tap holding ip/32 (else why not).
func podEth0(netns string, ip net.IP) (string, bool) {
	why := ""
	err := ns.WithNetNSPath(netns, func(ns.NetNS) error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			why = "no eth0"
			return nil
		}
		if tt, ok := l.(*netlink.Tuntap); !ok || tt.Mode != netlink.TUNTAP_MODE_TAP {
			why = "eth0 is a " + l.Type()
			return nil
		}
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			if ones, _ := a.Mask.Size(); a.IP.Equal(ip) && ones == 32 {
				return nil
			}
		}
		why = fmt.Sprintf("eth0 holds %v, not %s/32", addrs, ip)
		return nil
	})
	if err != nil {
		return err.Error(), false
	}
	return why, why == ""
}

// TestTapPodBackBeforeServicesAfterVPPRestart: with cni.podInterface tap
// and a VPP that has /dev/vhost-net, an ADD gives the pod VPP's tap as
// eth0 (made by VPP in the pod's netns) and a tap tagged default/web.
// VPP restarts: the tap's pod end dies with it, and the agent makes the
// tap again, its pod end back in the pod's netns with the same address,
// before any service is reprogrammed. A restarted agent writes nothing;
// DEL removes both ends.
func TestTapPodBackBeforeServicesAfterVPPRestart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the pod manager's test makes a network namespace and a tap: run it as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("SKIPPED LOUDLY: no /dev/net/tun for the simulated VPP's taps: %v", err)
	}
	dir := t.TempDir()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), dir)
	withCNI(&cfg, dir)
	cfg.CNI.PodInterface = contivconf.PodInterfaceTap
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	h.vpp.SetVhostNet(true)
	h.putYAML(webPod)

	netns := podNetns(t)
	c := unixClient(cfg.CNI.Socket)
	req := cniapi.Request{ContainerID: "tap-" + filepath.Base(dir), Netns: netns, IfName: "eth0", Namespace: "default", Pod: "web"}
	var res cniapi.Result
	if code := post(t, c, cniapi.PathAdd, req, &res); code != http.StatusOK {
		t.Fatalf("ADD answered %d", code)
	}
	if !strings.HasPrefix(res.VPPInterface, "tap") {
		t.Fatalf("ADD result %+v: want a tap", res)
	}
	ip := res.IP.Addr().AsSlice()
	if why, ok := podEth0(netns, ip); !ok {
		t.Fatalf("after ADD: %s", why)
	}
	h.putYAML(fmt.Sprintf(webService, res.IP.Addr()))

	// Every write VPP takes, in order (nothing is refused).
	var mu sync.Mutex
	var writes []string
	h.vpp.SetFaults(sim.Faults{Rate: 1, Retval: api.UNSPECIFIED, Match: func(m api.Message) bool {
		mu.Lock()
		writes = append(writes, m.GetMessageName())
		mu.Unlock()
		return false
	}})
	h.vpp.Restart()
	if why, ok := podEth0(netns, ip); ok || why != "no eth0" {
		t.Fatalf("the tap's pod end outlived VPP: %s", why)
	}
	tagged := func() bool {
		for _, i := range h.vpp.Interfaces() {
			if i.Tag == "default/web" && strings.HasPrefix(i.Name, "tap") {
				return true
			}
		}
		return false
	}
	wrote := func(p ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(writes, func(w string) bool {
			return slices.ContainsFunc(p, func(p string) bool { return strings.HasPrefix(w, p) })
		})
	}
	if !h.eventually(30*time.Second, func() bool { return tagged() && wrote("nat44_", "cnat_") && h.agent.ready() }) {
		t.Fatalf("not back after the VPP restart: tagged %v, not ready %v", tagged(), h.agent.notReady())
	}
	if why, ok := podEth0(netns, ip); !ok {
		t.Errorf("after the VPP restart: %s", why)
	}
	mu.Lock()
	pod := slices.Index(writes, "tap_create_v3")
	svcAt := slices.IndexFunc(writes, func(w string) bool { return strings.HasPrefix(w, "nat44_") || strings.HasPrefix(w, "cnat_") })
	if pod < 0 || svcAt < pod {
		t.Errorf("after the restart the first service write (#%d) came before the pod's tap (#%d): %v", svcAt, pod, writes)
	}
	mu.Unlock()
	h.vpp.SetFaults(sim.Faults{})
	h.waitQuiet()

	h.restartAgent()
	h.waitQuiet()
	if w := h.vpp.Writes(); w != 0 {
		t.Errorf("agent restart with the tap in place made %d writes: %v", w, h.vpp.CallCounts())
	}
	c = unixClient(cfg.CNI.Socket)
	if code := post(t, c, cniapi.PathCheck, req, nil); code != http.StatusOK {
		t.Errorf("CHECK after the restarts answered %d", code)
	}
	if code := post(t, c, cniapi.PathDel, req, nil); code != http.StatusOK {
		t.Fatalf("DEL answered %d", code)
	}
	if tagged() {
		t.Error("DEL left the tap in VPP")
	}
	if why, _ := podEth0(netns, ip); why != "no eth0" {
		t.Errorf("DEL left the pod end: %s", why)
	}
}
