package e2evpp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// The container runtime's side of pod networking on a real-VPP node, as
// containerd's CRI plugin does it through libcni: the node's CNI bin and
// conf directories filled by `contiv-cni install` (the DaemonSet's init
// container), a network namespace per pod sandbox made by the runtime (here
// the test), ADD with kubelet's CNI_ARGS, CHECK, DEL.

// cniNetwork is the network name of the conflist contiv-cni installs.
const cniNetwork = "contiv-vpp"

// cniCallTimeout bounds one libcni call (the conflist's own bound on the
// plugin's call to the agent is 25 s).
const cniCallTimeout = 40 * time.Second

// buildCNIPlugin builds the contiv-cni binary of this tree next to the
// agent's, once per run.
func buildCNIPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(env.bin, "contiv-cni")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command("go", "build", "-o", bin, "contiv.dev/vpp/cmd/contiv-cni").CombinedOutput(); err != nil {
		t.Fatalf("building contiv-cni: %v: %s", err, out)
	}
	return bin
}

// cniDir is the node's CNI directories (bin, net.d, the runtime's cache).
func (n *node) cniDir() string { return filepath.Join(n.dir, "cni") }

// cniSocket is the agent's CNI socket.
func (n *node) cniSocket() string { return filepath.Join(n.dir, "cni.sock") }

// podStateDir is where the agent keeps its pod records.
func (n *node) podStateDir() string { return filepath.Join(n.dir, "pods") }

// cniAgentConfig is the part of the node's agent configuration that turns
// the pod manager on: its socket and records in the node's directory, pods
// on af_packet (veth pairs), as on a host without /dev/vhost-net.
func cniAgentConfig(n *node) string {
	return fmt.Sprintf("cni:\n  enabled: true\n  socket: %s\n  stateDir: %s\n  podInterface: af_packet\n", n.cniSocket(), n.podStateDir())
}

// cniRuntime is one node's container runtime: libcni over the bin
// directory and the conflist the installer wrote.
type cniRuntime struct {
	n    *node
	cni  *libcni.CNIConfig
	list *libcni.NetworkConfigList
	seq  int // sandboxes made so far (their netns names)
	// rts are the runtime configurations of the pods it wired.
	rts map[*pod]*libcni.RuntimeConf
}

// installCNI runs `contiv-cni install` for node n, as the DaemonSet's init
// container does, and loads the conflist it wrote by its network name, as a
// runtime does. What an earlier run left in the node's directory (the
// runtime's cache, the agent's pod records) is removed first.
func installCNI(t *testing.T, plugin string, n *node) *cniRuntime {
	t.Helper()
	for _, d := range []string{n.cniDir(), n.podStateDir()} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	binDir, confDir := filepath.Join(n.cniDir(), "bin"), filepath.Join(n.cniDir(), "net.d")
	out, err := exec.Command(plugin, "install", "--bin-dir="+binDir, "--conf-dir="+confDir, "--socket="+n.cniSocket()).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: contiv-cni install: %v: %s", n.name, err, out)
	}
	list, err := libcni.LoadConfList(confDir, cniNetwork)
	if err != nil {
		t.Fatalf("%s: loading the conflist contiv-cni installed in %s: %v", n.name, confDir, err)
	}
	return &cniRuntime{n: n, list: list, rts: map[*pod]*libcni.RuntimeConf{},
		cni: libcni.NewCNIConfigWithCacheDir([]string{binDir}, filepath.Join(n.cniDir(), "cache"), nil)}
}

// waitStatus waits until the network's CNI STATUS says the node's agent
// takes ADDs.
func (r *cniRuntime) waitStatus(t *testing.T, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), cniCallTimeout)
		defer cancel()
		if err := r.cni.GetStatusNetworkList(ctx, r.list); err != nil {
			return false, fmt.Sprintf("CNI STATUS of %s: %v", r.n.name, err)
		}
		return true, ""
	})
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// add makes a pod sandbox on the node, its network namespace first, and
// calls ADD as kubelet's runtime does (CNI_ARGS with the pod's namespace,
// name, UID and infra container); the pod, with the IPv4 address of the
// result, joins the node's pods (so the cluster state names it as the
// reflector would). It returns how long ADD took through libcni.
func (r *cniRuntime) add(t *testing.T, name string) (*pod, time.Duration) {
	t.Helper()
	r.seq++
	netns := fmt.Sprintf("%s-n%dc%d", prefix, r.n.id, r.seq)
	addNetns(t, netns)
	id := randomHex(32)
	rt := &libcni.RuntimeConf{
		ContainerID: id,
		NetNS:       "/var/run/netns/" + netns,
		IfName:      "eth0",
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", "default"},
			{"K8S_POD_NAME", name},
			{"K8S_POD_INFRA_CONTAINER_ID", id},
			{"K8S_POD_UID", randomHex(16)},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), cniCallTimeout)
	defer cancel()
	start := time.Now()
	res, err := r.cni.AddNetworkList(ctx, r.list, rt)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("CNI ADD of default/%s on %s: %v", name, r.n.name, err)
	}
	res100, err := types100.NewResultFromResult(res)
	if err != nil {
		t.Fatalf("CNI ADD of default/%s: the result: %v", name, err)
	}
	var ip netip.Addr
	for _, c := range res100.IPs {
		if a, ok := netip.AddrFromSlice(c.Address.IP.To4()); ok && c.Address.IP.To4() != nil {
			ip = a
			break
		}
	}
	if !ip.IsValid() {
		t.Fatalf("CNI ADD of default/%s: no IPv4 address in the result %+v", name, res100)
	}
	p := &pod{node: r.n, namespace: "default", name: name, k: r.seq, netns: netns, ip: ip, cni: true}
	r.n.pods = append(r.n.pods, p)
	r.rts[p] = rt
	return p, took
}

// del calls DEL for the pod's sandbox and returns how long it took; the
// sandbox's namespace stays (a runtime removes it after DEL: forget).
func (r *cniRuntime) del(p *pod) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cniCallTimeout)
	defer cancel()
	start := time.Now()
	err := r.cni.DelNetworkList(ctx, r.list, r.rts[p])
	if err != nil {
		return time.Since(start), fmt.Errorf("CNI DEL of %s/%s on %s: %w", p.namespace, p.name, r.n.name, err)
	}
	return time.Since(start), nil
}

// forget removes the pod from the node and its sandbox's namespace, as a
// runtime does once DEL succeeded.
func (r *cniRuntime) forget(t *testing.T, p *pod) {
	t.Helper()
	r.n.pods = slices.DeleteFunc(r.n.pods, func(q *pod) bool { return q == p })
	delete(r.rts, p)
	run(t, "ip", "netns", "del", p.netns)
}

// check is CNI CHECK of the pod's sandbox.
func (r *cniRuntime) check(p *pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), cniCallTimeout)
	defer cancel()
	if err := r.cni.CheckNetworkList(ctx, r.list, r.rts[p]); err != nil {
		return fmt.Errorf("CNI CHECK of %s/%s (%s) on %s: %w", p.namespace, p.name, p.ip, r.n.name, err)
	}
	return nil
}

// podIfaces are the names of the pods' af_packet interfaces in the node's
// VPP ("host-" and the agent's end of the pod's veth, "vpp" and 12 hex
// digits), from its interface table (the debug CLI).
func (n *node) podIfaces() []string {
	var out []string
	for _, line := range strings.Split(n.cli("show interface"), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], "host-vpp") && len(f[0]) == len("host-vpp")+12 {
			out = append(out, f[0])
		}
	}
	slices.Sort(out)
	return out
}

// agentPods is what the agent's /v1/pods and /v1/ipam say of the node's
// pods: the wired ones and the addresses IPAM holds, by "namespace/pod".
func (a *agentProc) agentPods(t *testing.T) (wired, allocated map[string]netip.Addr) {
	t.Helper()
	var pv struct {
		Pods []struct {
			Pod string     `json:"pod"`
			IP  netip.Addr `json:"ip"`
		} `json:"pods"`
	}
	if err := a.get("/v1/pods", &pv); err != nil {
		t.Fatal(err)
	}
	wired = map[string]netip.Addr{}
	for _, p := range pv.Pods {
		wired[p.Pod] = p.IP
	}
	var iv struct {
		Pods map[string]netip.Addr `json:"pods"`
	}
	if err := a.get("/v1/ipam", &iv); err != nil {
		t.Fatal(err)
	}
	return wired, iv.Pods
}

// latencies is a sample of call durations.
type latencies []time.Duration

// String is "p50 X, p99 Y, n N" (nearest rank).
func (l latencies) String() string {
	if len(l) == 0 {
		return "n 0"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	pct := func(p int) time.Duration {
		i := (p*len(s)+99)/100 - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("p50 %v, p99 %v, n %d", pct(50).Round(100*time.Microsecond), pct(99).Round(100*time.Microsecond), len(s))
}
