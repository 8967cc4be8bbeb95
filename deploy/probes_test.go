package deploy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// The agent's probes hit endpoints a running agent serves, on the port of
// the http.address its configuration gives: /healthz answers 200 and
// /readyz 200 once ready; the startup probe outlasts the node-ID claim,
// before which nothing is served.
func TestAgentProbesHitTheAgent(t *testing.T) {
	m := render(t, variants[0])
	cfg := m.agentConfig(t)
	c := m.agent.Spec.Template.Spec.Containers[0]
	_, port, err := net.SplitHostPort(cfg.HTTP.Address)
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe}
	for kind, p := range probes {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("agent has no HTTP %s probe", kind)
		}
		if got := strconv.Itoa(p.HTTPGet.Port.IntValue()); got != port {
			t.Errorf("agent %s probe on port %s; the agent listens on %s", kind, got, cfg.HTTP.Address)
		}
	}
	if p := probes["readiness"].HTTPGet.Path; p != "/readyz" {
		t.Errorf("readiness probe %s: want /readyz (ready = first full sync applied, VPP holds it)", p)
	}
	if waits := time.Duration(probes["startup"].PeriodSeconds*probes["startup"].FailureThreshold) * time.Second; waits <= cfg.NodeSync.ClaimTimeout.Std() {
		t.Errorf("startup probe gives up after %s, before the node-ID claim's bound %s", waits, cfg.NodeSync.ClaimTimeout)
	}

	// The same configuration, with a test etcd, a simulated VPP and a
	// free port.
	e := etcdtest.Start(t)
	if _, err := kubestate.MarkSynced(context.Background(), e.Client(), "test", 0); err != nil { // as a reflector's sweep
		t.Fatal(err)
	}
	cfg.Etcd.Endpoints = []string{e.Endpoint()}
	cfg.VPP.Simulate = contivconf.SimulateAlways
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.NodeSync.StateFile = filepath.Join(t.TempDir(), "node-id")
	cfg.Log.Level = contivconf.LogLevelError
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: agent.Simulated(sim.New(sim.Options{})), LogOutput: io.Discard})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second) // bounds a hung test only
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("agent not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for kind, p := range probes {
		w := httptest.NewRecorder()
		a.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, p.HTTPGet.Path, nil))
		if w.Code != http.StatusOK {
			t.Errorf("%s probe GET %s: %d from a ready agent", kind, p.HTTPGet.Path, w.Code)
		}
	}
}
