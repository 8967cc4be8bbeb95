package agent

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestCNATWaitsForThePodVRFTable: after a VPP restart the API answers
// before the startup configuration has made table 1 (FACTS §6: a VRF-1
// route answers -3 for ~2-4 s; here the service CIDR's lookup of table 0). The full reprogram applies all it
// can and the route waits for the table, named by readiness, as an
// interface waits for VPP to make it; once the startup configuration has
// run, the route is added and the agent is ready, without a healing
// resync.
func TestCNATWaitsForThePodVRFTable(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cluster, err := os.ReadFile("../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	load := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(load, cluster, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := contivconf.Defaults()
	cfg.Renderer = contivconf.RendererCNAT
	cfg.VPP.PendingInterfaceGrace = contivconf.Duration(time.Hour)
	vpp := sim.New(sim.Options{})
	r := start(t, testConfigFrom(t, cfg, srv.Endpoint(), dir), vpp, load)
	podRoute := sim.Route{VRF: 1, Prefix: netip.MustParsePrefix("10.96.0.0/12"), Lookup: true, LookupVRF: 0}
	if !slices.Contains(vpp.Routes(), podRoute) {
		t.Fatalf("routes %v lack %v", vpp.Routes(), podRoute)
	}
	healings := r.a.Controller().Status().Resyncs

	vpp.RestartWith(sim.RestartOptions{InterfacesAfter: 2 * time.Second})
	defer vpp.Close()
	waitFor(t, "readiness naming the missing table", func() bool {
		return slices.ContainsFunc(r.a.notReady(), func(s string) bool { return strings.Contains(s, "re-create FIB table 1") })
	})
	if slices.Contains(vpp.Routes(), podRoute) {
		t.Error("the route is there before its table")
	}
	waitFor(t, "ready after the startup configuration ran", r.a.Ready)
	if !slices.Contains(vpp.Routes(), podRoute) {
		t.Errorf("routes %v lack %v once the table is there", vpp.Routes(), podRoute)
	}
	if got := r.a.Controller().Status().Resyncs - healings; got != 1 {
		t.Errorf("%d resyncs since the restart, want the one reprogram (no healing)", got)
	}
}

// TestCNATOnVPP2606 programs a simulated VPP 26.06 with the cnat renderer:
// the agent reads no SNAT address before the first is set (26.06 answers
// FEATURE_DISABLED), and sets them before the policy, the exclude prefixes
// and the interface tables, which live in the entry they create (else
// VPP 26.06 dies): measured on the real 26.06 by the real-VPP suite.
func TestCNATOnVPP2606(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := contivconf.Defaults()
	cfg.Renderer = contivconf.RendererCNAT
	vpp := sim.New(sim.Options{Version: "26.06-release"})
	defer vpp.Close()
	c := testConfigFrom(t, cfg, srv.Endpoint(), dir)
	start(t, c, vpp, "../deploy/examples/cluster.yaml")
	if n := vpp.Crashes(); n != 0 {
		t.Fatalf("the simulated VPP 26.06 crashed %d times: %s", n, vpp.LastCrash())
	}
	s := vpp.CnatSnatState()
	if !s.IP4.IsValid() || s.IP4.IsUnspecified() || s.Policy != sim.CnatPolicyK8s || len(s.Exclude) == 0 || len(s.Pod) == 0 {
		t.Errorf("cnat source NAT on 26.06: %+v, want the node's address, the K8S policy, exclude prefixes and pod tables", s)
	}
	// NO_CLIENT (a client on the node address drops the node's own
	// traffic: VXLAN) and USE_AS_DEFAULT (pod traffic is in the pod VRF).
	if s.Flags != 2|4 {
		t.Errorf("cnat SNAT entry flags on 26.06: %d, want NO_CLIENT|USE_AS_DEFAULT (6)", s.Flags)
	}
	// Every table with interfaces (the pod VRF's were bound before cnat's
	// first use) has a cnat session budget: else 26.06 makes no session
	// for its flows and their replies leave untranslated.
	if tables := vpp.CnatTablesWithoutSessions(); len(tables) != 0 {
		t.Errorf("tables %v have interfaces but no cnat session budget on 26.06", tables)
	}
}
