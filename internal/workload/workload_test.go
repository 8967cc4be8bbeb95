package workload

import (
	"net/netip"
	"testing"

	"contiv.dev/vpp/kubestate"
)

func TestWorkloadShape(t *testing.T) {
	w := New(1000)
	if len(w.Services) != 1000 || len(w.Slices) != 1000 || len(w.Nodes) != Nodes {
		t.Fatalf("sizes: %d services, %d slices, %d nodes", len(w.Services), len(w.Slices), len(w.Nodes))
	}
	if got := w.Services[0].ClusterIPs[0]; got != "10.96.0.0" {
		t.Errorf("service 0 cluster IP %s", got)
	}
	if got := ClusterIP(300); got != netip.MustParseAddr("10.96.1.44") {
		t.Errorf("ClusterIP(300) = %s", got)
	}
	nodePorts, withLocal := 0, 0
	for i, s := range w.Services {
		if s.Ports[0].NodePort != 0 {
			nodePorts++
			if s.Ports[0].NodePort != int32(30000+i/10) {
				t.Errorf("service %d nodePort %d", i, s.Ports[0].NodePort)
			}
		}
		local := 0
		for _, e := range w.Slices[i].Endpoints {
			if e.NodeName() == NodeName(ThisNode) {
				local++
			}
		}
		if local > 1 {
			t.Errorf("service %d has %d local endpoints", i, local)
		}
		withLocal += local
	}
	if nodePorts != 100 {
		t.Errorf("%d NodePort services, want 100 (10%%)", nodePorts)
	}
	if withLocal != 100 {
		t.Errorf("%d services with a local endpoint, want 100 (10%%)", withLocal)
	}
	// endpoint 3 of service 12: node (123 mod 100)+1 = 24, pod (123/100) mod 240 = 1
	if got := w.Slices[12].Endpoints[3].Addresses()[0]; got != "10.1.24.3" {
		t.Errorf("service 12 endpoint 3 = %s, want 10.1.24.3", got)
	}
	if len(w.Objects()) != 2*Nodes+2000+len(w.Pods) {
		t.Errorf("objects %d", len(w.Objects()))
	}
}

func TestChurnHalfAddsHalfRemovals(t *testing.T) {
	w := New(1000)
	adds, removes, reverts := 0, 0, 0
	state := map[int]int{}
	for _, c := range w.Churn() {
		if len(c.Prev.Endpoints) != state[c.S]+EndpointsPer {
			t.Fatalf("change %d: prev has %d endpoints, tracked %d", c.K, len(c.Prev.Endpoints), state[c.S]+EndpointsPer)
		}
		d := len(c.New.Endpoints) - len(c.Prev.Endpoints)
		switch {
		case state[c.S] != 0:
			reverts++
		case d == 1:
			adds++
		case d == -1:
			removes++
		default:
			t.Fatalf("change %d: endpoint delta %d", c.K, d)
		}
		state[c.S] += d
	}
	if adds != 500 || removes != 500 || reverts != 0 {
		t.Errorf("adds %d removes %d reverts %d; BENCH.md expects 500/500 for N ≥ 1000", adds, removes, reverts)
	}
}

// TestLocalEndpointsTargetPods checks that every endpoint on this node, of
// the base state or of the churn, targets a pod of the workload.
func TestLocalEndpointsTargetPods(t *testing.T) {
	w := New(1000)
	pods := map[string]bool{}
	for _, p := range w.Pods {
		if p.NodeName != NodeName(ThisNode) {
			t.Errorf("pod %s on %s", p.Name, p.NodeName)
		}
		pods[p.Name] = true
	}
	check := func(what string, eps []kubestate.Endpoint) {
		for _, e := range eps {
			if e.NodeName() == NodeName(ThisNode) && !pods[e.TargetName()] {
				t.Errorf("%s: local endpoint %s targets %s, not a pod of the workload", what, e.Addresses()[0], e.TargetName())
			}
		}
	}
	for _, s := range w.Slices {
		check(s.Name, s.Endpoints)
	}
	extra := 0
	for _, c := range w.Churn() {
		check("churn", c.New.Endpoints)
		for _, e := range c.New.Endpoints {
			if e.NodeName() == NodeName(ThisNode) && e.TargetName() == "pod-1-245" {
				extra++
			}
		}
	}
	if extra == 0 {
		t.Error("no churn change adds an endpoint on this node")
	}
}
