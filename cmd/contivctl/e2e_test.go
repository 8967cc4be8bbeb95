package main

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// startAgent runs a real contiv-agent for node-1 against embedded etcd
// holding the example cluster and a simulated VPP, and returns the URL of
// its REST views; each of set changes the configuration first.
func startAgent(t *testing.T, set ...func(*contivconf.Config)) string {
	t.Helper()
	srv := etcdtest.Start(t)
	cfg := contivconf.Defaults()
	cfg.NodeName = "node-1"
	cfg.Etcd.Endpoints = []string{srv.Endpoint()}
	cfg.NodeSync.StateFile = filepath.Join(t.TempDir(), "node-id")
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Log.Level = contivconf.LogLevelWarn
	for _, f := range set {
		f(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: agent.Simulated(sim.New(sim.Options{})), LoadFile: clusterYAML, LogOutput: io.Discard})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("agent not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	web := httptest.NewServer(a.HTTPHandler())
	t.Cleanup(web.Close)
	return web.URL
}

// TestAgentEndToEnd inspects a real agent: what it programmed equals the
// offline render of the same manifests, and live and offline traces agree.
func TestAgentEndToEnd(t *testing.T) {
	url := startAgent(t)
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := contivctl(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}

	services := fields(run("services", "--agent", url))
	for _, want := range []string{
		"shop/cart 10.96.10.30 - http 8080/TCP 2 (1 local) - Cluster/Cluster ClientIP 3600s",
		"shop/frontend 10.96.10.10 - http 80/TCP 3 (1 local), Local policy: 1 30080 Local/Cluster -",
		"kube-system/kube-dns 10.96.0.10 - dns 53/UDP",
	} {
		if !strings.Contains(services, want) {
			t.Errorf("services lacks %q:\n%s", want, services)
		}
	}
	if strings.Contains(services, "shop/orders") {
		t.Errorf("the headless service is listed:\n%s", services)
	}
	skipped := fields(run("services", "--skipped", "--agent", url))
	for _, want := range []string{"shop/orders service shop/orders - headless", "shop/payments-db service shop/payments-db - external-name", "shop/legacy service shop/legacy - other-proxy"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped lacks %q:\n%s", want, skipped)
		}
	}

	// What the agent applied is what render says it would program.
	rendered := run("render", "-f", clusterYAML, "--node", "node-1")
	rendered, skippedSection, _ := strings.Cut(rendered, "\nSKIPPED (")
	if !strings.Contains(skippedSection, "headless") {
		t.Errorf("render does not say what it skipped:\n%s", skippedSection)
	}
	// Ready waits for this node's own addresses to come back from etcd,
	// so their NodePorts are applied already.
	if applied := run("nat44", "--applied", "--agent", url); applied != rendered {
		t.Errorf("the agent applied\n%s\nrender says\n%s", applied, rendered)
	}
	if desired := run("nat44", "--agent", url); desired != rendered {
		t.Errorf("the agent desires\n%s\nrender says\n%s", desired, rendered)
	}

	// Live and offline traces agree.
	for _, target := range []string{"10.96.10.30:8080/TCP", "10.96.0.10:53/UDP", "192.168.16.1:31080/TCP", "192.168.56.101:30080/TCP", "10.96.99.99:80/TCP"} {
		for _, from := range []string{"192.0.2.1", "10.1.1.3", "10.1.1.4"} {
			live := run("trace", target, "--from", from, "--agent", url)
			offline := run("trace", target, "--from", from, "-f", clusterYAML, "--node", "node-1")
			if live != offline {
				t.Errorf("trace %s from %s: live\n%s\noffline\n%s", target, from, live, offline)
			}
		}
	}
	code, live, errs := contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "--agent", url)
	if code != 0 || !strings.Contains(live, "10.1.3.4:8080") || errs != "" {
		t.Errorf("live trace: exit %d\n%s%s", code, live, errs)
	}

	nodes := fields(run("nodes", "--agent", url))
	if !strings.Contains(nodes, "node-1 1 192.168.16.1/24 192.168.56.101") {
		t.Errorf("nodes:\n%s", nodes)
	}
	ipam := fields(run("ipam", "--agent", url))
	for _, want := range []string{"NODE ID 1", "POD SUBNET 10.1.1.0/24 (of 10.1.0.0/16)", "NAT LOOPBACK 10.1.1.254", "NODE IP 192.168.16.1/24"} {
		if !strings.Contains(ipam, want) {
			t.Errorf("ipam lacks %q:\n%s", want, ipam)
		}
	}
	status := fields(run("status", "--agent", url))
	for _, want := range []string{"NODE node-1 (ID 1)", "READY yes", "(startup)", "SIMULATED VPP", "\nRENDERER nat44: "} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	if out := fields(run("renderer", "--agent", url)); !strings.HasPrefix(out, "RENDERER nat44: ") || strings.Contains(out, "writes") {
		t.Errorf("renderer:\n%s", out)
	}
	if out := fields(run("doctor", "--allow-simulated", "--agent", url)); !strings.Contains(out, "ok nat44 VPP accepted every object the nat44 renderer programmed") {
		t.Errorf("doctor:\n%s", out)
	}
}

// TestAgentEndToEndCNAT traces through a real agent running the cnat
// renderer: the live answer (packettrace.CNAT over /v1/cnat and /v1/ipam)
// is the offline one (the simulated VPP's cnat oracle) for cluster IPs,
// NodePorts on the VPP and management addresses, an address nothing
// translates, from outside and from local and remote pods.
func TestAgentEndToEndCNAT(t *testing.T) {
	url := startAgent(t, func(c *contivconf.Config) { c.Renderer = contivconf.RendererCNAT })
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := contivctl(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	for _, target := range []string{"10.96.10.30:8080/TCP", "10.96.0.10:53/UDP", "192.168.16.1:31080/TCP", "192.168.56.101:30080/TCP", "10.96.99.99:80/TCP"} {
		for _, from := range []string{"192.0.2.1", "10.1.1.3", "10.1.1.4", "10.1.3.4"} {
			live := run("trace", target, "--from", from, "--agent", url)
			offline := run("trace", target, "--from", from, "-f", clusterYAML, "--node", "node-1", "--renderer", "cnat")
			if live != offline {
				t.Errorf("trace %s from %s: live\n%s\noffline\n%s", target, from, live, offline)
			}
		}
	}
	code, live, errs := contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "--agent", url)
	for _, want := range []string{"tag cnat translation 10.96.10.30:8080/TCP", "10.1.1.4:8080", "10.1.3.4:8080", "192.168.16.1 (rewritten: cnat source NAT)"} {
		if code != 0 || !strings.Contains(live, want) || errs != "" {
			t.Errorf("live trace lacks %q: exit %d\n%s%s", want, code, live, errs)
		}
	}
	// The renderer-neutral view names cnat; status and doctor read it.
	if out := fields(run("renderer", "--agent", url)); !strings.HasPrefix(out, "RENDERER cnat: ") || !strings.Contains(out, " writes)") {
		t.Errorf("renderer:\n%s", out)
	}
	if out := fields(run("status", "--agent", url)); !strings.Contains(out, "\nRENDERER cnat: ") {
		t.Errorf("status:\n%s", out)
	}
	if out := fields(run("doctor", "--allow-simulated", "--agent", url)); !strings.Contains(out, "ok cnat VPP accepted every object the cnat renderer programmed") {
		t.Errorf("doctor:\n%s", out)
	}
	// An IPv6 target is traced (this node has no IPv6 translation).
	if out := run("trace", "[fd00:96::50]:80/TCP", "--agent", url); !strings.Contains(out, "from 2001:db8::1: not translated") {
		t.Errorf("IPv6 trace:\n%s", out)
	}
}
