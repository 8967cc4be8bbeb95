package main

import (
	"encoding/json"
	"strings"
	"testing"

	"contiv.dev/vpp/plugins/service"
)

// parityYAML is one node and two LoadBalancer services claiming one
// ingress IP:port: shop/old (older) has a health-check NodePort, source
// ranges and a second ingress IP with ipMode Proxy.
const parityYAML = `
apiVersion: v1
kind: Node
metadata:
  name: node-1
spec:
  podCIDR: 10.1.1.0/24
---
apiVersion: v1
kind: Service
metadata:
  namespace: shop
  name: old
  creationTimestamp: "2025-01-01T00:00:00Z"
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.10
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  loadBalancerSourceRanges: [198.51.100.0/24]
  ports:
  - {name: http, port: 80, nodePort: 30080, targetPort: 8080}
status:
  loadBalancer:
    ingress:
    - ip: 203.0.113.10
    - ip: 203.0.113.11
      ipMode: Proxy
---
apiVersion: v1
kind: Service
metadata:
  namespace: shop
  name: new
  creationTimestamp: "2025-06-01T00:00:00Z"
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.11
  ports:
  - {name: http, port: 80, nodePort: 30081, targetPort: 8080}
status:
  loadBalancer:
    ingress:
    - ip: 203.0.113.10
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: shop
  name: old-a
  labels: {kubernetes.io/service-name: old}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.1.1.5]
  nodeName: node-1
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: shop
  name: new-a
  labels: {kubernetes.io/service-name: new}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.1.2.5]
  nodeName: node-2
`

// TestRenderReportsSkipsAndConflicts: render prints the conflicts and what
// was skipped, and why, in the table and in JSON; the health-check NodePort
// is mapped to the host side of the host interconnect.
func TestRenderReportsSkipsAndConflicts(t *testing.T) {
	file := writeFile(t, parityYAML)
	code, out, errs := contivctl(t, "", "render", "-f", file, "--node", "node-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"mapping 192.168.16.1:32000/TCP lb twice-nat=on affinity=0 tag=contiv:shop/old -> 0.0.0.0:0 vrf=0 p=0, 172.30.1.2:32000 vrf=0 p=1",
		"CONFLICTS (1)",
		"203.0.113.10:80/TCP shop/old shop/new",
		"SKIPPED (1)",
		"shop/old service shop/old - ipmode-proxy loadBalancer ingress IP 203.0.113.11",
	} {
		if !strings.Contains(fields(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "203.0.113.11") && !strings.Contains(out, "ipmode-proxy") || strings.Contains(out, "mapping 203.0.113.11") {
		t.Errorf("the ipMode Proxy IP is rendered:\n%s", out)
	}
	// Source ranges: enforced by nat44 (not reported), NOT enforced by cnat.
	if strings.Contains(out, "source-ranges-not-enforced") {
		t.Errorf("nat44 enforces source ranges, yet they are reported:\n%s", out)
	}
	code, out, errs = contivctl(t, "", "render", "-f", file, "--node", "node-1", "--renderer", "cnat")
	if code != 0 {
		t.Fatalf("--renderer cnat: exit %d: %s", code, errs)
	}
	if want := "shop/old service shop/old - source-ranges-not-enforced loadBalancerSourceRanges 198.51.100.0/24 NOT enforced"; !strings.Contains(fields(out), want) {
		t.Errorf("--renderer cnat lacks %q:\n%s", want, out)
	}

	code, out, errs = contivctl(t, "", "render", "-f", file, "--node", "node-1", "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, errs)
	}
	var got renderOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(got.Conflicts) != 1 || got.Conflicts[0].Winner.Name != "old" || len(got.Conflicts[0].Losers) != 1 {
		t.Errorf("-o json conflicts: %+v", got.Conflicts)
	}
	if len(got.Skipped) != 1 || got.Skipped[0].Reason != service.ReasonIPModeProxy {
		t.Errorf("-o json skipped: %+v", got.Skipped)
	}
}
