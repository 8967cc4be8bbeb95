package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// recordedViews are the views a real contiv-agent served, recorded into
// testdata/doctor/NAME (status, config, interfaces, nat44): "no-vpp" is an
// agent with vpp.simulate never and no VPP socket, "simulated" one running
// the simulated VPP with deploy/examples/cluster.yaml loaded.
func recordedViews(t *testing.T, name string) map[string]any {
	t.Helper()
	views := map[string]any{}
	files, err := filepath.Glob(filepath.Join("testdata", "doctor", name, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded views for %s: %v", name, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		views[strings.TrimSuffix(filepath.Base(f), ".json")] = json.RawMessage(b)
	}
	return views
}

// doctorRun runs contivctl doctor against views and returns its exit
// status and the findings it printed as JSON.
func doctorRun(t *testing.T, views map[string]any, args ...string) (int, []finding) {
	t.Helper()
	url := serveViews(t, views)
	code, out, errs := contivctl(t, "", append([]string{"doctor", "--agent", url, "-o", "json"}, args...)...)
	var fs []finding
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatalf("doctor -o json: %v\n%s\n%s", err, out, errs)
	}
	return code, fs
}

// has reports whether a finding with verdict and check mentions every part.
func has(fs []finding, verdict, check string, parts ...string) bool {
	for _, f := range fs {
		if f.Verdict != verdict || f.Check != check {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(f.Detail+" "+f.Fix, p)
		}
		if all {
			return true
		}
	}
	return false
}

func requireFinding(t *testing.T, fs []finding, verdict, check string, parts ...string) {
	t.Helper()
	if !has(fs, verdict, check, parts...) {
		t.Errorf("no %s %s finding with %q among:\n%s", verdict, check, parts, dump(fs))
	}
}

func dump(fs []finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Verdict + " " + f.Check + ": " + f.Detail + " | " + f.Fix + "\n")
	}
	return b.String()
}

// An agent without VPP: doctor says VPP is not connected (with the agent's
// reason), that the main NIC cannot be known before, and blames nothing
// that merely has not started (etcd, NAT44).
func TestDoctorRecordedNoVPP(t *testing.T) {
	code, fs := doctorRun(t, recordedViews(t, "no-vpp"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictFail, "vpp", "VPP not connected at", "the API socket does not exist", "socksvr")
	requireFinding(t, fs, verdictWarn, "main-nic", "not known until VPP connects", "192.168.16.1")
	for _, f := range fs {
		if f.Check == "etcd" || f.Check == "nat44" || f.Check == "simulated-vpp" || f.Check == "readiness" {
			t.Errorf("unexpected finding: %+v", f)
		}
	}
}

// The simulated VPP is a failure on a real node and a warning with
// --allow-simulated; otherwise that agent is healthy.
func TestDoctorRecordedSimulated(t *testing.T) {
	views := recordedViews(t, "simulated")
	code, fs := doctorRun(t, views)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictFail, "simulated-vpp", "SIMULATED VPP", "vpp.simulate: always", "never")
	code, fs = doctorRun(t, views, "--allow-simulated")
	if code != 0 {
		t.Errorf("--allow-simulated: exit %d, want 0:\n%s", code, dump(fs))
	}
	requireFinding(t, fs, verdictWarn, "simulated-vpp", "SIMULATED VPP")
	requireFinding(t, fs, verdictOK, "readiness", "ready")
	requireFinding(t, fs, verdictOK, "nat44", "accepted")
}

// realNode is a ready agent on a real VPP, in the agent's own view types.
func realNode() (restapi.StatusView, contivconf.Config) {
	cfg := contivconf.Defaults()
	cfg.NodeName = "node-1"
	cfg.VPP.Simulate = contivconf.SimulateNever
	return restapi.StatusView{
		Node: "node-1", NodeID: 1, Ready: true,
		Controller: controller.Status{Ready: true, EtcdConnected: true, Resyncs: 1},
		VPP:        vpp.Status{Connected: true, Socket: "/run/vpp/api.sock", Version: "25.02-release", Release: "25.02", PID: 77, Connects: 1},
	}, cfg
}

func TestDoctorHealthyNode(t *testing.T) {
	st, cfg := realNode()
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{"tap0": 3}, "renderer": restapi.RendererView{Renderer: "nat44"}})
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, dump(fs))
	}
	for _, f := range fs {
		if f.Verdict != verdictOK {
			t.Errorf("finding on a healthy node: %+v", f)
		}
	}
	requireFinding(t, fs, verdictOK, "vpp", "25.02-release", "VPP 25.02 bindings")
	requireFinding(t, fs, verdictOK, "main-nic", "found by the node IP")
}

// A VPP the agent refused (its version) is named with the agent's reason,
// and the fix names the releases this agent supports.
func TestDoctorNamesRefusedVersion(t *testing.T) {
	st, cfg := realNode()
	st.Ready, st.NotReady = false, []string{"vpp"}
	st.VPP = vpp.Status{Socket: "/run/vpp/api.sock", LastError: `VPP is incompatible with this agent: unsupported VPP version "24.10-release": this agent has bindings for VPP 25.02, 26.06 only (docs/vpp-versions.md)`}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictFail, "vpp", "24.10-release")
	if !slices.ContainsFunc(fs, func(f finding) bool { return f.Check == "vpp" && strings.Contains(f.Fix, "25.02, 26.06") }) {
		t.Errorf("no vpp finding whose fix names the supported releases:\n%s", dump(fs))
	}
}

// Every missing piece is named with its role and what to do: a main NIC
// that VPP has not addressed, a host interconnect past the grace, a VXLAN
// BVI and a pod interface within it, an object VPP refused, etcd lost, a
// write stalled, and a reason doctor does not know, reported as it is.
func TestDoctorNamesMissingPieces(t *testing.T) {
	st, cfg := realNode()
	cfg.NodeConfig = []contivconf.NodeOverride{{NodeName: "node-1", MainInterface: &contivconf.InterfaceConfig{Name: "GigabitEthernet0/8/0"}}}
	st.Ready = false
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pending := []restapi.RendererPending{
		{Name: "loop1", Waits: "NAT44 features in", Since: since},
		{Name: "tap0", Waits: "NAT44 features in,out", Since: since},
		{Name: "tap7", Waits: "NAT44 features in", Since: since},
	}
	st.NotReady = []string{"waiting for interface tap0 for 12.5s", "something new the agent says",
		"waiting for this node's VPP addresses (192.168.16.1/24) to come back from etcd in its NodeSync record: their NodePorts are not programmed yet"}
	st.Controller.EtcdConnected = false
	st.NodeSync.Stalled, st.NodeSync.LastError = true, "node ID released"
	web := sr.ServiceID{Namespace: "shop", Name: "web"}
	rv := restapi.RendererView{Renderer: "nat44", Pending: pending, Failures: []restapi.RendererFailure{{
		Object: "mapping 10.96.0.10:80/TCP", Service: &web, Op: "add-mapping", Error: "VPPApiError: value exists (-81)",
	}}}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{}, "renderer": rv})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictOK, "main-nic", "GigabitEthernet0/8/0")
	requireFinding(t, fs, verdictFail, "interface", "host interconnect", "tap0", "create the tap", "/dev/vhost-net", "af_packet veth", "host-<veth>")
	requireFinding(t, fs, verdictWarn, "interface", "VXLAN BVI", "loop1", "loopback")
	requireFinding(t, fs, verdictWarn, "interface", "pod interface", "tap7", "{{namespace}}/{{pod}}")
	requireFinding(t, fs, verdictFail, "nat44", "10.96.0.10:80/TCP", "shop/web", "add-mapping", "value exists", "contivctl renderer")
	requireFinding(t, fs, verdictFail, "etcd", "not connected to etcd", "no Service names")
	requireFinding(t, fs, verdictFail, "nodesync", "node ID released")
	requireFinding(t, fs, verdictFail, "readiness", "something new the agent says")
	requireFinding(t, fs, verdictFail, "own-addresses", "192.168.16.1/24", "make etcd reachable")
	if has(fs, verdictFail, "readiness", "come back from etcd") {
		t.Error("the own-addresses reason is reported twice")
	}
	if has(fs, verdictFail, "readiness", "waiting for interface tap0") {
		t.Error("the pending interface reason is reported twice")
	}

	// With VPP connected but no interface holding the node IP, the main
	// NIC is a failure.
	st, cfg = realNode()
	st.Ready = false
	st.NotReady = []string{"waiting for VPP to show which interface holds the node IP 192.168.16.1 (nodeConfig.mainInterface.name is not set)"}
	code, fs = doctorRun(t, map[string]any{"status": st, "config": cfg})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictFail, "main-nic", "main NIC not found", "192.168.16.1", "show interface address")
	requireFinding(t, fs, verdictWarn, "interfaces", "cannot read /v1/interfaces")
}

// Another agent's VPP: doctor names that agent and the way out.
func TestDoctorNamesOtherOwner(t *testing.T) {
	st, cfg := realNode()
	st.Ready = false
	st.NotReady = []string{"VPP is managed by another agent (prod-eu/node-9): not programming it; stop that agent, or set vpp.takeOver to take VPP over"}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictFail, "vpp-owner", "prod-eu/node-9", "vpp.takeOver: true", "stop the other agent")
	if has(fs, verdictFail, "readiness", "another agent") {
		t.Error("the owner reason is reported twice")
	}
}

// The table names failures first, each with its fix.
func TestDoctorTable(t *testing.T) {
	url := serveViews(t, recordedViews(t, "no-vpp"))
	code, out, _ := contivctl(t, "", "doctor", "--agent", url)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	lines := strings.Split(fields(out), "\n")
	if len(lines) < 3 || lines[0] != "VERDICT CHECK DETAIL" || !strings.HasPrefix(lines[1], "FAIL vpp VPP not connected") || !strings.HasPrefix(lines[2], "fix: start VPP") {
		t.Errorf("table:\n%s", out)
	}
}

// Doctor reads one renderer-neutral view: the same facts give the same
// findings under nat44 and cnat, named by the renderer — refused objects,
// contested frontends, pending interfaces and pending FIB tables — and
// nothing of NAT44 under cnat.
func TestDoctorUnderEitherRenderer(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	web, cart := sr.ServiceID{Namespace: "shop", Name: "web"}, sr.ServiceID{Namespace: "shop", Name: "cart"}
	for _, renderer := range []string{contivconf.RendererNAT44, contivconf.RendererCNAT} {
		t.Run(renderer, func(t *testing.T) {
			st, cfg := realNode()
			cfg.Renderer = renderer
			st.Ready = false
			st.NotReady = []string{"waiting for interface tap7 for 1s", "waiting for FIB table 1 for 3s"}
			rv := restapi.RendererView{Renderer: renderer,
				Failures:  []restapi.RendererFailure{{Object: "frontend 10.96.0.10:80/TCP", Op: "update", Error: "VPPApiError: invalid value (-7)"}},
				Conflicts: []restapi.RendererConflict{{Frontend: "10.96.0.10:80/TCP", Winner: web, Losers: []sr.ServiceID{cart}}},
				Pending:   []restapi.RendererPending{{Name: "tap7", Since: since, Waits: renderer + " features"}},
				PendingTables: []restapi.RendererPendingTable{{VRF: 1, Since: since, Routes: []string{"route 10.96.0.0/12 vrf=1 drop"}},
					{VRF: 2, Since: since, Routes: []string{"route 10.0.0.0/8 vrf=2 drop"}}},
			}
			views := map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{}, "renderer": rv}
			code, fs := doctorRun(t, views)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			requireFinding(t, fs, verdictFail, renderer, "VPP refused frontend 10.96.0.10:80/TCP (update): VPPApiError: invalid value (-7)", "contivctl renderer")
			requireFinding(t, fs, verdictWarn, renderer, "frontend 10.96.0.10:80/TCP is claimed by shop/web and shop/cart; shop/web wins")
			requireFinding(t, fs, verdictFail, "interface", "pod interface tap7 is pending", renderer+" features wait")
			requireFinding(t, fs, verdictFail, "fib-table", "FIB table 1 is pending", "1 routes wait", "show ip fib table 1")
			requireFinding(t, fs, verdictWarn, "fib-table", "FIB table 2 is pending")
			if has(fs, verdictFail, "readiness", "FIB table") {
				t.Error("the pending table reason is reported twice")
			}
			if renderer == contivconf.RendererCNAT {
				for _, f := range fs {
					if f.Check == "nat44" || strings.Contains(f.Detail+f.Fix, "NAT44") || strings.Contains(f.Detail+f.Fix, "nat44") {
						t.Errorf("NAT44 finding under cnat: %+v", f)
					}
				}
			}
			st.Ready, st.NotReady = true, nil
			views["status"], views["renderer"] = st, restapi.RendererView{Renderer: renderer}
			if code, fs := doctorRun(t, views); code != 0 || !has(fs, verdictOK, renderer, "accepted every object the "+renderer+" renderer programmed") ||
				!has(fs, verdictOK, "interface", "no interface configuration of the renderer waits") {
				t.Errorf("healthy node: exit %d\n%s", code, dump(fs))
			}
		})
	}
}

// A VPP without the ACL plugin is a warning naming acl_plugin.so (the
// agent programs everything else and stays ready), not a failure.
func TestDoctorWarnsOfMissingACLPlugin(t *testing.T) {
	st, cfg := realNode()
	st.VPP.MissingPlugins = []string{vpp.ACLPluginName}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{"tap0": 3}, "renderer": restapi.RendererView{Renderer: "nat44"}})
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, dump(fs))
	}
	requireFinding(t, fs, verdictWarn, "vpp-plugins", "acl_plugin.so", "loadBalancerSourceRanges are NOT enforced")
	requireFinding(t, fs, verdictOK, "readiness")
}

// An agent without /v1/renderer (older than this contivctl): doctor says
// so, and still names the pending interfaces /v1/status lists and the
// FIB table readiness waits for.
func TestDoctorWithoutRendererView(t *testing.T) {
	st, cfg := realNode()
	st.Ready = false
	st.Pending = []nat44.PendingInterface{{Name: "tap7", Features: nat44.FeatureIn, Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	st.NotReady = []string{"waiting for interface tap7 for 1s", "waiting for FIB table 1 for 2s"}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{}})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	requireFinding(t, fs, verdictWarn, "renderer", "cannot read /v1/renderer")
	requireFinding(t, fs, verdictFail, "interface", "pod interface tap7 is pending", "NAT44 features in wait")
	requireFinding(t, fs, verdictFail, "fib-table", "waiting for FIB table 1 for 2s")
}

// A VPP address that is another node's address is a warning naming both
// (issue 37: node-2 took ID 1 and node-1's InternalIP).
func TestDoctorWarnsOfAddressClash(t *testing.T) {
	st, cfg := realNode()
	st.NodeSync.Clashes = []string{"this node's VPP address 192.168.16.1 (node ID 1) is node node-1's address"}
	code, fs := doctorRun(t, map[string]any{"status": st, "config": cfg, "interfaces": map[string]sr.InterfaceRole{"tap0": 3}, "renderer": restapi.RendererView{Renderer: "nat44"}})
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, dump(fs))
	}
	requireFinding(t, fs, verdictWarn, "address-clash", "192.168.16.1", "node-1", "ipam.nodeInterconnectCIDR")
}
