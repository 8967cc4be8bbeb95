package agent

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/pods/cniapi"
)

// TestCNIPodBeforeItsObjectGetsCnatTables: with the cnat renderer, kubelet
// runs the CNI ADD before the reflector's copy of the Pod reached etcd.
// The ADD alone makes the pod a local pod of the service processor (the
// seed's ProcessNewPod): its interface gets the cnat features and the SNAT
// tables (INCLUDE_V4, POD) at once, keeps them through a healing resync
// and when the Pod object comes, and loses them with the DEL.
func TestCNIPodBeforeItsObjectGetsCnatTables(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the pod manager's test makes a network namespace and a veth: run it as root")
	}
	dir := t.TempDir()
	srv := etcdtest.Start(t)
	cfg := contivconf.Defaults()
	cfg.Renderer = contivconf.RendererCNAT
	cfg = testConfigFrom(t, cfg, srv.Endpoint(), dir)
	withCNI(&cfg, dir)
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	h.waitQuiet()

	netns := podNetns(t)
	c := unixClient(cfg.CNI.Socket)
	req := cniapi.Request{ContainerID: "cnat-early-" + filepath.Base(dir), Netns: netns, IfName: "eth0", Namespace: "default", Pod: "web"}
	var res cniapi.Result
	if code := post(t, c, cniapi.PathAdd, req, &res); code != http.StatusOK {
		t.Fatalf("ADD answered %d", code)
	}
	tables := func() (pod, include bool) {
		st := h.vpp.CnatSnatState()
		return slices.Contains(st.Pod, res.VPPInterface), slices.Contains(st.IncludeV4, res.VPPInterface)
	}
	want := func(when string, in bool) {
		t.Helper()
		pod, include := tables()
		if pod != in || include != in {
			st := h.vpp.CnatSnatState()
			t.Fatalf("%s: %s in the POD table %v, in INCLUDE_V4 %v; want %v (POD %v, INCLUDE_V4 %v)",
				when, res.VPPInterface, pod, include, in, st.Pod, st.IncludeV4)
		}
	}
	// Answered once its batch was applied: the tables are there already.
	want("ADD answered, no Pod object", true)
	h.agent.Controller().Push(&controller.ResyncEvent{Kind: controller.ResyncHealing})
	h.waitQuiet()
	want("a healing resync, still no Pod object", true)

	objs := h.putYAML(webPod)
	want("the Pod object came", true)

	if code := post(t, c, cniapi.PathDel, req, nil); code != http.StatusOK {
		t.Fatalf("DEL answered %d", code)
	}
	h.apply([]kubestate.Op{kubestate.DeleteOp(objs[0].Key())})
	h.waitQuiet()
	want("DEL and the object's delete", false)
}
