package agent

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// propertyChecks is how many random sequences TestPropertyAgentConverges
// runs unless -rapid.checks says otherwise: each one runs the whole agent
// (twice) against a fresh etcd, so a few suffice.
const propertyChecks = 12

// TestPropertyAgentConverges writes random sequences of services,
// EndpointSlices and local pods (valid and invalid ones) into etcd, with
// agent restarts, VPP restarts and injected VPP faults among them, and
// checks that once quiet the simulated VPP holds exactly what a fresh
// agent programs into a fresh simulated VPP from the same etcd contents,
// and that a full resync of the running agent then writes nothing.
func TestPropertyAgentConverges(t *testing.T) {
	defaultRapidChecks(t, propertyChecks)
	srv := etcdtest.Start(t)
	used := false
	var runs, mappings, faults, conflicts, skips int
	defer func() {
		t.Logf("%d sequences ended with %d mappings, %d conflicts and %d skipped parts in all; %d calls failed by injection",
			runs, mappings, conflicts, skips, faults)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		if used {
			srv.Wipe()
		}
		used = true
		cfg := testConfig(t, srv.Endpoint(), t.TempDir())
		h := newHarness(rt, srv.Endpoint(), cfg)
		defer h.close()
		h.apply(propertyBase())
		steps := []string{setPropertyFaults(rt, h)}
		// A populated cluster, written at once.
		var ops []kubestate.Op
		for _, name := range propertyServices() {
			ops = append(ops, kubestate.PutOp(drawService(rt, name)), kubestate.PutOp(drawSlice(rt, name+"-a")))
			if rapid.Bool().Draw(rt, "second slice") {
				ops = append(ops, kubestate.PutOp(drawSlice(rt, name+"-b")))
			}
		}
		for _, p := range propertyPods() {
			if rapid.Bool().Draw(rt, "pod") {
				ops = append(ops, kubestate.PutOp(p.object()))
			}
		}
		h.apply(ops)
		steps = append(steps, fmt.Sprintf("put %d services, slices and pods", len(ops)))

		for range rapid.IntRange(4, 12).Draw(rt, "actions") {
			steps = append(steps, propertyAction(rt, h))
			if rapid.Bool().Draw(rt, "settle") {
				h.waitQuiet()
			}
		}
		h.waitQuiet()
		if n := h.vpp.Crashes(); n != 0 {
			rt.Fatalf("the agent crashed the simulated VPP 25.02 (%d times; last: %s) after %s", n, h.vpp.LastCrash(), strings.Join(steps, "; "))
		}
		got := h.lines()
		runs++
		mappings += len(filterLines(got, map[string]bool{"mapping": true}))
		conflicts += len(h.agent.Renderer().Conflicts())
		skips += len(h.agent.Processor().Skipped())
		faults += int(h.injected.Load())

		// A full resync (etcd listed again) finds VPP right.
		h.vpp.ResetCalls()
		before := h.agent.ctl.Status().Resyncs
		h.agent.ctl.RequestRelist()
		deadline := time.Now().Add(settleLimit)
		for h.agent.ctl.Status().Resyncs == before {
			if time.Now().After(deadline) {
				rt.Fatalf("no resync after a relist request")
			}
			time.Sleep(pollEvery)
		}
		h.waitQuiet()
		if w := h.vpp.Writes(); w != 0 {
			rt.Fatalf("a full resync after %s made %d writes: %v", strings.Join(steps, "; "), w, h.vpp.CallCounts())
		}
		if after := h.lines(); strings.Join(after, "\n") != strings.Join(got, "\n") {
			rt.Fatalf("a full resync changed the state:\n%s", diffLines(got, after))
		}

		// A fresh agent and a fresh VPP from the same etcd contents.
		h.stopAgent()
		fresh := newHarness(rt, srv.Endpoint(), cfg)
		defer fresh.close()
		fresh.waitQuiet()
		if want := fresh.lines(); strings.Join(want, "\n") != strings.Join(got, "\n") {
			rt.Fatalf("after %s the state differs from a fresh agent's (- fresh, + incremental):\n%s",
				strings.Join(steps, "; "), diffLines(want, got))
		}
	})
}

// defaultRapidChecks sets rapid's number of checks for this test when
// neither the command line nor RAPID_CHECKS does.
func defaultRapidChecks(t *testing.T, n int) {
	if os.Getenv("RAPID_CHECKS") != "" {
		return
	}
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("rapid registers no -rapid.checks flag")
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == f.Name })
	if set {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set(fmt.Sprint(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// The random cluster: node-1 (this node, pods in 10.1.1.0/24) and node-2;
// three services of namespace shop with two slices each, and two pods of
// node-1. Services, slices and pods draw from these palettes.
func propertyServices() []string { return []string{"alpha", "beta", "gamma"} }

type propertyPod struct{ name, ip string }

func propertyPods() []propertyPod { return []propertyPod{{"p0", "10.1.1.5"}, {"p1", "10.1.1.6"}} }

// propertyEndpoints are the endpoint addresses slices draw from: the
// local pods, pods of node-2 and node-3, and one invalid address.
func propertyEndpoints() []string {
	return []string{"10.1.1.5", "10.1.1.6", "10.1.2.5", "10.1.2.6", "10.1.3.5", "10.1.2.999"}
}

// propertyPorts are the valid service ports services draw from, and
// propertyBadPorts the invalid ones (port 0, SCTP, a name used twice).
func propertyPorts() []kubestate.ServicePort {
	return []kubestate.ServicePort{
		{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"},
		{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: "5353"},
		{Name: "dns-tcp", Protocol: "TCP", Port: 53, TargetPort: "5353"},
	}
}

func propertyBadPorts() []kubestate.ServicePort {
	return []kubestate.ServicePort{
		{Name: "zero", Protocol: "TCP", Port: 0, TargetPort: "9000"},
		{Name: "sctp", Protocol: "SCTP", Port: 9001, TargetPort: "9001"},
		{Name: "http", Protocol: "TCP", Port: 81, TargetPort: "8081"},
	}
}

// propertySlicePorts are the ports of every slice: those of the service
// ports, and the zero and sctp ones.
func propertySlicePorts() []kubestate.EndpointPort {
	return []kubestate.EndpointPort{
		{Name: "http", Protocol: "TCP", Port: 8080},
		{Name: "dns", Protocol: "UDP", Port: 5353},
		{Name: "dns-tcp", Protocol: "TCP", Port: 5353},
		{Name: "zero", Protocol: "TCP", Port: 9000},
		{Name: "sctp", Protocol: "SCTP", Port: 9001},
	}
}

// propertyBase is what every sequence starts from: the namespace and the
// nodes.
func propertyBase() []kubestate.Op {
	node := func(name, podCIDR, ip string) kubestate.Object {
		return &kubestate.Node{Name: name, PodCIDRs: []string{podCIDR}, Addresses: []kubestate.NodeAddress{{Type: "InternalIP", Address: ip}}}
	}
	return []kubestate.Op{
		kubestate.PutOp(&kubestate.Namespace{Name: "shop"}),
		kubestate.PutOp(node("node-1", "10.1.1.0/24", "192.168.56.101")),
		kubestate.PutOp(node("node-2", "10.1.2.0/24", "192.168.56.102")),
	}
}

// propertyAction draws one action, does it and describes it.
func propertyAction(rt *rapid.T, h *harness) string {
	switch rapid.IntRange(0, 11).Draw(rt, "kind") {
	case 0, 1:
		svc := drawService(rt, rapid.SampledFrom(propertyServices()).Draw(rt, "service"))
		h.apply([]kubestate.Op{kubestate.PutOp(svc)})
		return fmt.Sprintf("put service %+v", *svc)
	case 2:
		name := rapid.SampledFrom(propertyServices()).Draw(rt, "service")
		h.apply([]kubestate.Op{kubestate.DeleteOp(kubestate.Key{Resource: kubestate.ResService, Namespace: "shop", Name: name})})
		return "delete service " + name
	case 3, 4, 5:
		sl := drawSlice(rt, drawSliceName(rt))
		h.apply([]kubestate.Op{kubestate.PutOp(sl)})
		return fmt.Sprintf("put slice %s %+v", sl.Name, sl.Endpoints)
	case 6:
		name := drawSliceName(rt)
		h.apply([]kubestate.Op{kubestate.DeleteOp(kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: "shop", Name: name})})
		return "delete slice " + name
	case 7:
		p := rapid.SampledFrom(propertyPods()).Draw(rt, "pod")
		if rapid.Bool().Draw(rt, "pod exists") {
			h.apply([]kubestate.Op{kubestate.PutOp(p.object())})
			return "put pod " + p.name
		}
		h.apply([]kubestate.Op{kubestate.DeleteOp(p.object().Key())})
		return "delete pod " + p.name
	case 8:
		h.restartAgent()
		return "restart agent"
	case 9:
		h.vpp.Restart()
		return "restart VPP"
	default:
		return setPropertyFaults(rt, h)
	}
}

func setPropertyFaults(rt *rapid.T, h *harness) string {
	rate := rapid.SampledFrom([]float64{0, 0.1, 0.3, 0.5}).Draw(rt, "fault rate")
	h.setFaults(rate, rapid.Uint64().Draw(rt, "fault seed"))
	return fmt.Sprintf("faults %g", rate)
}

func (p propertyPod) object() *kubestate.Pod {
	return &kubestate.Pod{Namespace: "shop", Name: p.name, NodeName: "node-1", IPs: []string{p.ip}, HostIP: "192.168.56.101"}
}

// drawService draws a version of the service of a name: its cluster IP
// (invalid at times), policies, affinity, ports (an invalid one at times)
// and whether it claims the external IP every service may claim.
func drawService(rt *rapid.T, name string) *kubestate.Service {
	idx := slices.Index(propertyServices(), name)
	svc := &kubestate.Service{
		Namespace:             "shop",
		Name:                  name,
		Type:                  "ClusterIP",
		ClusterIPs:            []string{fmt.Sprintf("10.96.1.%d", idx+1)},
		ExternalTrafficPolicy: rapid.SampledFrom([]string{"Cluster", "Local"}).Draw(rt, "external policy"),
		InternalTrafficPolicy: rapid.SampledFrom([]string{"Cluster", "Local"}).Draw(rt, "internal policy"),
		SessionAffinity:       "None",
		Created:               time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(rapid.IntRange(0, 1).Draw(rt, "age")) * time.Hour),
	}
	if rapid.IntRange(0, 7).Draw(rt, "bad cluster IP") == 0 {
		svc.ClusterIPs = []string{fmt.Sprintf("10.96.1.%d", 300+idx)}
	}
	if rapid.Bool().Draw(rt, "external IP") {
		svc.ServiceRare = &kubestate.ServiceRare{ExternalIPs: []string{"198.51.100.7"}}
	}
	if rapid.Bool().Draw(rt, "affinity") {
		svc.SessionAffinity = "ClientIP"
		if svc.ServiceRare == nil {
			svc.ServiceRare = new(kubestate.ServiceRare)
		}
		svc.ServiceRare.SessionAffinityTimeout = 600
	}
	ports := propertyPorts()
	for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, len(ports)-1), 1, len(ports), rapid.ID[int]).Draw(rt, "ports") {
		p := ports[i]
		if p.Name == "http" && rapid.Bool().Draw(rt, "node port") {
			svc.Type, p.NodePort = "NodePort", 30080+int32(idx)
		}
		svc.Ports = append(svc.Ports, p)
	}
	if rapid.IntRange(0, 3).Draw(rt, "bad port") == 0 {
		svc.Ports = append(svc.Ports, rapid.SampledFrom(propertyBadPorts()).Draw(rt, "which bad port"))
	}
	return svc
}

func drawSliceName(rt *rapid.T) string {
	return rapid.SampledFrom(propertyServices()).Draw(rt, "service") + rapid.SampledFrom([]string{"-a", "-b"}).Draw(rt, "slice")
}

// drawSlice draws a version of the slice of a name ("SERVICE-a" or
// "SERVICE-b"): its endpoints and their conditions.
func drawSlice(rt *rapid.T, name string) *kubestate.EndpointSlice {
	svc, _, _ := strings.Cut(name, "-")
	sl := &kubestate.EndpointSlice{
		Namespace:   "shop",
		Name:        name,
		ServiceName: svc,
		AddressType: "IPv4",
		Ports:       propertySlicePorts(),
	}
	for _, ip := range rapid.SliceOfNDistinct(rapid.SampledFrom(propertyEndpoints()), 0, 4, rapid.ID[string]).Draw(rt, "endpoints") {
		ep := kubestate.EndpointFields{Addresses: []string{ip}, NodeName: "node-" + strings.Split(ip, ".")[2]}
		switch rapid.IntRange(0, 4).Draw(rt, "condition") {
		case 0, 1, 2:
			ep.Ready, ep.Serving = true, true
		case 3:
			ep.Serving, ep.Terminating = true, true
		default:
			ep.Terminating = true
		}
		for _, p := range propertyPods() {
			if p.ip == ip {
				ep.TargetKind, ep.TargetNamespace, ep.TargetName = "Pod", "shop", p.name
			}
		}
		sl.Endpoints = append(sl.Endpoints, ep.Endpoint())
	}
	return sl
}
