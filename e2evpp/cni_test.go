package e2evpp

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The CNI cluster's services: a ClusterIP and a NodePort over the pods
// contiv-cni wired on both nodes, and a NodePort whose only backend is on
// node 2 (reached from outside through node 1, across the tunnel).
const (
	cniWebIP    = "10.96.0.50" // TCP 80 and UDP 53 → 8080: be1 be2 (node 1), be3 (node 2)
	cniNPIP     = "10.96.0.51" // NodePort cniNodePort → 8080: be1 be2 be3
	cniNP3IP    = "10.96.0.52" // NodePort cniNodePort3 → 8080: be3 only
	cniNodePort = 30090
	// cniNodePort3 is the NodePort of be3 alone.
	cniNodePort3 = 30091
	// cniLatencyCycles is how many ADD+DEL cycles of a scratch pod each
	// node runs for the latency figures.
	cniLatencyCycles = 15
)

// TestRealVPPCNI runs a cluster whose pods are all wired by contiv-cni,
// through libcni as a container runtime calls it, on real VPPs under each
// renderer (E2EVPP_RENDERERS as TestRealVPP): traffic to and between them,
// an agent restart and a VPP restart under live flows, DEL, and the
// latencies of ADD and DEL.
func TestRealVPPCNI(t *testing.T) {
	renderers := []string{"nat44", "cnat"}
	if v := os.Getenv("E2EVPP_RENDERERS"); v != "" {
		renderers = strings.Split(v, ",")
	}
	for _, r := range renderers {
		t.Run(r, func(t *testing.T) { cniScenarios(t, r) })
	}
}

func cniScenarios(t *testing.T, renderer string) {
	// Two nodes without static pods: no pod interface and no pod gateway
	// in their startup configuration; the agents make both.
	s := newSuite(t, renderer, []string{}, []string{})
	skipRefused(t, renderer)
	plugin := buildCNIPlugin(t)
	s.configHook = func(n *node, cfg string) string { return cfg + cniAgentConfig(n) }
	s.recordAs = "cni-" + renderer
	n1, n2 := s.nodes[0], s.nodes[1]
	rts := map[*node]*cniRuntime{}
	for _, n := range s.nodes {
		rts[n] = installCNI(t, plugin, n)
	}
	s.objects.load(t)
	for _, n := range s.nodes {
		n.startAgentNoWait(t)
	}
	for _, n := range s.nodes {
		n.waitReady(t, 90*time.Second)
		rts[n].waitStatus(t, 30*time.Second)
	}

	var adds, dels latencies
	wire := func(n *node, name string) *pod {
		p, d := rts[n].add(t, name)
		adds = append(adds, d)
		return p
	}
	client, be1, be2 := wire(n1, "client"), wire(n1, "be1"), wire(n1, "be2")
	be3, client2 := wire(n2, "be3"), wire(n2, "client2")
	for _, p := range []*pod{be1, be2, be3} {
		p.serve(t, backendPort)
	}
	c := s.objects
	c.put(&service{name: "web", clusterIP: cniWebIP, endpoints: eps(be1, be2, be3),
		ports: []svcPort{tcp("http", 80, backendPort), {name: "dns", protocol: "UDP", port: 53, targetPort: backendPort}}})
	np := tcp("http", 80, backendPort)
	np.nodePort = cniNodePort
	c.put(&service{name: "np", typ: "NodePort", clusterIP: cniNPIP, ports: []svcPort{np}, endpoints: eps(be1, be2, be3)})
	np3 := tcp("http", 80, backendPort)
	np3.nodePort = cniNodePort3
	c.put(&service{name: "np3", typ: "NodePort", clusterIP: cniNP3IP, ports: []svcPort{np3}, endpoints: eps(be3)})
	c.load(t)
	if d, err := time.ParseDuration(os.Getenv("E2EVPP_HOLD")); err == nil {
		t.Logf("holding the cluster for %v (E2EVPP_HOLD): vppctl -s %s", d, n1.cliSocket())
		time.Sleep(d)
	}
	warmUp(t, s)
	waitFor(t, 30*time.Second, func() (bool, string) {
		_, err := request(client.netns, "tcp", cniWebIP+":80", 2*time.Second)
		return err == nil, fmt.Sprintf("the service %s:80 does not answer client: %v", cniWebIP, err)
	})

	step := func(name string, fn func(t *testing.T, figs *[]string)) {
		t.Run(name, func(t *testing.T) {
			var figs []string
			record(t, "cni-"+name, renderer, &figs)
			fn(t, &figs)
		})
	}

	step("wired", func(t *testing.T, figs *[]string) {
		// Every pod has the address IPAM gave (the ADD result) on its eth0,
		// inside its node's pod subnet, and the agent names the same.
		for _, n := range s.nodes {
			wired, allocated := n.agent.agentPods(t)
			for _, p := range n.pods {
				key := p.namespace + "/" + p.name
				if !strings.HasPrefix(p.ip.String(), strings.TrimSuffix(n.podSubnet(), "0/24")) {
					t.Errorf("%s: ADD gave %s, outside the node's pod subnet %s", key, p.ip, n.podSubnet())
				}
				if out := ipIn(t, p.netns, "-4", "addr", "show", "dev", "eth0"); !strings.Contains(out, " "+p.ip.String()+"/32 ") {
					t.Errorf("%s: eth0 lacks %s/32 (the ADD result): %s", key, p.ip, out)
				}
				if wired[key] != p.ip || allocated[key] != p.ip {
					t.Errorf("%s: ADD gave %s; the agent's /v1/pods says %s, /v1/ipam %s", key, p.ip, wired[key], allocated[key])
				}
				if err := rts[n].check(p); err != nil {
					t.Error(err)
				}
			}
			if got := len(n.podIfaces()); got != len(n.pods) {
				t.Errorf("%s: %d pod interfaces in VPP, want %d: %v", n.name, got, len(n.pods), n.podIfaces())
			}
		}
		*figs = append(*figs, fmt.Sprintf("client %s be1 %s be2 %s be3 %s client2 %s", client.ip, be1.ip, be2.ip, be3.ip, client2.ip))
	})
	step("clusterip", func(t *testing.T, figs *[]string) {
		for _, from := range []*pod{client, client2} {
			for _, proto := range []struct{ p, port string }{{"tcp", "80"}, {"udp", "53"}} {
				seen, _ := spread(t, from.netns, proto.p, cniWebIP+":"+proto.port, 30)
				if !sameKeys(seen, "be1", "be2", "be3") {
					t.Errorf("%s %s:%s from %s: backends %v, want be1 be2 be3", proto.p, cniWebIP, proto.port, from.name, seen)
				}
				*figs = append(*figs, fmt.Sprintf("%s from %s %v", proto.p, from.name, seen))
			}
		}
	})
	step("pod-to-pod-vxlan", func(t *testing.T, figs *[]string) {
		for _, c := range []struct{ from, to *pod }{{client, be3}, {client2, be1}} {
			a, err := request(c.from.netns, "tcp", fmt.Sprintf("%s:%d", c.to.ip, backendPort), 3*time.Second)
			if err != nil || a.backend != c.to.name || a.source != c.from.ip.String() {
				t.Errorf("%s → %s directly across the tunnel: %+v %v (want %s seeing %s)", c.from.name, c.to.name, a, err, c.to.name, c.from.ip)
			}
		}
	})
	step("nodeport", func(t *testing.T, figs *[]string) {
		seen, _ := spread(t, outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), cniNodePort), 30)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("NodePort %s:%d from outside: backends %v, want be1 be2 be3", n1.ip(), cniNodePort, seen)
		}
		seen3, _ := spread(t, outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), cniNodePort3), 10)
		if !sameKeys(seen3, "be3") {
			t.Errorf("NodePort %s:%d (be3 on node 2) from outside: backends %v, want be3", n1.ip(), cniNodePort3, seen3)
		}
		*figs = append(*figs, fmt.Sprintf("%v; be3 only %v", seen, seen3))
	})
	step("agent-restart", func(t *testing.T, figs *[]string) {
		before := n1.podIfaces()
		fs := openFlows(t, client.netns, "tcp", cniWebIP+":80", 12)
		us := openFlows(t, client.netns, "udp", cniWebIP+":53", 6)
		n1.agent.stop(t)
		n1.startAgent(t)
		time.Sleep(2 * time.Second)
		w := n1.agent.writes(t)
		if w != 0 {
			t.Errorf("agent restart wrote %d times to a VPP that held the pods and services, want 0", w)
		}
		if n, which := cuts(append(fs, us...)); n != 0 {
			t.Errorf("agent restart cut %d flows (first backends %v), want 0", n, which)
		}
		if after := n1.podIfaces(); !slices.Equal(after, before) {
			t.Errorf("agent restart: pod interfaces %v, before %v", after, before)
		}
		for _, p := range n1.pods {
			if err := rts[n1].check(p); err != nil {
				t.Error(err)
			}
		}
		*figs = append(*figs, fmt.Sprintf("writes %d, flows cut 0/%d", w, len(fs)+len(us)))
	})
	step("vpp-restart", func(t *testing.T, figs *[]string) {
		before := n1.podIfaces()
		// Flows through the service and straight to a pod, counted (not
		// asserted: VPP's sessions and the pods' interfaces go with it).
		svcFlows := append(openFlows(t, client.netns, "tcp", cniWebIP+":80", 6), openFlows(t, client.netns, "udp", cniWebIP+":53", 6)...)
		direct := openFlows(t, client.netns, "tcp", fmt.Sprintf("%s:%d", be1.ip, backendPort), 6)
		mark := n1.logMark()
		n1.stopVPP(t)
		start := time.Now()
		n1.startVPP(t)
		up := time.Since(start)
		// The agent turns ready only once every pod's interface is back:
		// at that moment VPP holds them all and each pod is reached at once.
		n1.waitReady(t, 60*time.Second)
		back := time.Since(start)
		if after := n1.podIfaces(); !slices.Equal(after, before) {
			t.Errorf("the agent ready after a VPP restart: pod interfaces %v, want %v", after, before)
		}
		for _, p := range []*pod{be1, be2} {
			if a, err := request(client.netns, "tcp", fmt.Sprintf("%s:%d", p.ip, backendPort), 3*time.Second); err != nil || a.backend != p.name {
				t.Errorf("client → %s at once after the VPP restart: %+v %v", p.name, a, err)
			}
		}
		for _, p := range n1.pods {
			if err := rts[n1].check(p); err != nil {
				t.Error(err)
			}
		}
		// Services are reprogrammed too: every backend, both nodes' pods.
		waitFor(t, 20*time.Second, func() (bool, string) {
			_, err := request(client.netns, "tcp", cniWebIP+":80", 2*time.Second)
			return err == nil, fmt.Sprintf("%s:80 after the VPP restart: %v", cniWebIP, err)
		})
		seen, _ := spread(t, client.netns, "tcp", cniWebIP+":80", 30)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("after a VPP restart: backends %v, want be1 be2 be3", seen)
		}
		seen, _ = spread(t, outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), cniNodePort), 30)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("NodePort after a VPP restart: backends %v, want be1 be2 be3", seen)
		}
		if r := n1.refusals(mark); len(r) > 0 {
			t.Errorf("after a VPP restart VPP refused %d calls, want 0; first: %s", len(r), r[0])
		}
		cutSvc, _ := cuts(svcFlows)
		cutDirect, _ := cuts(direct)
		*figs = append(*figs, fmt.Sprintf("VPP up after %v, agent ready (%d pods back) after %v; flows cut: through the service %d/%d, pod to pod %d/%d",
			up.Round(time.Millisecond), len(before), back.Round(time.Millisecond), cutSvc, len(svcFlows), cutDirect, len(direct)))
	})
	step("del", func(t *testing.T, figs *[]string) {
		// As Kubernetes: be2 leaves the services, then its sandbox goes.
		for _, name := range []string{"web", "np"} {
			sv := c.services[name]
			sv.endpoints = slices.DeleteFunc(sv.endpoints, func(e endpoint) bool { return e.pod == be2 })
		}
		c.load(t)
		before := n1.podIfaces()
		d, err := rts[n1].del(be2)
		if err != nil {
			t.Fatal(err)
		}
		dels = append(dels, d)
		after := n1.podIfaces()
		if len(after) != len(before)-1 {
			t.Errorf("DEL of be2: pod interfaces %v, before %v; want one fewer", after, before)
		}
		for _, name := range before {
			if !slices.Contains(after, name) {
				// The agent's end of the veth goes with the VPP interface.
				if err := exec.Command("ip", "-n", n1.netns, "link", "show", strings.TrimPrefix(name, "host-")).Run(); err == nil {
					t.Errorf("DEL of be2: the veth end %s is still in the node", strings.TrimPrefix(name, "host-"))
				}
			}
		}
		wired, allocated := n1.agent.agentPods(t)
		if ip, ok := wired["default/be2"]; ok {
			t.Errorf("DEL of be2: /v1/pods still lists it (%s)", ip)
		}
		if ip, ok := allocated["default/be2"]; ok {
			t.Errorf("DEL of be2: IPAM still holds its address %s", ip)
		}
		if _, err := rts[n1].del(be2); err != nil {
			t.Errorf("DEL again: %v, want success", err)
		}
		rts[n1].forget(t, be2)
		c.load(t)
		seen, _ := spread(t, client.netns, "tcp", cniWebIP+":80", 20)
		if !sameKeys(seen, "be1", "be3") {
			t.Errorf("after be2's DEL: backends %v, want be1 be3", seen)
		}
		*figs = append(*figs, fmt.Sprintf("DEL %v", d.Round(100*time.Microsecond)))
	})
	step("add-del-latency", func(t *testing.T, figs *[]string) {
		// Scratch pods wired and unwired one at a time on each node: each
		// reached from the client once wired and its Pod object, with the
		// ADD's address, loaded (as kubelet reports it and the reflector
		// mirrors it: the cnat renderer puts a pod's interface in its
		// source-NAT tables on the Pod object, and a remote pod without
		// them is not reached), each address freed once deleted.
		var reach latencies
		for _, n := range s.nodes {
			for i := range cniLatencyCycles {
				p, d := rts[n].add(t, fmt.Sprintf("scratch-%d", i))
				adds = append(adds, d)
				p.serve(t, backendPort)
				start := time.Now()
				c.load(t)
				waitFor(t, 15*time.Second, func() (bool, string) {
					a, err := request(client.netns, "tcp", fmt.Sprintf("%s:%d", p.ip, backendPort), time.Second)
					return err == nil && a.backend == p.name, fmt.Sprintf("client → %s (%s) on %s: %+v %v", p.name, p.ip, n.name, a, err)
				})
				reach = append(reach, time.Since(start))
				d, err := rts[n].del(p)
				if err != nil {
					t.Fatal(err)
				}
				dels = append(dels, d)
				rts[n].forget(t, p)
				c.load(t)
				if _, allocated := n.agent.agentPods(t); allocated["default/"+p.name].IsValid() {
					t.Errorf("%s on %s: IPAM still holds %s after DEL", p.name, n.name, p.ip)
				}
			}
		}
		*figs = append(*figs, fmt.Sprintf("ADD %v; DEL %v; reached after its Pod object's load %v", adds, dels, reach))
		t.Logf("real VPP %s, %s: CNI ADD through libcni %v; CNI DEL %v; a scratch pod reached from the client after its Pod object's load %v", env.version, renderer, adds, dels, reach)
	})
}
