package e2evpp

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Weights at the ends of their range and a configuration change under
// counted flows (issue 34): nat44.serviceLocalEndpointWeight (1..255,
// contivconf; 0 is refused) is the weight of a backend on the client's
// node against a remote one's 1. Both renderers take it: NAT44-ED as the
// local's probability (the mapping's sum kept within 1..255, FACTS §1),
// cnat as the local path repeated (FACTS §6).

// weightIP is the service the weight scenarios ask: TCP 80 and UDP 53 →
// backendPort, one backend per node (be1 on node 1, be2 on node 2).
const weightIP = "10.96.0.60"

// weightRequests is how many connections each share is measured over.
const weightRequests = 60

// TestRealVPPWeights runs the weight scenarios under each renderer
// (E2EVPP_RENDERERS as TestRealVPP).
func TestRealVPPWeights(t *testing.T) {
	renderers := []string{"nat44", "cnat"}
	if v := os.Getenv("E2EVPP_RENDERERS"); v != "" {
		renderers = strings.Split(v, ",")
	}
	for _, r := range renderers {
		t.Run(r, func(t *testing.T) { weightScenarios(t, r) })
	}
}

func weightScenarios(t *testing.T, renderer string) {
	s := newSuite(t, renderer, []string{"client", "be1"}, []string{"be2", "client2"})
	skipRefused(t, renderer)
	weight := 1
	s.configHook = func(_ *node, cfg string) string {
		return cfg + fmt.Sprintf("nat44:\n  serviceLocalEndpointWeight: %d\n", weight)
	}
	for _, n := range s.nodes {
		n.pod(fmt.Sprintf("be%d", n.id)).serve(t, backendPort)
	}
	s.objects.put(&service{name: "weighted", clusterIP: weightIP, endpoints: eps(s.nodes[0].pod("be1"), s.nodes[1].pod("be2")),
		ports: []svcPort{tcp("http", 80, backendPort), {name: "dns", protocol: "UDP", port: 53, targetPort: backendPort}}})
	s.objects.load(t)
	for _, n := range s.nodes {
		n.startAgentNoWait(t)
	}
	for _, n := range s.nodes {
		n.waitReady(t, 90*time.Second)
	}
	warmUp(t, s)
	step := func(name string, fn func(t *testing.T, figs *[]string)) {
		t.Run(name, func(t *testing.T) {
			var figs []string
			record(t, name, renderer, &figs)
			fn(t, &figs)
		})
	}
	// roll restarts every agent with the configuration's new weight, one
	// node after the other, as a DaemonSet rolls a changed ConfigMap; it
	// returns node 1's writes to VPP over its restart.
	roll := func(t *testing.T, w int) int {
		weight = w
		writes := 0
		for _, n := range s.nodes {
			n.agent.stop(t)
			n.startAgent(t)
			if n.id == 1 {
				time.Sleep(time.Second)
				writes = n.agent.writes(t)
			}
		}
		return writes
	}

	step("weight-1", func(t *testing.T, figs *[]string) {
		for _, n := range s.nodes {
			local, remote := weightBackends(n)
			checkWeights(t, n, renderer, map[string]int{local: 1, remote: 1}, figs)
			seen, _ := spread(t, n.pod(clientOf(n)).netns, "tcp", weightIP+":80", weightRequests)
			// Even odds: fewer than a quarter on either is a chance of
			// about 1e-4 under cnat's hash; NAT44-ED alternates.
			if seen[local] < weightRequests/4 || seen[remote] < weightRequests/4 {
				t.Errorf("%s, weight 1: %v of %d connections, want about half on each", n.name, seen, weightRequests)
			}
			*figs = append(*figs, fmt.Sprintf("%s: local %d, remote %d of %d", n.name, seen[local], seen[remote], weightRequests))
		}
	})
	step("config-change-weight", func(t *testing.T, figs *[]string) {
		// A realistic operator change: local backends weighted 10, the
		// agents restarted with it, under live flows from both nodes.
		type flows struct {
			n        *node
			tcp, udp []*flow
		}
		var open []flows
		for _, n := range s.nodes {
			ns := n.pod(clientOf(n)).netns
			open = append(open, flows{n, openFlows(t, ns, "tcp", weightIP+":80", 12), openFlows(t, ns, "udp", weightIP+":53", 6)})
		}
		writes := roll(t, 10)
		time.Sleep(4 * time.Second)
		for _, f := range open {
			local, remote := weightBackends(f.n)
			checkWeights(t, f.n, renderer, map[string]int{local: 10, remote: 1}, figs)
			// What VPP forces (FACTS §3, §6): NAT44-ED cannot change a
			// local's probability in place, so the local backend is
			// removed and added again, which deletes its sessions: its TCP
			// connections are cut (a UDP flow's next datagram makes a new
			// session, likely on the same backend: seen or not). The remote
			// backend stays in the mapping (placeholder) and keeps its
			// flows. cnat changes no session.
			tk, te, tOthers := fateOf(f.tcp, local)
			uk, ue, uOthers := fateOf(f.udp, local)
			if tk+te == 0 || tOthers+len(f.tcp)-tk-te == 0 {
				t.Errorf("%s: the TCP flows were not on both backends (%v): nothing measured", f.n.name, firstBackends(f.tcp))
			}
			if tOthers != 0 || uOthers != 0 {
				t.Errorf("%s: the weight change cut %d TCP and %d UDP flows on the remote backend %s, want 0", f.n.name, tOthers, uOthers, remote)
			}
			if renderer == "nat44" && tk != 0 {
				t.Errorf("%s: %d TCP flows on the re-weighted local backend %s survived, want all cut (NAT44-ED deletes its sessions)", f.n.name, tk, local)
			}
			if renderer == "cnat" && (te != 0 || ue != 0) {
				t.Errorf("%s: the weight change cut %d TCP and %d UDP flows on %s, want 0 (cnat keeps sessions)", f.n.name, te, ue, local)
			}
			*figs = append(*figs, fmt.Sprintf("%s: TCP on local cut %d/%d, on remote cut %d/%d; UDP on local ended %d/%d, on remote %d/%d",
				f.n.name, te, tk+te, tOthers, len(f.tcp)-tk-te, ue, uk+ue, uOthers, len(f.udp)-uk-ue))
		}
		*figs = append(*figs, fmt.Sprintf("node-1 restart writes %d", writes))
	})
	step("weight-255", func(t *testing.T, figs *[]string) {
		writes := roll(t, 255)
		for _, n := range s.nodes {
			local, remote := weightBackends(n)
			ns := n.pod(clientOf(n)).netns
			seen, _ := spread(t, ns, "tcp", weightIP+":80", weightRequests)
			if renderer == "nat44" {
				// 255 + 1 passes the u8 sum: the local backend alone fills
				// it, the remote one is left out and reported so.
				checkWeights(t, n, renderer, map[string]int{local: 255}, figs)
				if seen[local] != weightRequests {
					t.Errorf("%s, weight 255: %v of %d connections, want all on the local backend (the remote one is left out)", n.name, seen, weightRequests)
				}
				var v struct {
					Subsets []struct {
						Endpoints int `json:"endpoints"`
						Used      int `json:"used"`
					} `json:"subsets"`
				}
				if err := n.agent.get("/v1/nat44", &v); err != nil {
					t.Fatal(err)
				}
				if len(v.Subsets) == 0 || v.Subsets[0].Endpoints != 2 || v.Subsets[0].Used != 1 {
					t.Errorf("%s, weight 255: subsets %+v, want the service's 1 of 2 endpoints reported", n.name, v.Subsets)
				}
			} else {
				// 255 paths to the local backend, one to the remote: 1 in
				// 256 connections leaves. Six or more of 60 is a chance of
				// about 1e-9.
				checkWeights(t, n, renderer, map[string]int{local: 255, remote: 1}, figs)
				if seen[local] < weightRequests-5 {
					t.Errorf("%s, weight 255: %v of %d connections, want nearly all on the local backend", n.name, seen, weightRequests)
				}
			}
			if !strings.Contains(n.cli("show version"), "vpp") {
				t.Errorf("%s: VPP does not answer after weight 255's traffic", n.name)
			}
			*figs = append(*figs, fmt.Sprintf("%s: local %d, remote %d of %d", n.name, seen[local], seen[remote], weightRequests))
		}
		*figs = append(*figs, fmt.Sprintf("node-1 restart writes %d", writes))
	})
}

// weightBackends names node n's local and remote backend of weightIP.
func weightBackends(n *node) (local, remote string) {
	if n.id == 1 {
		return "be1", "be2"
	}
	return "be2", "be1"
}

// checkWeights compares what node n's VPP holds for weightIP:80 with want
// (backend pod → NAT44 probability, or cnat paths to it).
func checkWeights(t *testing.T, n *node, renderer string, want map[string]int, figs *[]string) {
	t.Helper()
	got := vppWeights(t, n, renderer, weightIP, 80)
	named := map[string]int{}
	for _, o := range n.s.nodes {
		for _, p := range o.pods {
			if w, ok := got[p.ip.String()]; ok {
				named[p.name] = w
				delete(got, p.ip.String())
			}
		}
	}
	for ip, w := range got {
		named[ip] = w
	}
	if fmt.Sprint(named) != fmt.Sprint(want) {
		t.Errorf("%s: VPP holds %v for %s:80, want %v", n.name, named, weightIP, want)
	}
	*figs = append(*figs, fmt.Sprintf("%s VPP %v", n.name, named))
}

// vppWeights reads node n's VPP: the weight of each backend address of
// ip:port, as NAT44 probabilities (the placeholder's 0 left out) or the
// number of cnat paths to it.
func vppWeights(t *testing.T, n *node, renderer, ip string, port int) map[string]int {
	t.Helper()
	out := map[string]int{}
	if renderer == "nat44" {
		text := n.cli("show nat44 static mappings")
		i := strings.Index(text, fmt.Sprintf("external %s:%d", ip, port))
		if i < 0 {
			t.Fatalf("%s: VPP holds no mapping of %s:%d: %.2000s", n.name, ip, port, text)
		}
		for _, l := range strings.Split(text[i:], "\n")[1:] {
			m := natLocalRE.FindStringSubmatch(l)
			if m == nil {
				break
			}
			if p, _ := strconv.Atoi(m[2]); p > 0 {
				out[m[1]] += p
			}
		}
		return out
	}
	text := n.cli("show cnat translation")
	i := strings.Index(text, fmt.Sprintf("%s;%d", ip, port))
	if i < 0 {
		t.Fatalf("%s: VPP holds no translation of %s;%d: %.2000s", n.name, ip, port, text)
	}
	block := text[i:]
	if j := strings.Index(block, "\n["); j >= 0 {
		block = block[:j]
	}
	for _, m := range cnatPathRE.FindAllStringSubmatch(block, -1) {
		out[m[1]]++
	}
	return out
}
