package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/testutils"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/pods/cniapi"
	sr "contiv.dev/vpp/servicerenderer"
)

const webPod = `
apiVersion: v1
kind: Pod
metadata: {namespace: default, name: web}
spec:
  nodeName: node-1
  containers: [{name: web, image: nginx}]
`

// TestPodWiredByTheAgentIsKnownToServicesAtOnce: with cni.enabled the
// agent serves the CNI socket; an ADD gives the pod an address from IPAM
// and an af_packet interface tagged default/web in the simulated VPP (and
// no stand-in CNI's tap), the service processor sees the interface as a
// local pod's in the same batch, a restarted agent writes nothing to VPP,
// and DEL removes it all.
func TestPodWiredByTheAgentIsKnownToServicesAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the pod manager's test makes a network namespace and a veth: run it as root")
	}
	dir := t.TempDir()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), dir)
	withCNI(&cfg, dir)
	// The batch after the ADD's waits: the interface events the ADD's
	// refresh of the interface cache queues (agent/ifwatch.go) cannot tell
	// the processor before the test looks. Only the ADD's own follow-up,
	// in its batch, can.
	cfg.Controller.MinBatchInterval = contivconf.Duration(3 * time.Second)
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	objs := h.putYAML(webPod)

	netns := podNetns(t)
	c := unixClient(cfg.CNI.Socket)
	req := cniapi.Request{ContainerID: "agent-test-" + filepath.Base(dir), Netns: netns, IfName: "eth0", Namespace: "default", Pod: "web"}
	var res cniapi.Result
	if code := post(t, c, cniapi.PathAdd, req, &res); code != http.StatusOK {
		t.Fatalf("ADD answered %d", code)
	}
	if !strings.HasPrefix(res.VPPInterface, "host-vpp") || !h.agent.ipamH.Plan().PodSubnet.Contains(res.IP.Addr()) {
		t.Fatalf("ADD result %+v: want an af_packet interface and an address of the pod subnet", res)
	}
	var tagged []string
	for _, i := range h.vpp.Interfaces() {
		if i.Tag == "default/web" {
			tagged = append(tagged, i.Name)
		}
	}
	if len(tagged) != 1 || tagged[0] != res.VPPInterface {
		t.Fatalf("interfaces tagged default/web: %v; want only %s", tagged, res.VPPInterface)
	}
	// The ADD's own batch told the processor: no resync, no interface
	// event needed.
	if r := h.agent.proc.Interfaces()[res.VPPInterface]; r&sr.RoleFrontend == 0 {
		t.Fatalf("the processor gives %s role %v; want a frontend (a local pod's)", res.VPPInterface, r)
	}
	h.waitQuiet()
	// The pod's object goes before the CNI's DEL (a forced deletion):
	// IPAM keeps the address of the pod still wired.
	h.apply([]kubestate.Op{kubestate.DeleteOp(objs[0].Key())})
	h.waitQuiet()
	if ip, held := h.agent.ipamH.Allocator().Lookup(addrplan.PodID{Namespace: "default", Name: "web"}); !held || ip != res.IP.Addr() {
		t.Fatalf("IPAM holds %v (%v) for the wired pod whose object is gone; want %s", ip, held, res.IP.Addr())
	}
	h.restartAgent()
	h.waitQuiet()
	if w := h.vpp.Writes(); w != 0 {
		t.Errorf("agent restart with the pod in place made %d writes: %v", w, h.vpp.CallCounts())
	}
	c = unixClient(cfg.CNI.Socket)
	if code := post(t, c, cniapi.PathDel, req, nil); code != http.StatusOK {
		t.Fatalf("DEL after the agent's restart answered %d", code)
	}
	for _, i := range h.vpp.Interfaces() {
		if i.Tag == "default/web" {
			t.Errorf("DEL left %s", i.Name)
		}
	}
	if _, ok := h.agent.proc.Interfaces()[res.VPPInterface]; ok {
		t.Errorf("the processor still has %s", res.VPPInterface)
	}
	if ip, held := h.agent.ipamH.Allocator().Lookup(addrplan.PodID{Namespace: "default", Name: "web"}); held {
		t.Errorf("IPAM still holds %s for web after its DEL", ip)
	}
}

// withCNI turns the pod manager on in cfg: af_packet pods, its socket
// and records under dir.
func withCNI(cfg *contivconf.Config, dir string) {
	cfg.CNI.Enabled = true
	cfg.CNI.Socket = filepath.Join(dir, "cni.sock")
	cfg.CNI.StateDir = filepath.Join(dir, "pods")
	cfg.CNI.PodInterface = contivconf.PodInterfaceAFPacket
}

// podNetns makes a pod's network namespace, removed when the test ends;
// the test is skipped, loudly, where the kernel refuses one.
func podNetns(t *testing.T) string {
	t.Helper()
	n, err := testutils.NewNS()
	if err != nil {
		t.Skipf("SKIPPED LOUDLY: the kernel refuses a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = n.Close(); _ = testutils.UnmountNS(n) })
	return n.Path()
}

func unixClient(sock string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func post(t *testing.T, c *http.Client, path string, req any, out any) int {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := c.Post("http://agent"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Logf("%s: %s", path, body.String())
	} else if out != nil {
		if err := json.Unmarshal(body.Bytes(), out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// An af_packet node asks VPP for no tap message: VPP 26.06 builds tap as a
// plugin the node may not load, and an agent that required its messages
// refused that VPP though it wires no tap (e2evpp TestRealVPPCNI on 26.06:
// "VPP lacks ... tap_create_v3").
func TestAFPacketPodsNeedNoTapMessages(t *testing.T) {
	a := &Agent{cfg: contivconf.Defaults()}
	a.cfg.CNI.Enabled = true
	a.cfg.CNI.PodInterface = contivconf.PodInterfaceAFPacket
	var names []string
	for _, m := range a.podMessages() {
		names = append(names, m.GetMessageName())
	}
	all := strings.Join(names, " ")
	if strings.Contains(all, "tap_") {
		t.Errorf("an af_packet node's pod messages ask for tap: %s", all)
	}
	if !strings.Contains(all, "af_packet_create_v3") {
		t.Errorf("an af_packet node's pod messages lack af_packet_create_v3: %s", all)
	}
}
