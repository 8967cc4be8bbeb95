package e2evpp

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The cluster every scenario starts from. Node 1 runs the client pod and
// backends be1, be2; node 2 runs be3 and a second client.
const (
	webIP       = "10.96.0.20"   // ClusterIP: TCP 80 and UDP 53 → 8080, be1 be2 be3
	npIP        = "10.96.0.21"   // NodePort 30080 → 8080, be1 be3
	lbIP        = "203.0.113.20" // LoadBalancer, externalTrafficPolicy Local, be1 (node 1) be3 (node 2)
	lbCIP       = "10.96.0.22"
	extIP       = "203.0.113.10" // externalIPs, be3 only
	extCIP      = "10.96.0.23"
	itpIP       = "10.96.0.24"   // internalTrafficPolicy Local, be1 be3
	affIP       = "10.96.0.25"   // ClientIP affinity, be1 be2 be3
	emptyIP     = "10.96.0.26"   // no endpoints
	mpIP        = "10.96.0.27"   // two ports: 80 → 8080, 81 → 8081, be2
	pairIP      = "10.96.0.29"   // TCP 80 and UDP 53 → 8080, be1 be2
	srIP        = "203.0.113.30" // LoadBalancer open to internetIP's /24 only, be1 be3
	srCIP       = "10.96.0.30"
	srNodePort  = 30083
	lb1IP       = "203.0.113.21" // LoadBalancer, externalTrafficPolicy Local, be1 (node 1) only
	lb1CIP      = "10.96.0.31"
	lbHC        = 32100        // healthCheckNodePort of lb
	lb1HC       = 32101        // healthCheckNodePort of lb1
	unusedIP    = "10.96.0.99" // no service
	backendPort = 8080
	nodePort    = 30080 // np: be1 be2 be3
	nodePort2   = 30082 // np2: be1 be3
	np2IP       = "10.96.0.28"
)

func tcp(name string, port, target int) svcPort {
	return svcPort{name: name, protocol: "TCP", port: port, targetPort: target}
}

// eps are the endpoints of pods ps.
func eps(ps ...*pod) []endpoint {
	e := make([]endpoint, 0, len(ps))
	for _, p := range ps {
		e = append(e, endpoint{pod: p})
	}
	return e
}

// baseServices puts the scenarios' services.
func (s *suite) baseServices() {
	n1, n2 := s.nodes[0], s.nodes[1]
	be1, be2, be3 := n1.pod("be1"), n1.pod("be2"), n2.pod("be3")
	c := s.objects
	c.put(&service{name: "web", clusterIP: webIP, endpoints: eps(be1, be2, be3),
		ports: []svcPort{tcp("http", 80, backendPort), {name: "dns", protocol: "UDP", port: 53, targetPort: backendPort}}})
	np := tcp("http", 80, backendPort)
	np.nodePort = nodePort
	c.put(&service{name: "np", typ: "NodePort", clusterIP: npIP, ports: []svcPort{np}, endpoints: eps(be1, be2, be3)})
	np2 := tcp("http", 80, backendPort)
	np2.nodePort = nodePort2
	c.put(&service{name: "np2", typ: "NodePort", clusterIP: np2IP, ports: []svcPort{np2}, endpoints: eps(be1, be3)})
	lb := tcp("http", 80, backendPort)
	lb.nodePort = 30081
	c.put(&service{name: "lb", typ: "LoadBalancer", clusterIP: lbCIP, lbIP: lbIP, etp: "Local", hcNodePort: lbHC, ports: []svcPort{lb}, endpoints: eps(be1, be3)})
	lb1 := tcp("http", 80, backendPort)
	lb1.nodePort = 30084
	c.put(&service{name: "lb1", typ: "LoadBalancer", clusterIP: lb1CIP, lbIP: lb1IP, etp: "Local", hcNodePort: lb1HC, ports: []svcPort{lb1}, endpoints: eps(be1)})
	c.put(&service{name: "ext", clusterIP: extCIP, externalIPs: []string{extIP}, ports: []svcPort{tcp("http", 80, backendPort)}, endpoints: eps(be3)})
	c.put(&service{name: "pair", clusterIP: pairIP, endpoints: eps(be1, be2),
		ports: []svcPort{tcp("http", 80, backendPort), {name: "dns", protocol: "UDP", port: 53, targetPort: backendPort}}})
	sr := tcp("http", 80, backendPort)
	sr.nodePort = srNodePort
	c.put(&service{name: "sr", typ: "LoadBalancer", clusterIP: srCIP, lbIP: srIP, sourceRange: []string{"198.51.100.0/24"},
		ports: []svcPort{sr}, endpoints: eps(be1, be3)})
	c.put(&service{name: "itp", clusterIP: itpIP, itp: "Local", ports: []svcPort{tcp("http", 80, backendPort)}, endpoints: eps(be1, be3)})
	c.put(&service{name: "aff", clusterIP: affIP, affinity: true, ports: []svcPort{tcp("http", 80, backendPort)}, endpoints: eps(be1, be2, be3)})
	c.put(&service{name: "empty", clusterIP: emptyIP, ports: []svcPort{tcp("http", 80, backendPort)}})
	c.put(&service{name: "mp", clusterIP: mpIP, ports: []svcPort{tcp("a", 80, backendPort), tcp("b", 81, backendPort+1)}, endpoints: eps(be2)})
}

// pod finds a pod of the node by name.
func (n *node) pod(name string) *pod {
	for _, p := range n.pods {
		if p.name == name {
			return p
		}
	}
	panic("no pod " + name + " on " + n.name)
}

// TestRealVPP runs every scenario against a real VPP under each renderer.
// E2EVPP_RENDERERS (comma-separated) runs only those renderers. On a
// release the agent refuses a renderer on (cnatRefusedReleases: none
// today) the run checks the refusal instead; E2EVPP_ALLOW_UNSUPPORTED=1
// runs the scenarios anyway (vpp.allowUnsupported).
func TestRealVPP(t *testing.T) {
	renderers := []string{"nat44", "cnat"}
	if v := os.Getenv("E2EVPP_RENDERERS"); v != "" {
		renderers = strings.Split(v, ",")
	}
	for _, r := range renderers {
		t.Run(r, func(t *testing.T) { scenarios(t, r) })
	}
}

func scenarios(t *testing.T, renderer string) {
	s := newSuite(t, renderer, []string{"client", "be1", "be2"}, []string{"be3", "client2"})
	n1, n2 := s.nodes[0], s.nodes[1]
	for _, n := range s.nodes {
		for _, p := range n.pods {
			if strings.HasPrefix(p.name, "be") {
				p.serve(t, backendPort)
				p.serve(t, backendPort+1)
			}
		}
	}
	serveIn(t, outsideNS, "outside", 9090)
	s.baseServices()
	s.objects.load(t)
	start := time.Now()
	for _, n := range s.nodes {
		n.startAgentNoWait(t)
	}
	if refused(renderer) {
		refusedCNAT(t, s)
		return
	}
	for _, n := range s.nodes {
		n.waitReady(t, 90*time.Second)
	}
	t.Logf("both agents ready %v after start", time.Since(start).Round(time.Millisecond))
	if d, err := time.ParseDuration(os.Getenv("E2EVPP_HOLD")); err == nil {
		t.Logf("holding the cluster for %v (E2EVPP_HOLD): vppctl -s %s", d, n1.cliSocket())
		time.Sleep(d)
	}
	client := n1.pod("client").netns
	warmUp(t, s)

	step := func(name string, fn func(t *testing.T, figs *[]string)) {
		t.Run(name, func(t *testing.T) {
			var figs []string
			record(t, name, renderer, &figs)
			fn(t, &figs)
		})
	}

	step("clusterip-tcp-udp", func(t *testing.T, figs *[]string) {
		for _, proto := range []struct{ p, port string }{{"tcp", "80"}, {"udp", "53"}} {
			seen, _ := spread(t, client, proto.p, webIP+":"+proto.port, 30)
			if !sameKeys(seen, "be1", "be2", "be3") {
				t.Errorf("%s %s:%s from node 1: backends %v, want be1 be2 be3", proto.p, webIP, proto.port, seen)
			}
			*figs = append(*figs, fmt.Sprintf("%s %v", proto.p, seen))
		}
		seen, _ := spread(t, n2.pod("client2").netns, "tcp", webIP+":80", 30)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("tcp %s:80 from node 2: backends %v, want be1 be2 be3", webIP, seen)
		}
	})
	step("multi-port", func(t *testing.T, figs *[]string) {
		for _, port := range []string{"80", "81"} {
			a, err := request(client, "tcp", mpIP+":"+port, 3*time.Second)
			if err != nil || a.backend != "be2" {
				t.Errorf("%s:%s: %+v %v, want be2", mpIP, port, a, err)
			}
		}
	})
	step("nodeport", func(t *testing.T, figs *[]string) {
		seen, _ := spread(t, outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), nodePort), 30)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("NodePort %s:%d from outside: backends %v, want be1 be2 be3", n1.ip(), nodePort, seen)
		}
		*figs = append(*figs, fmt.Sprintf("%v", seen))
	})
	step("nodeport-two-backends", func(t *testing.T, figs *[]string) {
		// VPP 25.02's NAT44-ED draws a load-balanced mapping's pick and the
		// twice-NAT port from one linear congruential generator
		// (nat44_ed.c: random_u32 (&sm->random_seed) % sum;
		// snat_random_port), whose low bit alternates: with two draws per
		// connection and an even sum, one client's connections from outside
		// always land on the same backend. cnat hashes the flow instead.
		seen, _ := spread(t, outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), nodePort2), 20)
		want := 2
		if renderer == "nat44" {
			want = 1
		}
		if len(seen) != want {
			t.Errorf("NodePort %s:%d (two backends) from one outside client: backends %v; want %d backend(s) (docs/real-vpp.md: if this changed, VPP changed: update the docs)", n1.ip(), nodePort2, seen, want)
		}
		*figs = append(*figs, fmt.Sprintf("%v", seen))
	})
	step("externalip", func(t *testing.T, figs *[]string) {
		seen, _ := spread(t, outsideNS, "tcp", extIP+":80", 10)
		if !sameKeys(seen, "be3") {
			t.Errorf("external IP %s:80 from outside: backends %v, want be3", extIP, seen)
		}
	})
	step("loadbalancer-etp-local", func(t *testing.T, figs *[]string) {
		seen, all := spread(t, outsideNS, "tcp", lbIP+":80", 20)
		if !sameKeys(seen, "be1") {
			t.Errorf("LB %s:80 (Local) through node 1: backends %v, want be1 only", lbIP, seen)
		}
		for _, a := range all {
			if a.source != outsideIP {
				t.Errorf("LB (Local): the backend saw source %s, want the client's %s", a.source, outsideIP)
				break
			}
		}
	})
	step("loadbalancer-source-ranges", func(t *testing.T, figs *[]string) {
		// Under nat44, loadBalancerSourceRanges hold for the LoadBalancer IP
		// only (VPP's ACL on the uplink): a source inside them is served, one
		// outside is dropped; the service's NodePort stays open to every
		// source. cnat translates before any input ACL: the agent says the
		// ranges are not enforced (/v1/skipped), and every source is served.
		if _, err := requestFrom(outsideNS, internetIP, "tcp", srIP+":80", 3*time.Second); err != nil {
			t.Errorf("LB %s:80 from %s (inside the source ranges): %v, want an answer", srIP, internetIP, err)
		}
		want := "timeout"
		if renderer == "cnat" {
			want = "answered"
			var skipped []map[string]any
			if err := n1.agent.get("/v1/skipped", &skipped); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(skipped); !strings.Contains(string(b), "198.51.100.0/24 NOT enforced") {
				t.Errorf("cnat: /v1/skipped does not say the source ranges are not enforced: %s", b)
			}
		}
		got, d := refusal(outsideNS, "tcp", srIP+":80")
		if got != want {
			t.Errorf("LB %s:80 from %s (outside the source ranges): %s after %v, want %s", srIP, outsideIP, got, d, want)
		}
		if _, err := request(outsideNS, "tcp", fmt.Sprintf("%s:%d", n1.ip(), srNodePort), 3*time.Second); err != nil {
			t.Errorf("NodePort %s:%d of the ranged service from %s: %v, want an answer (ranges hold for the LB IP only)", n1.ip(), srNodePort, outsideIP, err)
		}
		*figs = append(*figs, fmt.Sprintf("outside the ranges: %s", got))
	})
	step("health-checks", func(t *testing.T, figs *[]string) {
		// A load balancer's checks reach each node's agent through VPP
		// (nodeIP:healthCheckNodePort and nodeIP:10256, brought to the host
		// interconnect): 200 where the service has a local endpoint, 503
		// where it has none; the proxy's /healthz turns 503 while the node
		// carries the autoscaler's drain taint.
		outside := nsClient(outsideNS)
		status := func(url string) string {
			resp, err := outside.Get(url)
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			return strconv.Itoa(resp.StatusCode)
		}
		for _, c := range []struct {
			n    *node
			port int
			want string
		}{{n1, lbHC, "200"}, {n2, lbHC, "200"}, {n1, lb1HC, "200"}, {n2, lb1HC, "503"}, {n1, 10256, "200"}, {n2, 10256, "200"}} {
			url := fmt.Sprintf("http://%s:%d/", c.n.ip(), c.port)
			if c.port == 10256 {
				url += "healthz"
			}
			if got := status(url); got != c.want {
				t.Errorf("GET %s from outside: %s, want %s", url, got, c.want)
			}
		}
		drain := func(on bool) {
			s.objects.draining[n1.name] = on
			s.objects.load(t)
		}
		url := fmt.Sprintf("http://%s:10256/healthz", n1.ip())
		drain(true)
		defer drain(false)
		start := time.Now()
		waitFor(t, 10*time.Second, func() (bool, string) {
			got := status(url)
			return got == "503", "GET " + url + " on a node tainted for deletion: " + got + ", want 503"
		})
		*figs = append(*figs, fmt.Sprintf("drain taint seen in %v", time.Since(start).Round(time.Millisecond)))
		drain(false)
		waitFor(t, 10*time.Second, func() (bool, string) {
			got := status(url)
			return got == "200", "GET " + url + " once the taint is gone: " + got + ", want 200"
		})
	})
	step("itp-local", func(t *testing.T, figs *[]string) {
		seen, _ := spread(t, client, "tcp", itpIP+":80", 20)
		if !sameKeys(seen, "be1") {
			t.Errorf("ITP Local from node 1: backends %v, want be1 only", seen)
		}
		seen, _ = spread(t, n2.pod("client2").netns, "tcp", itpIP+":80", 20)
		if !sameKeys(seen, "be3") {
			t.Errorf("ITP Local from node 2: backends %v, want be3 only", seen)
		}
	})
	step("clientip-affinity", func(t *testing.T, figs *[]string) {
		seen, _ := spread(t, client, "tcp", affIP+":80", 20)
		if len(seen) != 1 {
			t.Errorf("ClientIP affinity: one client reached %v, want one backend", seen)
		}
	})
	step("hairpin", func(t *testing.T, figs *[]string) {
		seen, all := spread(t, n1.pod("be1").netns, "tcp", webIP+":80", 30)
		if seen["be1"] == 0 {
			t.Errorf("hairpin: be1 never reached itself through %s: %v", webIP, seen)
		}
		for _, a := range all {
			if a.backend == "be1" && a.source == n1.pod("be1").ip.String() {
				t.Errorf("hairpin: be1 saw its own address as the source (not rewritten)")
				break
			}
		}
	})
	step("pod-to-pod-vxlan", func(t *testing.T, figs *[]string) {
		a, err := request(client, "tcp", n2.pod("be3").ip.String()+":8080", 3*time.Second)
		if err != nil || a.backend != "be3" || a.source != n1.pod("client").ip.String() {
			t.Errorf("client → be3 directly across the tunnel: %+v %v (want be3 seeing %s)", a, err, n1.pod("client").ip)
		}
	})
	step("snat-to-outside", func(t *testing.T, figs *[]string) {
		a, err := request(client, "tcp", internetIP+":9090", 3*time.Second)
		if err != nil || a.source != n1.ip() {
			t.Errorf("pod → outside: %+v %v (want the node's address %s as the source)", a, err, n1.ip())
		}
	})
	step("verdicts", func(t *testing.T, figs *[]string) {
		// Under cnat the service's translations put its ClusterIP in the FIB
		// with cnat's source, which outranks the API's: the reject route of
		// the address is hidden and a port it does not define is dropped
		// (measured), where kube-proxy rejects.
		undefinedPort := "refused"
		if renderer == "cnat" {
			undefinedPort = "timeout"
		}
		for _, c := range []struct {
			what, proto, addr, want string
		}{
			{"ClusterIP port without endpoints", "tcp", emptyIP + ":80", "refused"},
			{"ClusterIP port without endpoints", "udp", emptyIP + ":80", "refused"},
			{"port the service does not define", "tcp", webIP + ":81", undefinedPort},
			{"unallocated service address", "tcp", unusedIP + ":80", "timeout"},
		} {
			// VPP sends at most one ICMP error per source and destination
			// in a short while (icmp4.c's throttle: a second probe 2 ms
			// after the first got none): probes are spaced.
			time.Sleep(time.Second)
			got, d := refusal(client, c.proto, c.addr)
			if got != c.want {
				t.Errorf("%s (%s %s): %s after %v, want %s", c.what, c.proto, c.addr, got, d, c.want)
			}
			*figs = append(*figs, fmt.Sprintf("%s %s: %s in %v", c.proto, c.addr, got, d.Round(100*time.Microsecond)))
		}
	})
	step("agent-restart", func(t *testing.T, figs *[]string) {
		fs := openFlows(t, client, "tcp", webIP+":80", 12)
		us := openFlows(t, client, "udp", webIP+":53", 6)
		n1.agent.stop(t)
		n1.startAgent(t)
		time.Sleep(2 * time.Second)
		w := n1.agent.writes(t)
		if w != 0 {
			t.Errorf("agent restart wrote %d times to a VPP that held the right state, want 0", w)
		}
		if n, which := cuts(append(fs, us...)); n != 0 {
			t.Errorf("agent restart cut %d flows (first backends %v), want 0", n, which)
		}
		*figs = append(*figs, fmt.Sprintf("writes %d, flows cut 0/%d", w, len(fs)+len(us)))
	})
	step("endpoint-add-remove", func(t *testing.T, figs *[]string) {
		removeAndAddBack(t, s, renderer, figs, "web", webIP, "be3")
	})
	step("two-to-one-and-back", func(t *testing.T, figs *[]string) {
		// 2→1 and 1→2 backends: NAT44-ED's mapping keeps a placeholder local
		// rather than being deleted (FACTS §3), so the staying backend's
		// flows survive both ways.
		removeAndAddBack(t, s, renderer, figs, "pair", pairIP, "be2")
	})
	step("unrelated-change-and-resync", func(t *testing.T, figs *[]string) {
		fs := openFlows(t, client, "tcp", webIP+":80", 12)
		w0 := n1.agent.writes(t)
		s.objects.put(&service{name: "other", clusterIP: "10.96.0.40", ports: []svcPort{tcp("http", 80, backendPort)},
			endpoints: []endpoint{{pod: n1.pod("be1")}}})
		s.objects.load(t)
		time.Sleep(3 * time.Second)
		if n, which := cuts(fs); n != 0 {
			t.Errorf("another service's change cut %d flows (%v), want 0", n, which)
		}
		*figs = append(*figs, fmt.Sprintf("unrelated service: %d writes, cut 0", n1.agent.writes(t)-w0))
	})
	step("periodic-resync", func(t *testing.T, figs *[]string) {
		// The agents resync every 3 s (agentConfig): three of them under
		// live flows must write nothing and cut nothing.
		fs := openFlows(t, client, "tcp", webIP+":80", 12)
		us := openFlows(t, client, "udp", webIP+":53", 6)
		var before, after struct {
			Controller struct {
				Resyncs int `json:"resyncs"`
			} `json:"controller"`
		}
		if err := n1.agent.get("/v1/status", &before); err != nil {
			t.Fatal(err)
		}
		w0 := n1.agent.writes(t)
		time.Sleep(10 * time.Second)
		if err := n1.agent.get("/v1/status", &after); err != nil {
			t.Fatal(err)
		}
		w := n1.agent.writes(t) - w0
		if w != 0 {
			t.Errorf("periodic resyncs wrote %d times to a VPP that held the right state, want 0", w)
		}
		if n, which := cuts(append(fs, us...)); n != 0 {
			t.Errorf("periodic resyncs cut %d flows (first backends %v), want 0", n, which)
		}
		*figs = append(*figs, fmt.Sprintf("resyncs %d→%d, writes %d, flows cut 0/%d", before.Controller.Resyncs, after.Controller.Resyncs, w, len(fs)+len(us)))
	})
	step("one-owner", func(t *testing.T, figs *[]string) {
		// A second agent on node 1's VPP (as another node) must refuse it.
		// Under runDir: a run stopped midway leaves no agent that removeLeftovers misses.
		other := &node{s: s, id: 3, name: "node-3", netns: n1.netns, dir: filepath.Join(runDir(), "n3"), sock: n1.apiSocket()}
		if err := os.MkdirAll(other.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w0 := n1.agent.writes(t)
		other.startAgentNoWait(t)
		defer other.agent.stop(t)
		time.Sleep(5 * time.Second)
		var st struct {
			Ready    bool     `json:"ready"`
			NotReady []string `json:"notReady"`
		}
		if err := other.agent.get("/v1/status", &st); err != nil {
			t.Fatal(err)
		}
		if st.Ready {
			t.Errorf("a second agent on node 1's VPP says it is ready")
		}
		if w := other.agent.writes(t); w != 0 {
			t.Errorf("a second agent on node 1's VPP wrote %d times, want 0", w)
		}
		if w := n1.agent.writes(t) - w0; w != 0 {
			t.Errorf("node 1's own agent wrote %d times while the second agent tried its VPP, want 0", w)
		}
		*figs = append(*figs, fmt.Sprintf("second agent: %v", st.NotReady))
	})
	step("vpp-restart", func(t *testing.T, figs *[]string) {
		mark := n1.logMark()
		n1.stopVPP(t)
		start := time.Now()
		n1.startVPP(t)
		up := time.Since(start)
		n1.waitReady(t, 60*time.Second)
		back := time.Since(start)
		seen, _ := spread(t, client, "tcp", webIP+":80", 20)
		if !sameKeys(seen, "be1", "be2", "be3") {
			t.Errorf("after a VPP restart: backends %v, want be1 be2 be3", seen)
		}
		if r := n1.refusals(mark); len(r) > 0 {
			t.Errorf("after a VPP restart VPP refused %d calls, want 0; first: %s", len(r), r[0])
		}
		*figs = append(*figs, fmt.Sprintf("interfaces after %v, agent ready after %v", up.Round(time.Millisecond), back.Round(time.Millisecond)))
	})
}

// removeAndAddBack removes backend from service svc (address ip) under
// live TCP and UDP flows, checks what its own flows get
// (removedBackendFate) and that no other flow is cut, then adds it back
// under new flows and checks that none is cut.
func removeAndAddBack(t *testing.T, s *suite, renderer string, figs *[]string, svc, ip, backend string) {
	t.Helper()
	client := s.nodes[0].pod("client").netns
	tcpFlows := openFlowsOn(t, client, "tcp", ip+":80", 24, backend, 2)
	udpFlows := openFlowsOn(t, client, "udp", ip+":53", 12, backend, 2)
	sv := s.objects.services[svc]
	keep := slices.Clone(sv.endpoints)
	sv.endpoints = slices.DeleteFunc(slices.Clone(keep), func(e endpoint) bool { return e.pod.name == backend })
	s.objects.load(t)
	time.Sleep(4 * time.Second)
	want := removedBackendFate(renderer, env.version)
	for _, c := range []struct {
		proto string
		fs    []*flow
	}{{"tcp", tcpFlows}, {"udp", udpFlows}} {
		kept, ended, others := fateOf(c.fs, backend)
		if others != 0 {
			t.Errorf("removing %s cut or moved %d %s flows of other backends, want 0", backend, others, c.proto)
		}
		if kept+ended == 0 {
			t.Errorf("no %s flow was on %s: nothing measured (%v)", c.proto, backend, firstBackends(c.fs))
		}
		got := "kept"
		if ended > 0 {
			got = "ended"
			if kept > 0 {
				got = "mixed"
			}
		}
		switch want[c.proto] {
		case whenScanned:
			// Any of them may end, but only as a re-balanced flow does:
			// a dropped one would time out.
			for _, f := range c.fs {
				if why := unbalancedEnd(f, backend); why != "" {
					t.Errorf("removing %s under %s on VPP %s: a %s flow on it ended without being re-balanced: %s", backend, renderer, env.version, c.proto, why)
				}
			}
		default:
			if got != want[c.proto] {
				t.Errorf("removing %s under %s on VPP %s: its %s flows %s (kept %d, ended %d), want %s (docs/real-vpp.md)",
					backend, renderer, env.version, c.proto, got, kept, ended, want[c.proto])
			}
		}
		*figs = append(*figs, fmt.Sprintf("remove %s: %s on it kept %d ended %d, others cut %d", backend, c.proto, kept, ended, others))
	}
	fs2 := append(openFlows(t, client, "tcp", ip+":80", 12), openFlows(t, client, "udp", ip+":53", 6)...)
	sv.endpoints = keep
	s.objects.load(t)
	time.Sleep(3 * time.Second)
	n, which := cuts(fs2)
	if n != 0 {
		t.Errorf("adding %s back cut %d flows (%v), want 0", backend, n, which)
	}
	*figs = append(*figs, fmt.Sprintf("add %s back: cut %d/%d", backend, n, len(fs2)))
}

// removedBackendFate is what VPP does to the established flows of a backend
// removed from a service ("kept", "ended" or whenScanned, by protocol),
// measured on the real VPP of each version (docs/real-vpp.md):
//   - NAT44-ED deletes a removed local's sessions (nat44_ed: deleting a
//     local of a load-balanced mapping frees every session to it): its TCP
//     connections and UDP flows end;
//   - cnat 25.02 keeps a removed path's sessions until they idle out: TCP
//     drains, a busy UDP flow stays for ever;
//   - cnat 26.06 frees them when its session scanner next reaches them
//     (cnat_session.c: a session whose path is marked deleted is stale). The
//     scanner walks ~9 700 buckets a second of a table of ~10 M at the
//     default size (measured with `cnat log enable`): a pass takes ~17 min,
//     so within the test's few seconds most flows are kept and a few may be
//     re-balanced (seen: 1 TCP flow of 12 reset by the staying backend).
func removedBackendFate(renderer, version string) map[string]string {
	switch {
	case renderer == "nat44":
		return map[string]string{"tcp": "ended", "udp": "ended"}
	case release(version) >= "26.06":
		return map[string]string{"tcp": whenScanned, "udp": whenScanned}
	}
	return map[string]string{"tcp": "kept", "udp": "kept"}
}

// whenScanned is the fate of a flow kept until a scanner frees its session,
// then re-balanced: any of kept, mixed or ended.
const whenScanned = "kept until scanned"

// allowUnsupportedEnv makes the agents program a VPP release their
// renderer is known not to work on (vpp.allowUnsupported).
const allowUnsupportedEnv = "E2EVPP_ALLOW_UNSUPPORTED"

// cnatRefusedReleases are the VPP releases the agent refuses the cnat
// renderer on (plugins/vpp Release.cnatUnsupported): none since cnat
// passes every scenario on 26.06 (docs/vpp-versions.md).
var cnatRefusedReleases []string

// refused tells whether the agent refuses the suite's VPP under renderer:
// cnat on a release of cnatRefusedReleases, unless allowUnsupportedEnv is
// set. The version is known once a VPP started.
func refused(renderer string) bool {
	return renderer == "cnat" && os.Getenv(allowUnsupportedEnv) == "" &&
		slices.ContainsFunc(cnatRefusedReleases, func(r string) bool { return strings.HasPrefix(env.version, r) })
}

// skipRefused skips a test whose agents would refuse the suite's VPP
// (refused): TestRealVPP checks the refusal itself.
func skipRefused(t *testing.T, renderer string) {
	t.Helper()
	if refused(renderer) {
		t.Skipf("the agent refuses %s on VPP %s (TestRealVPP/%s checks it; %s=1 runs this anyway)", renderer, env.version, renderer, allowUnsupportedEnv)
	}
}

// refusedCNAT checks that each agent refuses a VPP release the cnat
// renderer does not work on, as it refuses any incompatible VPP: it exits
// naming the release and the reason (a DaemonSet's pod restarts showing
// it), having written nothing to VPP (node 1's record of its calls; no
// cnat translation on either VPP).
func refusedCNAT(t *testing.T, s *suite) {
	t.Helper()
	figs := []string{}
	record(t, "cnat-refused", s.renderer, &figs)
	for _, n := range s.nodes {
		select {
		case err := <-n.agent.done:
			n.agent.done <- err
			if err == nil {
				t.Errorf("agent %s exited 0 on a VPP it refuses", n.name)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("agent %s still runs 60 s after it met cnat on VPP %s", n.name, env.version)
		}
		log, err := os.ReadFile(n.s.artifact(n.name + "-agent.log"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "the cnat renderer does not work on VPP " + env.version; !strings.Contains(string(log), want) {
			t.Errorf("agent %s log lacks %q", n.name, want)
		}
		if out := n.cli("show cnat translation"); regexp.MustCompile(`(?m)^\s*\[\d+\] `).MatchString(out) {
			t.Errorf("VPP of %s holds cnat translations:\n%s", n.name, out)
		}
	}
	if rec, err := os.ReadFile(s.recordFile()); err == nil {
		for _, line := range strings.Split(string(rec), "\n") {
			var step struct {
				Request struct{ Name string } `json:"request"`
			}
			if json.Unmarshal([]byte(line), &step) == nil && step.Request.Name != "" && !isRead(step.Request.Name) {
				t.Errorf("agent node-1 wrote %s to a VPP it refuses", step.Request.Name)
			}
		}
	}
	figs = append(figs, "each agent exits naming the release and the reason; 0 writes")
	t.Logf("cnat on VPP %s refused by both agents (%s=1 runs the scenarios anyway)", env.version, allowUnsupportedEnv)
}

// warmUp makes every client reach every backend directly once, retrying,
// so that the first packet of a scenario does not wait for VPP's ARP
// across the tunnel (VPP drops the packet that starts the resolution):
// what a change does to traffic is measured on resolved paths.
func warmUp(t *testing.T, s *suite) {
	t.Helper()
	var clients, backends []*pod
	for _, n := range s.nodes {
		for _, p := range n.pods {
			if strings.HasPrefix(p.name, "be") {
				backends = append(backends, p)
			} else {
				clients = append(clients, p)
			}
		}
	}
	for _, c := range clients {
		for _, b := range backends {
			var err error
			for range 3 {
				if _, err = request(c.netns, "tcp", fmt.Sprintf("%s:%d", b.ip, backendPort), 2*time.Second); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("%s cannot reach %s directly: %v", c.name, b.name, err)
			}
		}
	}
}

// sameKeys tells whether m's keys are exactly want.
func sameKeys(m map[string]int, want ...string) bool {
	got := slices.Sorted(maps.Keys(m))
	slices.Sort(want)
	return slices.Equal(got, want)
}
