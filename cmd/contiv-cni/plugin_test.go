package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/pods/podstest"
)

// binDir holds the plugin binary, built once for the package's tests: the
// tests run it as a container runtime does, through libcni.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "contiv-cni-bin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "contiv-cni"), ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building contiv-cni: %v\n%s", err, out)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		defer func() {
			if err := goleak.Find(goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run")); err != nil && code == 0 {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}()
		code = m.Run()
	}()
	os.Exit(code)
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the plugin's tests make network namespaces and veths: run them as root")
	}
}

// runtime is a container runtime's view: libcni, the installed conflist.
type runtime struct {
	t    *testing.T
	cni  *libcni.CNIConfig
	list *libcni.NetworkConfigList
}

func newRuntime(t *testing.T, conf map[string]any) *runtime {
	t.Helper()
	plugin := map[string]any{"type": "contiv-cni"}
	for k, v := range conf {
		plugin[k] = v
	}
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "contiv-vpp", "plugins": []any{plugin}})
	list, err := libcni.ConfListFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime{t: t, cni: libcni.NewCNIConfigWithCacheDir([]string{binDir}, t.TempDir(), nil), list: list}
}

func (r *runtime) sandbox(pod string) *libcni.RuntimeConf {
	n, err := testutils.NewNS()
	if err != nil {
		r.t.Skipf("SKIPPED LOUDLY: the kernel refuses a network namespace: %v", err)
	}
	r.t.Cleanup(func() { _ = n.Close(); _ = testutils.UnmountNS(n) })
	return r.conf(pod, n)
}

func (r *runtime) conf(pod string, n ns.NetNS) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: "ctr-" + pod + "-" + filepath.Base(r.t.TempDir()), NetNS: n.Path(), IfName: "eth0",
		Args: [][2]string{{"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", pod}}}
}

func cniError(t *testing.T, err error) *types.Error {
	t.Helper()
	var e *types.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a CNI error", err, err)
	}
	return e
}

func TestAddCheckStatusDelThroughLibcni(t *testing.T) {
	needRoot(t)
	node := podstest.Start(t, podstest.Params{})
	rt := newRuntime(t, map[string]any{"socket": node.Socket})
	ctx := context.Background()
	sb := rt.sandbox("web")
	if err := rt.cni.GetStatusNetworkList(ctx, rt.list); err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	raw, err := rt.cni.AddNetworkList(ctx, rt.list, sb)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	res, err := types100.NewResultFromResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IPs) != 1 || !node.Plan.PodSubnet.Contains(addr(res.IPs[0].Address.IP)) || res.IPs[0].Gateway.String() != node.Plan.PodGateway.String() {
		t.Fatalf("result %s: want one address of %s via %s", raw, node.Plan.PodSubnet, node.Plan.PodGateway)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].Sandbox != sb.NetNS || res.Interfaces[0].Name != "eth0" {
		t.Errorf("interfaces %+v; want eth0 in %s", res.Interfaces, sb.NetNS)
	}
	if tagged(node, "default/web") == "" {
		t.Fatal("no VPP interface tagged default/web")
	}
	if err := rt.cni.CheckNetworkList(ctx, rt.list, sb); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	for i := range 2 {
		if err := rt.cni.DelNetworkList(ctx, rt.list, sb); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
	}
	if tagged(node, "default/web") != "" {
		t.Error("DEL left the VPP interface")
	}
	if len(node.Alloc.Allocations()) != 0 {
		t.Errorf("DEL left the address: %v", node.Alloc.Allocations())
	}
}

func TestAgentNotRunning(t *testing.T) {
	needRoot(t)
	rt := newRuntime(t, map[string]any{"socket": filepath.Join(t.TempDir(), "nobody.sock")})
	ctx := context.Background()
	_, err := rt.cni.AddNetworkList(ctx, rt.list, rt.sandbox("lonely"))
	if e := cniError(t, err); e.Code != types.ErrTryAgainLater || e.Msg != "agent not running" {
		t.Errorf("ADD without an agent: %+v; want code 11 \"agent not running\"", e)
	}
	err = rt.cni.GetStatusNetworkList(ctx, rt.list)
	if e := cniError(t, err); e.Code != types.ErrPluginNotAvailable || e.Msg != "agent not running" {
		t.Errorf("STATUS without an agent: %+v; want code 50 \"agent not running\"", e)
	}
}

func TestMalformedConfigAndArgsNameTheField(t *testing.T) {
	needRoot(t)
	node := podstest.Start(t, podstest.Params{})
	ctx := context.Background()
	for _, c := range []struct {
		conf  map[string]any
		field string
	}{
		{map[string]any{"socket": node.Socket, "timeout": "soon"}, "timeout"},
		{map[string]any{"socket": "cni.sock"}, "socket"},
	} {
		rt := newRuntime(t, c.conf)
		_, err := rt.cni.AddNetworkList(ctx, rt.list, rt.sandbox("cfg"))
		if e := cniError(t, err); e.Code != types.ErrInvalidNetworkConfig || !strings.Contains(e.Msg, c.field) {
			t.Errorf("ADD with %v: %+v; want code 7 naming %s", c.conf, e, c.field)
		}
	}
	rt := newRuntime(t, map[string]any{"socket": node.Socket})
	sb := rt.sandbox("noname")
	sb.Args = [][2]string{{"K8S_POD_NAMESPACE", "default"}}
	_, err := rt.cni.AddNetworkList(ctx, rt.list, sb)
	if e := cniError(t, err); e.Code != types.ErrInvalidEnvironmentVariables || !strings.Contains(e.Msg, "K8S_POD_NAME") {
		t.Errorf("ADD without a pod name: %+v; want code 4 naming K8S_POD_NAME", e)
	}
	for _, i := range node.VPP.Interfaces() {
		if strings.Contains(i.Tag, "/") {
			t.Errorf("a refused request left %s (%s) in VPP", i.Name, i.Tag)
		}
	}
}

func TestPoolExhaustedIsACNIErrorNamingTheSubnet(t *testing.T) {
	needRoot(t)
	node := podstest.Start(t, podstest.Params{PodPrefixLen: 29})
	rt := newRuntime(t, map[string]any{"socket": node.Socket})
	ctx := context.Background()
	for i := range 4 {
		if _, err := rt.cni.AddNetworkList(ctx, rt.list, rt.sandbox(fmt.Sprintf("p%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err := rt.cni.AddNetworkList(ctx, rt.list, rt.sandbox("p4"))
	want := "no address left in " + node.Plan.PodSubnet.String()
	if e := cniError(t, err); e.Code != 100 || e.Msg != want {
		t.Errorf("ADD past the pool: %+v; want code 100 %q", e, want)
	}
	if tagged(node, "default/p4") != "" {
		t.Error("the refused pod has a VPP interface")
	}
}

func tagged(n *podstest.Node, tag string) string {
	for _, i := range n.VPP.Interfaces() {
		if i.Tag == tag {
			return i.Name
		}
	}
	return ""
}

func addr(ip []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// TestGCRemovesWhatTheRuntimeNoLongerUses: CNI GC through libcni with one
// of two sandboxes valid removes the other pod (its VPP interface and its
// address) and keeps the valid one; a second GC removes nothing. The GC
// comes from a runtime whose cache lost both sandboxes (libcni itself
// DELs the stale attachments it has cached): only the plugin's GC can
// find the stale pod.
func TestGCRemovesWhatTheRuntimeNoLongerUses(t *testing.T) {
	needRoot(t)
	node := podstest.Start(t, podstest.Params{})
	rt := newRuntime(t, map[string]any{"socket": node.Socket})
	ctx := context.Background()
	keep, gone := rt.sandbox("keep"), rt.sandbox("gone")
	for _, sb := range []*libcni.RuntimeConf{keep, gone} {
		if _, err := rt.cni.AddNetworkList(ctx, rt.list, sb); err != nil {
			t.Fatalf("ADD: %v", err)
		}
	}
	valid := &libcni.GCArgs{ValidAttachments: []types.GCAttachment{{ContainerID: keep.ContainerID, IfName: keep.IfName}}}
	restarted := newRuntime(t, map[string]any{"socket": node.Socket})
	for i := range 2 {
		if err := restarted.cni.GCNetworkList(ctx, restarted.list, valid); err != nil {
			t.Fatalf("GC %d: %v", i+1, err)
		}
		if tagged(node, "default/gone") != "" {
			t.Errorf("GC %d left the VPP interface of the stale pod", i+1)
		}
		if tagged(node, "default/keep") == "" {
			t.Fatalf("GC %d removed the valid pod", i+1)
		}
		if n := len(node.Alloc.Allocations()); n != 1 {
			t.Errorf("GC %d: %d addresses allocated, want the valid pod's only: %v", i+1, n, node.Alloc.Allocations())
		}
	}
	if err := rt.cni.CheckNetworkList(ctx, rt.list, keep); err != nil {
		t.Errorf("CHECK of the valid pod after GC: %v", err)
	}
}
