package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"contiv.dev/vpp/plugins/service"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const renderGolden = "testdata/render-cluster-node-1.golden"

// TestRenderGolden renders the example cluster for node-1 and compares
// the output with the golden file (go test -run TestRenderGolden -update
// rewrites it).
func TestRenderGolden(t *testing.T) {
	code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "node node-1: ID 1 (its position among the Nodes of "+clusterYAML+" sorted by name)") ||
		!strings.Contains(errs, "management IPs 192.168.56.101") {
		t.Errorf("stderr does not describe the node: %s", errs)
	}
	if *update {
		if err := os.WriteFile(renderGolden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(renderGolden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("render differs from %s:\n%s", renderGolden, out)
	}
	// Deterministic: a second run (and the manifests from standard input)
	// give the same bytes.
	yaml, err := os.ReadFile(clusterYAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, again, _ := contivctl(t, string(yaml), "render", "-f", "-", "--node", "node-1"); again != out {
		t.Errorf("second render differs:\n%s", again)
	}
}

func TestRenderOptions(t *testing.T) {
	// Another node: its own NodePort addresses, not node-1's.
	code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-3")
	if code != 0 {
		t.Fatalf("node-3: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "mapping 192.168.56.103:30080/TCP") || strings.Contains(out, "mapping 192.168.56.101:") ||
		!strings.Contains(out, "pool 10.1.3.254 vrf=any twice-nat") {
		t.Errorf("node-3:\n%s", out)
	}

	// A node the file does not hold, with its ID.
	code, out, errs = contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-7", "--node-id", "7")
	if code != 0 {
		t.Fatalf("node-7: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "pool 10.1.7.254 vrf=any twice-nat") || !strings.Contains(errs, "ID 7 (from --node-id)") ||
		!strings.Contains(errs, "management IPs none") {
		t.Errorf("node-7:\n%s\n%s", out, errs)
	}

	// A configuration file: the node's own address and a local weight.
	cfg := writeFile(t, `
nat44:
  serviceLocalEndpointWeight: 3
nodeConfig:
  - nodeName: node-1
    mainInterface:
      name: GigabitEthernet0/9/0
      ipCIDR: 192.168.16.50/24
`)
	code, out, errs = contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--config", cfg)
	if code != 0 {
		t.Fatalf("--config: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"interface GigabitEthernet0/9/0 out",
		"mapping 192.168.16.50:30080/TCP",
		"tag=contiv:shop/cart|a3600 -> 10.1.1.4:8080 vrf=1 p=3, 10.1.3.4:8080 vrf=1 p=1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--config: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "192.168.16.1:") {
		t.Errorf("--config: the derived node IP is still used:\n%s", out)
	}

	// -o json.
	code, out, errs = contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, errs)
	}
	var got renderOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	golden, _ := os.ReadFile(renderGolden)
	state, _, _ := strings.Cut(string(golden), "\nSKIPPED")
	if got.NodeID != 1 || got.NodeIP.String() != "192.168.16.1/24" || strings.Join(got.Desired, "\n")+"\n" != state {
		t.Errorf("-o json: %+v", got)
	}
	if len(got.Skipped) != 3 || got.Skipped[1].Reason != service.ReasonHeadless || got.Skipped[1].Object.Name != "orders" {
		t.Errorf("-o json skipped: %+v", got.Skipped)
	}
}

func TestRenderErrors(t *testing.T) {
	badCfg := writeFile(t, "nat44:\n  serviceLocalEndpointWeight: 0\n")
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"unknown node", []string{"render", "-f", clusterYAML, "--node", "node-9"}, 1, `"node-9" is not one of the 3 Nodes given ([node-1 node-2 node-3]); give its node ID`},
		{"bad config", []string{"render", "-f", clusterYAML, "--node", "node-1", "--config", badCfg}, 1, "nat44.serviceLocalEndpointWeight"},
		{"missing config", []string{"render", "-f", clusterYAML, "--node", "node-1", "--config", "/nonexistent.yaml"}, 1, "/nonexistent.yaml"},
		{"bad node name", []string{"render", "-f", clusterYAML, "--node", "Node_1"}, 1, `nodeName`},
		{"ID out of the plan", []string{"render", "-f", clusterYAML, "--node", "node-1", "--node-id", "300"}, 1, "ipam"},
		{"no file", []string{"render", "--node", "node-1"}, 2, "-f FILE is required"},
		{"no node", []string{"render", "-f", clusterYAML}, 2, "--node NAME is required"},
		{"bad output", []string{"render", "-f", clusterYAML, "--node", "node-1", "-o", "yaml"}, 2, `-o "yaml": want table or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := contivctl(t, "", tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.wantErr)
			}
			if out != "" {
				t.Errorf("output on error: %q", out)
			}
		})
	}
}

// TestTraceOffline traces packets through the example cluster rendered
// for node-1, as the packets enter on its main NIC.
func TestTraceOffline(t *testing.T) {
	offline := []string{"-f", clusterYAML, "--node", "node-1"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"ClusterIP with affinity", []string{"10.96.10.30:8080/TCP"}, []string{
			"10.96.10.30:8080/TCP from 192.0.2.1: translated (load-balanced mapping), tag contiv:shop/cart|a3600, session affinity 3600s",
			"10.1.1.4:8080 1 50.0% 192.0.2.1 (client's, kept)",
			"10.1.3.4:8080 1 50.0% 192.0.2.1 (client's, kept)",
		}},
		{"ClusterIP from a backend to itself", []string{"10.96.10.30:8080/tcp", "--from", "10.1.1.4"}, []string{
			"10.1.1.4:8080 1 50.0% 10.1.1.254 (rewritten: twice-NAT)",
			"10.1.3.4:8080 1 50.0% 10.1.1.4 (client's, kept)",
		}},
		{"UDP ClusterIP", []string{"10.96.0.10:53/udp"}, []string{
			"10.96.0.10:53/UDP from 192.0.2.1: translated (load-balanced mapping), tag contiv:kube-system/kube-dns",
			"10.1.1.2:53 1 50.0%", "10.1.2.2:53 1 50.0%",
		}},
		{"NodePort on this node's VPP IP", []string{"192.168.16.1:31080/TCP"}, []string{
			"192.168.16.1:31080/TCP from 192.0.2.1: translated (load-balanced mapping), tag contiv:shop/web",
			"10.1.2.4:8080 1 50.0% 10.1.1.254 (rewritten: twice-NAT)",
			"10.1.3.3:8080 1 50.0% 10.1.1.254 (rewritten: twice-NAT)",
		}},
		{"ETP=Local NodePort on this node's management IP", []string{"192.168.56.101:30080/TCP", "--from", "198.51.100.7"}, []string{
			"192.168.56.101:30080/TCP from 198.51.100.7: translated (load-balanced mapping), tag contiv:shop/frontend",
			"10.1.1.3:8080 1 100.0% 198.51.100.7 (client's, kept)",
		}},
		{"NodePort on another node's IP", []string{"192.168.56.102:30080/TCP"}, []string{
			"192.168.56.102:30080/TCP from 192.0.2.1: not translated (no mapping; forwarding passes it)",
		}},
		{"VIP with no mapping", []string{"10.96.99.99:80"}, []string{
			"10.96.99.99:80/TCP from 192.0.2.1: not translated (no mapping; forwarding passes it)",
		}},
		{"wrong protocol", []string{"10.96.10.30:8080/UDP"}, []string{"not translated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"trace"}, tt.args...), offline...)
			code, out, errs := contivctl(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range tt.want {
				if !strings.Contains(fields(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "not translated") && strings.Contains(out, "BACKEND") {
				t.Errorf("backends listed for an untranslated packet:\n%s", out)
			}
		})
	}

	// -o json, flags before the target.
	code, out, errs := contivctl(t, "", append([]string{"trace", "-o", "json", "--from", "10.1.1.3", "192.168.16.1:30080/TCP"}, offline...)...)
	if code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, errs)
	}
	var got traceOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if got.Verdict != "translated" || len(got.Backends) != 1 || got.Backends[0].IP.String() != "10.1.1.3" ||
		got.Backends[0].Probability != 1 || !got.Backends[0].SourceRewritten || got.Backends[0].Src.String() != "10.1.1.254" {
		t.Errorf("-o json: %+v", got)
	}
}

func TestTraceUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no target", []string{"trace"}, "VIP:PORT/PROTO is required"},
		{"two targets", []string{"trace", "10.96.0.10:53/UDP", "10.96.0.11:53/UDP"}, `unexpected argument "10.96.0.11:53/UDP"`},
		{"no port", []string{"trace", "10.96.0.10/UDP"}, `bad target "10.96.0.10/UDP": no port; want VIP:PORT/PROTO, e.g. 10.96.0.10:53/UDP`},
		{"bad address", []string{"trace", "10.96.0.300:53/UDP"}, `bad target "10.96.0.300:53/UDP"`},
		{"name, not address", []string{"trace", "kube-dns:53/UDP"}, `bad target "kube-dns:53/UDP"`},
		{"port 0", []string{"trace", "10.96.0.10:0/UDP"}, "port 0"},
		{"port too big", []string{"trace", "10.96.0.10:65536/UDP"}, `bad target "10.96.0.10:65536/UDP"`},
		{"IPv6 through NAT44", []string{"trace", "[fd00::10]:53/UDP", "-f", clusterYAML, "--node", "node-1"}, "target [fd00::10]:53/UDP is IPv6 and NAT44 translates IPv4 only (trace it through --renderer cnat)"},
		{"IPv4-mapped", []string{"trace", "[::ffff:10.96.0.10]:53/UDP"}, "an IPv4-mapped IPv6 address: write it as IPv4"},
		{"IPv6 source, IPv4 target", []string{"trace", "10.96.0.10:53/UDP", "--from", "fd00::1"}, "--from fd00::1 and target 10.96.0.10:53/UDP are of different families: want an IPv4 address"},
		{"IPv4 source, IPv6 target", []string{"trace", "[fd00::10]:53/UDP", "--from", "10.1.1.3"}, "want an IPv6 address"},
		{"bad IPv6 source", []string{"trace", "[fd00::10]:53/UDP", "--from", "pod-a"}, `--from "pod-a": want an IPv6 address`},
		{"SCTP", []string{"trace", "10.96.0.10:53/SCTP"}, "SCTP is not supported by NAT44-ED"},
		{"unknown protocol", []string{"trace", "10.96.0.10:53/ICMP"}, `unknown protocol "ICMP" (TCP or UDP)`},
		{"bad source", []string{"trace", "10.96.0.10:53/UDP", "--from", "pod-a"}, `--from "pod-a": want an IPv4 address`},
		{"--node without -f", []string{"trace", "10.96.0.10:53/UDP", "--node", "node-1"}, "they need -f FILE"},
		{"-f without --node", []string{"trace", "10.96.0.10:53/UDP", "-f", clusterYAML}, "--node NAME is required with -f"},
		{"bad output", []string{"trace", "10.96.0.10:53/UDP", "-o", "wide"}, `-o "wide"`},
		{"bad agent address", []string{"trace", "10.96.0.10:53/UDP", "--agent", "ftp://x"}, `--agent "ftp://x": want http://host:port or host:port`},
		{"empty agent address", []string{"services", "--agent", " "}, "--agent is empty"},
		{"unknown flag", []string{"nodes", "--wide"}, "flag provided but not defined: -wide"},
		{"argument to services", []string{"services", "shop/web"}, `unexpected argument "shop/web"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := contivctl(t, "", tt.args...)
			if code != 2 || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, tt.wantErr)
			}
			if out != "" {
				t.Errorf("output on a usage error: %q", out)
			}
		})
	}
	// Help is not an error.
	for _, cmd := range []string{"services", "nat44", "nodes", "ipam", "status", "render", "trace"} {
		if code, _, errs := contivctl(t, "", cmd, "-h"); code != 0 || !strings.Contains(errs, "Usage: contivctl "+cmd) {
			t.Errorf("%s -h: exit %d, stderr %q", cmd, code, errs)
		}
	}
}

// A service of 300 endpoints: the rendered frontend holds 255 of them
// (VPP 25.02's u8 probability sum) and render says so.
func TestRenderSubsets(t *testing.T) {
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Service
metadata: {namespace: default, name: big, creationTimestamp: "2025-01-10T08:00:00Z"}
spec:
  type: ClusterIP
  clusterIP: 10.96.7.7
  clusterIPs: [10.96.7.7]
  ports: [{name: http, protocol: TCP, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: default
  name: big-1
  labels: {kubernetes.io/service-name: big}
addressType: IPv4
ports: [{name: http, protocol: TCP, port: 8080}]
endpoints:
`)
	for i := range 300 {
		fmt.Fprintf(&b, "- {addresses: [10.1.%d.%d], conditions: {ready: true}, nodeName: node-%d}\n", 2+i/250, 1+i%250, 2+i/250)
	}
	file := writeFile(t, b.String())
	code, out, errs := contivctl(t, "", "render", "-f", file, "--node", "node-1", "--node-id", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(fields(out), "SUBSETS (1)") || !strings.Contains(fields(out), "10.96.7.7:80/TCP default/big 300 255 45 0/0 1") {
		t.Errorf("render lacks the subset:\n%s", out)
	}
}
