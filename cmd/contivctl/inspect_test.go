package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/agent/healthcheck"
	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/agent/syncmetrics"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

var addr = netip.MustParseAddr

// cannedViews are the views of an agent, built from the agent's own view
// types, as its REST server encodes them.
func cannedViews() map[string]any {
	web := sr.ServiceID{Namespace: "shop", Name: "web"}
	cart := sr.ServiceID{Namespace: "shop", Name: "cart"}
	webKey := nat44.MappingKey{IP: nat44.MustParseIPv4("203.0.113.10"), Port: 80, Proto: sr.TCP}
	mapping := &nat44.Mapping{
		MappingKey: nat44.MappingKey{IP: nat44.MustParseIPv4("10.96.10.30"), Port: 8080, Proto: sr.TCP},
		Locals: []nat44.Local{
			{IP: nat44.MustParseIPv4("10.1.1.4"), Port: 8080, VRF: 1, Probability: 2},
			{IP: nat44.MustParseIPv4("10.1.3.4"), Port: 8080, VRF: 1, Probability: 1},
		},
		TwiceNAT: nat44.TwiceNATSelf, Affinity: 3600, Tag: "contiv:shop/cart",
	}
	state := &nat44.State{
		Global:     nat44.Global{Forwarding: true, SessionLimit: 1000},
		Pool:       []nat44.PoolAddress{{IP: addr("10.1.1.254"), VRF: nat44.AnyVRF, TwiceNAT: true}},
		Interfaces: map[string]nat44.Features{"GigabitEthernet0/8/0": nat44.FeatureOut},
		Mappings:   map[nat44.MappingKey]*nat44.Mapping{mapping.MappingKey: mapping},
		Identities: map[nat44.IdentityKey]*nat44.Identity{},
	}
	// The agent wants a third backend for the cart that VPP does not hold yet.
	desired := state.Clone()
	wanted := *mapping
	wanted.Locals = append(slices.Clone(mapping.Locals), nat44.Local{IP: nat44.MustParseIPv4("10.1.2.9"), Port: 8080, VRF: 1, Probability: 1})
	desired.Mappings[wanted.MappingKey] = &wanted
	return map[string]any{
		"services": []*sr.ContivService{
			{
				ID: cart, ClusterIPs: []netip.Addr{addr("10.96.10.30")},
				Ports: []sr.Port{{Name: "http", Protocol: sr.TCP, Port: 8080, Backends: []sr.Backend{
					{IP: sr.IPOf(addr("10.1.1.4")), Port: 8080, Local: true, Ready: true, Serving: true},
					{IP: sr.IPOf(addr("10.1.3.4")), Port: 8080, Ready: true, Serving: true},
				}}},
				AffinityTimeout: 3600,
			},
			{
				ID: web, ClusterIPs: []netip.Addr{addr("10.96.10.20")}, ExternalIPs: []netip.Addr{addr("203.0.113.10")},
				Ports: []sr.Port{
					{Name: "http", Protocol: sr.TCP, Port: 80, NodePort: 31080, Backends: []sr.Backend{{IP: sr.IPOf(addr("10.1.2.4")), Port: 8080}}},
					{Name: "dns", Protocol: sr.UDP, Port: 53, NodePort: 31053},
				},
				ExternalPolicy: sr.PolicyLocal, HealthCheckNodePort: 32000,
				SourceRanges: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
			},
		},
		"skipped": []service.Skip{
			{Service: sr.ServiceID{Namespace: "shop", Name: "orders"}, Object: kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: "orders"}, Reason: service.ReasonHeadless},
			{Service: web, Object: kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: "web"}, Port: "sctp", Reason: service.ReasonSCTP, Detail: "SCTP 9999"},
		},
		"nat44": restapi.NAT44View{
			Desired: []string{"global forwarding=on", "mapping 10.96.10.30:8080/TCP lb desired"},
			Applied: []string{"global forwarding=on", "mapping 10.96.10.30:8080/TCP lb applied"},
			Failures: []nat44.Failure{{
				Object:  nat44.ObjectID{Kind: nat44.ObjectMapping, Mapping: webKey},
				Service: web, Op: nat44.OpAddMapping, Reason: "value exists",
			}},
			Conflicts: []nat44.Conflict{{Key: webKey, Winner: web, Losers: []sr.ServiceID{cart}}},
			Subsets: []nat44.SubsetStatus{{Frontend: webKey, Service: web,
				Subset: nat44.Subset{Endpoints: 300, Local: 4, Used: 255, UsedLocal: 4, LocalWeight: 2}}},
		},
		"nat44/mappings": restapi.NAT44MappingsView{Desired: restapi.NewNAT44Objects(desired), Applied: restapi.NewNAT44Objects(state)},
		"nodes": []*kubestate.VppNode{
			{Name: "node-2", ID: 2, VppIPs: []string{"192.168.16.2/24"}, MgmtIPs: []string{"192.168.56.102"}},
			{Name: "node-1", ID: 1, VppIPs: []string{"192.168.16.1/24"}, MgmtIPs: []string{"192.168.56.101"}},
			{Name: "node-3", ID: 3},
		},
		"ipam": restapi.IPAMView{
			NodeID: 1, PodSubnet: netip.MustParsePrefix("10.1.1.0/24"), PodSubnetAll: netip.MustParsePrefix("10.1.0.0/16"),
			PodGateway: addr("10.1.1.1"), NATLoopback: addr("10.1.1.254"),
			HostInterconnect: netip.MustParsePrefix("172.30.1.0/24"), NodeIP: netip.MustParsePrefix("192.168.16.1/24"),
			ServiceCIDR: netip.MustParsePrefix("10.96.0.0/12"),
			Pods:        map[string]netip.Addr{"shop/cart-1": addr("10.1.1.4"), "kube-system/dns-1": addr("10.1.1.2")},
		},
		"renderer": restapi.RendererView{
			Renderer:  "nat44",
			Stats:     restapi.RendererStats{Applies: 7, FullApplies: 1, Calls: 61, Invalid: 1},
			Failures:  []restapi.RendererFailure{{Object: "mapping 203.0.113.10:80/TCP", Op: "add-mapping", Error: "value exists", Service: &web}},
			Conflicts: []restapi.RendererConflict{{Frontend: "203.0.113.10:80/TCP", Winner: web, Losers: []sr.ServiceID{cart}}},
			Pending:   []restapi.RendererPending{{Name: "tap7", Since: time.Date(2025, 1, 2, 3, 4, 7, 0, time.UTC), Waits: "NAT44 features in"}},
			PendingTables: []restapi.RendererPendingTable{{VRF: 1, Since: time.Date(2025, 1, 2, 3, 4, 8, 0, time.UTC),
				Routes: []string{"route 10.96.0.0/12 vrf=1 drop"}}},
			Counts: restapi.RendererCounts{Desired: 2, Applied: 1, Failures: 1, Conflicts: 1, Pending: 1, PendingTables: 1, Held: 3},
		},
		"config":  contivconf.Defaults(),
		"latency": syncmetrics.LatencyView{Observed: 250, Window: 200, P50: 0.0123, P99: 0.0456, Max: 1.5, Stale: 3, Repeated: 1},
		"status": restapi.StatusView{
			Node: "node-1", NodeID: 1, Ready: true,
			Controller: controller.Status{
				Ready: true, LastResync: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), LastResyncKind: controller.ResyncStartup,
				Resyncs: 1, Batches: 7, Events: 49, Revision: 120, EtcdConnected: true,
				LastError: "apply: VPP not connected", LastErrorTime: time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC), Errors: 2,
			},
			VPP:   vpp.Status{Connected: true, Simulated: true, Version: "25.02-simulated", PID: 4242, Connects: 1, Note: "SIMULATED VPP"},
			NAT44: nat44.Stats{Applies: 7, FullApplies: 1, Calls: 61},
			ProxyHealth: &healthcheck.ProxyStatus{Healthy: true, NodeEligible: false, VPPConnected: true,
				LastUpdated: time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC)},
			Note: "SIMULATED VPP: NAT44 state is kept in memory and nothing forwards packets",
		},
	}
}

// serveViews serves views under /v1/ as the agent's REST server does and
// returns the server's URL.
func serveViews(t *testing.T, views map[string]any) string {
	t.Helper()
	mux := http.NewServeMux()
	for name, v := range views {
		body, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatalf("view %s: %v", name, err)
		}
		mux.HandleFunc("GET /v1/"+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// fields is s with runs of blanks collapsed, for checks on table rows.
func fields(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestStatusNamesTheRendererThatRuns: status prints one RENDERER row from
// /v1/renderer, naming the renderer, with the counters it has (cnat counts
// writes, nat44 does not), and no per-renderer row from /v1/status.
func TestStatusNamesTheRendererThatRuns(t *testing.T) {
	views := cannedViews()
	st := views["status"].(restapi.StatusView)
	st.CNAT = &cnat.Stats{Applies: 99}
	views["status"] = st
	writes := uint64(31)
	views["renderer"] = restapi.RendererView{Renderer: "cnat", Stats: restapi.RendererStats{Applies: 3, FullApplies: 1, Calls: 40, Writes: &writes},
		Counts: restapi.RendererCounts{Desired: 12, Applied: 12}}
	code, raw, errs := contivctl(t, "", "status", "--agent", serveViews(t, views))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	out := fields(raw)
	if !strings.Contains(out, "\nRENDERER cnat: 3 applies (1 full), 40 VPP calls (31 writes), 0 refused as invalid, 0 transient failures; "+
		"objects 12 desired, 12 applied; 0 failures, 0 conflicts, 0 pending interfaces, 0 pending tables\n") {
		t.Errorf("no cnat renderer row:\n%s", out)
	}
	if strings.Contains(out, "\nNAT44 ") || strings.Contains(out, "\nCNAT ") || strings.Contains(out, "99 applies") {
		t.Errorf("a per-renderer row from /v1/status:\n%s", out)
	}
	// An agent that serves no /v1/renderer: the row says so.
	delete(views, "renderer")
	if code, raw, _ := contivctl(t, "", "status", "--agent", serveViews(t, views)); code != 0 || !strings.Contains(fields(raw), "RENDERER unknown: ") {
		t.Errorf("status without /v1/renderer: exit %d\n%s", code, raw)
	}
}

func TestInspectCommands(t *testing.T) {
	url := serveViews(t, cannedViews())
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"services"}, []string{
			"SERVICE CLUSTER-IPS EXTERNAL-IPS PORT BACKENDS NODEPORT POLICY EXT/INT AFFINITY",
			"shop/cart 10.96.10.30 - http 8080/TCP 2 (1 local) - Cluster/Cluster ClientIP 3600s",
			"shop/web 10.96.10.20 203.0.113.10 http 80/TCP 1, Local policy: 0 31080 Local/Cluster -",
			"\ndns 53/UDP 0, Local policy: 0 31053\n",
		}},
		{[]string{"services"}, []string{
			"shop/web: health-check NodePort 32000",
			"shop/web: source ranges 198.51.100.0/24: enforced (input ACL on the main NIC)",
			"shop/web: 203.0.113.10:80/TCP served by 255 of its 300 endpoints on this node (4 of 4 local)",
		}},
		{[]string{"latency"}, []string{
			"network programming latency over the last 200 of 250 changes: p50 12.3ms, p99 45.6ms, max 1.5s",
			"not measured: 3 trigger times older than the agent's start, 1 already measured; 0 changes waiting for an apply",
		}},
		{[]string{"services", "--skipped"}, []string{
			"SERVICE OBJECT PORT REASON DETAIL",
			"shop/orders service shop/orders - headless -",
			"shop/web service shop/web sctp sctp-unsupported SCTP 9999",
		}},
		{[]string{"nat44"}, []string{
			"global forwarding=on\nmapping 10.96.10.30:8080/TCP lb desired\n",
			"FAILURES (1)",
			"mapping 203.0.113.10:80/TCP shop/web add-mapping value exists",
			"CONFLICTS (1)",
			"203.0.113.10:80/TCP shop/web shop/cart",
			"SUBSETS (1)",
			"203.0.113.10:80/TCP shop/web 300 255 45 4/4 2",
		}},
		{[]string{"renderer"}, []string{
			"RENDERER nat44: 7 applies (1 full), 61 VPP calls, 1 refused as invalid, 0 transient failures; objects 2 desired, 1 applied; 1 failures, 1 conflicts, 1 pending interfaces, 1 pending tables\n",
			"HELD 3 frontends wait for the features of the node's interfaces",
			"FAILURES (1)",
			"OBJECT SERVICE CALL REASON\nmapping 203.0.113.10:80/TCP shop/web add-mapping value exists\n",
			"CONFLICTS (1)",
			"FRONTEND WINNER LOSERS\n203.0.113.10:80/TCP shop/web shop/cart\n",
			"PENDING (1)",
			"INTERFACE SINCE WAITING\ntap7 2025-01-02T03:04:07Z NAT44 features in\n",
			"PENDING TABLES (1)",
			"VRF SINCE ROUTES WAITING\n1 2025-01-02T03:04:08Z route 10.96.0.0/12 vrf=1 drop\n",
		}},
		{[]string{"nat44", "--applied"}, []string{"mapping 10.96.10.30:8080/TCP lb applied\n"}},
		{[]string{"nodes"}, []string{
			"NAME ID VPP-IPS MGMT-IPS\nnode-1 1 192.168.16.1/24 192.168.56.101\nnode-2 2 192.168.16.2/24 192.168.56.102\nnode-3 3 - -\n",
		}},
		{[]string{"ipam"}, []string{
			"NODE ID 1", "POD SUBNET 10.1.1.0/24 (of 10.1.0.0/16)", "NAT LOOPBACK 10.1.1.254", "VXLAN IP -",
			"POD ALLOCATIONS (2)\nPOD IP\nkube-system/dns-1 10.1.1.2\nshop/cart-1 10.1.1.4\n",
		}},
		{[]string{"status"}, []string{
			"NODE node-1 (ID 1)",
			"READY yes (first full sync applied: yes, VPP connected: yes)",
			"VPP connected to 25.02-simulated, pid 4242, since never, SIMULATED; 1 connects, 0 restarts seen",
			"LAST RESYNC 2025-01-02T03:04:05Z (startup); 1 resyncs",
			"ERRORS 2; last at 2025-01-02T03:00:00Z: apply: VPP not connected",
			"PROXY HEALTH /healthz 503, /livez 200 (node DRAINING: tainted ToBeDeletedByClusterAutoscaler); last update 2025-01-02T03:04:06Z",
			"RENDERER nat44: 7 applies (1 full), 61 VPP calls, 1 refused as invalid, 0 transient failures;",
			"NOTE SIMULATED VPP: NAT44 state is kept in memory and nothing forwards packets",
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := contivctl(t, "", append(tt.args, "--agent", url)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range tt.want {
				if !strings.Contains(fields(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestInspectJSON checks that -o json prints each view as the agent
// serves it.
func TestInspectJSON(t *testing.T) {
	views := cannedViews()
	url := serveViews(t, views)
	for cmd, view := range map[string]string{"services": "services", "nat44": "nat44", "nodes": "nodes", "ipam": "ipam", "status": "status", "latency": "latency", "renderer": "renderer"} {
		code, out, errs := contivctl(t, "", cmd, "-o", "json", "--agent", url)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, code, errs)
		}
		want, _ := json.Marshal(views[view])
		var got, exp any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s -o json: %v\n%s", cmd, err, out)
		}
		_ = json.Unmarshal(want, &exp)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s -o json:\n%s\nwant\n%s", cmd, out, want)
		}
	}
	code, out, _ := contivctl(t, "", "services", "--skipped", "-o", "json", "--agent", url)
	if code != 0 || !strings.Contains(out, `"Reason": "sctp-unsupported"`) {
		t.Errorf("services --skipped -o json: exit %d\n%s", code, out)
	}
}

func TestTraceAgainstCannedAgent(t *testing.T) {
	url := serveViews(t, cannedViews())
	code, out, errs := contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "--agent", url, "--from", "10.1.1.4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"10.96.10.30:8080/TCP from 10.1.1.4: translated (load-balanced mapping), tag contiv:shop/cart, session affinity 3600s",
		"10.1.1.4:8080 1 66.7% 10.1.1.254 (rewritten: twice-NAT)",
		"10.1.3.4:8080 1 33.3% 10.1.1.4 (client's, kept)",
	} {
		if !strings.Contains(fields(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "note: VPP does not hold the mapping the agent wants for 10.96.10.30:8080/TCP") ||
		!strings.Contains(errs, "10.1.2.9:8080") {
		t.Errorf("no note on the pending change: %s", errs)
	}
	code, out, errs = contivctl(t, "", "trace", "10.96.10.31:8080/TCP", "--agent", url)
	if code != 0 || !strings.Contains(out, "not translated (no mapping; forwarding passes it)") || errs != "" {
		t.Errorf("no mapping: exit %d\n%s%s", code, out, errs)
	}
}

// TestAgentEnvironment checks that CONTIVCTL_AGENT names the agent and
// that --agent takes host:port.
func TestAgentEnvironment(t *testing.T) {
	url := serveViews(t, cannedViews())
	t.Setenv(agentEnv, url)
	if code, out, errs := contivctl(t, "", "nodes"); code != 0 || !strings.Contains(out, "node-3") {
		t.Errorf("with %s: exit %d: %s%s", agentEnv, code, out, errs)
	}
	hostPort := strings.TrimPrefix(url, "http://")
	if code, out, errs := contivctl(t, "", "nodes", "--agent", hostPort); code != 0 || !strings.Contains(out, "node-3") {
		t.Errorf("--agent %s: exit %d: %s%s", hostPort, code, out, errs)
	}
}

func TestAgentErrors(t *testing.T) {
	// An agent that is not there.
	srv := httptest.NewServer(http.NotFoundHandler())
	gone := srv.URL
	srv.Close()
	code, _, errs := contivctl(t, "", "services", "--agent", gone)
	if code != 1 || !strings.Contains(errs, "agent at "+gone+" unreachable") || !strings.Contains(errs, agentEnv) {
		t.Errorf("unreachable agent: exit %d, stderr %q", code, errs)
	}

	// Something else answers: no such view, a failing view, bad JSON.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom\nmore", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"not":"a list"}`)) })
	other := httptest.NewServer(mux)
	t.Cleanup(other.Close)
	for _, c := range []struct{ cmd, want string }{
		{"services", "has no view /v1/services"},
		{"status", "GET /v1/status: 500 Internal Server Error: boom"},
		{"nodes", "GET /v1/nodes: not the JSON this contivctl reads"},
		{"trace", "has no view /v1/config"},
	} {
		args := []string{c.cmd, "--agent", other.URL}
		if c.cmd == "trace" {
			args = append(args, "10.96.0.10:53/UDP")
		}
		code, _, errs := contivctl(t, "", args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.cmd, code, errs, c.want)
		}
	}
}

// TestServicesSourceRangesNotEnforced: a service whose source ranges the
// agent reports as not enforced (VPP without acl_plugin.so) gets a loud
// note with the agent's reason.
func TestServicesSourceRangesNotEnforced(t *testing.T) {
	views := cannedViews()
	web := sr.ServiceID{Namespace: "shop", Name: "web"}
	views["skipped"] = append(views["skipped"].([]service.Skip), service.Skip{Service: web,
		Object: kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: "web"}, Reason: service.ReasonSourceRangesNotEnforced,
		Detail: "loadBalancerSourceRanges 198.51.100.0/24 NOT enforced: VPP does not load acl_plugin.so (the ACL plugin); every source reaches the service"})
	url := serveViews(t, views)
	code, out, errs := contivctl(t, "", "services", "--agent", url)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	st := views["status"].(restapi.StatusView)
	st.VPP.MissingPlugins = []string{"acl_plugin.so"}
	views["status"] = st
	url = serveViews(t, views)
	if code, out, errs := contivctl(t, "", "status", "--agent", url); code != 0 || !strings.Contains(fields(out), "VPP LACKS acl_plugin.so (optional") {
		t.Errorf("status: exit %d %s\n%s", code, errs, out)
	}
	if want := "shop/web: source ranges 198.51.100.0/24: NOT enforced on this node: VPP does not load acl_plugin.so (the ACL plugin); every source reaches the service"; !strings.Contains(fields(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestStatusHeldListingWasApplied (issue 37): while the agent keeps its
// state because etcd's last listing was held (not a complete reflector
// output), status says the first full sync was applied (it was), the held
// listing among the reasons it is not ready.
func TestStatusHeldListingWasApplied(t *testing.T) {
	views := cannedViews()
	st := views["status"].(restapi.StatusView)
	st.Ready, st.FirstSyncApplied = false, true
	st.Controller.Ready, st.Controller.Held = false, "etcd holds no complete reflector output"
	st.NotReady = []string{"keeping the last state: etcd holds no complete reflector output"}
	st.NodeSync.Clashes = []string{"this node's VPP address 192.168.16.1 (node ID 1) is node node-1's address"}
	views["status"] = st
	code, raw, errs := contivctl(t, "", "status", "--agent", serveViews(t, views))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	out := fields(raw)
	for _, want := range []string{
		"READY no (first full sync applied: yes, VPP connected: yes)",
		"NOT READY keeping the last state: etcd holds no complete reflector output",
		"ADDRESS CLASH this node's VPP address 192.168.16.1 (node ID 1) is node node-1's address",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, raw)
		}
	}
}
