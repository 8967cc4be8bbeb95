package e2evpp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
)

// Scale and limits (issue 34): a service of 1000 endpoints over both nodes,
// and the standard workload W(N) (BENCH.md, internal/workload) in etcd:
// its first programming, an agent restart and VPP restarts at that scale.

// scaleEnv sets N of W(N) (default 10000); backEnv the longest a VPP
// restart's services may take to answer after VPP's interfaces are back
// (default 3 s: the goal is 1 s, measured 0.7-0.8 s; before the
// fixes of issue 34 F1 and F3 it was 12-20 s on a loaded node).
const (
	scaleEnv = "E2EVPP_SCALE_N"
	backEnv  = "E2EVPP_SCALE_BACK"
)

// TestRealVPPScale runs the scale scenarios under each renderer
// (E2EVPP_RENDERERS as TestRealVPP).
func TestRealVPPScale(t *testing.T) {
	renderers := []string{"nat44", "cnat"}
	if v := os.Getenv("E2EVPP_RENDERERS"); v != "" {
		renderers = strings.Split(v, ",")
	}
	n := 10000
	if v := os.Getenv(scaleEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("%s=%q: want a number of services of at least 10", scaleEnv, v)
		}
	}
	for _, r := range renderers {
		t.Run(r, func(t *testing.T) {
			scaleStep(t, "endpoints-1000", r, func(t *testing.T, figs *[]string) { bigService(t, r, figs) })
			scaleStep(t, fmt.Sprintf("w%d", n), r, func(t *testing.T, figs *[]string) { wScale(t, r, n, figs) })
		})
	}
}

// scaleStep runs fn as a subtest that adds a row to the run's table.
func scaleStep(t *testing.T, name, renderer string, fn func(t *testing.T, figs *[]string)) {
	t.Run(name, func(t *testing.T) {
		var figs []string
		record(t, name, renderer, &figs)
		fn(t, &figs)
	})
}

// The 1000-endpoint service: node i's backend pod "be<i>" answers on 500
// addresses of its own, 10.1.(10i).1-250 and 10.1.(10i+1).1-250 (a local
// route on the pod's loopback), which each VPP routes in the pod VRF to
// that pod or across the tunnel.
const (
	bigIP       = "10.96.0.50"
	bigPerNode  = 500
	bigBlockLen = 250
)

// bigRange is node id's /23 of endpoint addresses.
func bigRange(id int) string { return fmt.Sprintf("10.1.%d.0/23", 10*id) }

// bigAddr is the j-th endpoint address of node id (0 ≤ j < bigPerNode).
func bigAddr(id, j int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 1, byte(10*id + j/bigBlockLen), byte(1 + j%bigBlockLen)})
}

// bigRoutes adds to a node's startup configuration the big service's
// addresses: its own to its backend pod, the other's across the tunnel.
func bigRoutes(n *node, cli string) string {
	var b strings.Builder
	b.WriteString(cli)
	for _, o := range n.s.nodes {
		if o == n {
			be := n.pod(fmt.Sprintf("be%d", n.id))
			fmt.Fprintf(&b, "ip route add %s table %d via %s %s\n", bigRange(n.id), podVRF, be.ip, be.vppIf())
		} else {
			fmt.Fprintf(&b, "ip route add %s table %d via %s loop1\n", bigRange(o.id), podVRF, n.vxlanIP(o.id))
		}
	}
	return b.String()
}

// serveLocal serves TCP on port in namespace netns, answering each line
// with the address the client dialled and the client's: one server stands
// for every endpoint address routed to its pod.
func serveLocal(t *testing.T, netns string, port int) {
	t.Helper()
	var ln net.Listener
	if err := inNetns(netns, func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatalf("%s: serving :%d: %v", netns, port, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				local, _, _ := net.SplitHostPort(c.LocalAddr().String())
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := fmt.Fprintf(c, "%s %s\n", local, c.RemoteAddr()); err != nil {
						return
					}
				}
			}()
		}
	}()
}

func bigService(t *testing.T, renderer string, figs *[]string) {
	s := newSuiteWith(t, renderer, func(s *suite) { s.startupEdit, s.noRecord = bigRoutes, true },
		[]string{"client", "be1"}, []string{"client2", "be2"})
	skipRefused(t, renderer)
	var eps []endpoint
	for _, n := range s.nodes {
		be := n.pod(fmt.Sprintf("be%d", n.id))
		ipIn(t, be.netns, "route", "add", "local", bigRange(n.id), "dev", "lo")
		serveLocal(t, be.netns, backendPort)
		for j := range bigPerNode {
			eps = append(eps, endpoint{pod: &pod{node: n, namespace: "default", name: fmt.Sprintf("big-%d-%d", n.id, j), ip: bigAddr(n.id, j)}})
		}
	}
	s.objects.put(&service{name: "big", clusterIP: bigIP, ports: []svcPort{tcp("http", 80, backendPort)}, endpoints: eps})
	s.objects.load(t)
	start := time.Now()
	for _, n := range s.nodes {
		n.startAgentNoWait(t)
	}
	for _, n := range s.nodes {
		n.waitReady(t, 3*time.Minute)
	}
	*figs = append(*figs, fmt.Sprintf("agents ready %v", time.Since(start).Round(100*time.Millisecond)))
	all := map[string]bool{}
	for _, e := range eps {
		all[e.pod.ip.String()] = true
	}
	// What each node's VPP holds for the service, and what its agent
	// reports of a subset.
	used := map[*node]map[string]bool{}
	union := map[string]bool{}
	for _, n := range s.nodes {
		got, sum := vppBackends(t, n, renderer)
		for a := range got {
			if !all[a] {
				t.Errorf("%s: VPP holds backend %s, which is no endpoint of the service", n.name, a)
			}
			union[a] = true
		}
		reported := len(all)
		if renderer == "nat44" {
			if sum < 1 || sum > 255 {
				t.Errorf("%s: the mapping's probabilities sum to %d, want 1..255 (VPP 25.02 keeps the sum in a u8)", n.name, sum)
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
			if len(v.Subsets) == 0 {
				t.Errorf("%s: the agent reports no subset for a service of %d endpoints", n.name, len(all))
			} else {
				reported = v.Subsets[0].Used
				if v.Subsets[0].Endpoints != len(all) {
					t.Errorf("%s: the reported subset counts %d endpoints, want %d", n.name, v.Subsets[0].Endpoints, len(all))
				}
			}
			*figs = append(*figs, fmt.Sprintf("%s: %d locals, sum %d, subset reported %d of %d", n.name, len(got), sum, reported, len(all)))
		} else {
			*figs = append(*figs, fmt.Sprintf("%s: %d backends", n.name, len(got)))
		}
		if len(got) != reported {
			t.Errorf("%s: VPP holds %d backends, the agent reports %d", n.name, len(got), reported)
		}
		used[n] = got
	}
	if renderer == "cnat" && len(union) != len(all) {
		t.Errorf("cnat: the nodes' VPPs hold %d of the %d endpoints, want all", len(union), len(all))
	}
	// Every backend a node's VPP holds is reached from that node's client,
	// and nothing else is.
	var wg sync.WaitGroup
	reached := make([]map[string]bool, len(s.nodes))
	took := make([]int, len(s.nodes))
	for i, n := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reached[i], took[i] = reach(t, n.pod(clientOf(n)).netns, bigIP+":80", used[n])
		}()
	}
	wg.Wait()
	for i, n := range s.nodes {
		for a := range reached[i] {
			if !used[n][a] {
				t.Errorf("%s: a request reached %s, which its VPP does not hold for the service", n.name, a)
			}
		}
		missed := 0
		for a := range used[n] {
			if !reached[i][a] {
				missed++
			}
		}
		if missed > 0 {
			t.Errorf("%s: %d of the %d backends its VPP holds were never reached in %d requests", n.name, missed, len(used[n]), took[i])
		}
		*figs = append(*figs, fmt.Sprintf("%s reached %d/%d in %d requests", n.name, len(reached[i]), len(used[n]), took[i]))
	}
	for _, n := range s.nodes {
		select {
		case err := <-n.vppDone:
			n.vppDone <- err
			t.Errorf("%s: VPP exited under the big service: %v", n.name, err)
		default:
			if !strings.Contains(n.cli("show version"), "vpp") {
				t.Errorf("%s: VPP does not answer after the big service's traffic", n.name)
			}
		}
	}
}

// clientOf names the client pod of the big service's node.
func clientOf(n *node) string {
	if n.id == 1 {
		return "client"
	}
	return fmt.Sprintf("client%d", n.id)
}

// reach sends requests from ns to addr until every backend of want has
// answered or a budget is spent (16 requests a backend, at most 90 s):
// the backends that answered, and the requests sent.
func reach(t *testing.T, ns, addr string, want map[string]bool) (map[string]bool, int) {
	got := map[string]bool{}
	var mu sync.Mutex
	budget := 16 * len(want)
	deadline := time.Now().Add(90 * time.Second)
	sent, failed := 0, 0
	var firstErr error
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(got) >= len(want) || sent >= budget || time.Now().After(deadline)
				sent++
				mu.Unlock()
				if done {
					return
				}
				a, err := request(ns, "tcp", addr, 2*time.Second)
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					got[a.backend] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Thousands of connections from one client reuse its source ports:
	// under cnat one in several thousand timed out (seen once, 1 of 6423,
	// cause not found): more than one in a thousand fails.
	if failed > 0 {
		t.Logf("%s → %s: %d of %d requests failed, the first: %v", ns, addr, failed, sent, firstErr)
	}
	if failed*1000 > sent {
		t.Errorf("%s → %s: %d of %d requests failed (the first: %v), want at most one in a thousand", ns, addr, failed, sent, firstErr)
	}
	return got, sent - 4
}

var (
	natLocalRE = regexp.MustCompile(`local (\d+\.\d+\.\d+\.\d+):\d+ vrf \d+ probability (\d+)`)
	cnatPathRE = regexp.MustCompile(`->(\d+\.\d+\.\d+\.\d+);\d+`)
)

// vppBackends reads from the node's VPP the backends it holds for bigIP:80
// and, under nat44, the sum of their probabilities.
func vppBackends(t *testing.T, n *node, renderer string) (map[string]bool, int) {
	t.Helper()
	out := map[string]bool{}
	sum := 0
	if renderer == "nat44" {
		text := n.cli("show nat44 static mappings")
		i := strings.Index(text, "external "+bigIP+":80")
		if i < 0 {
			t.Fatalf("%s: VPP holds no mapping of %s:80: %.2000s", n.name, bigIP, text)
		}
		block := text[i:]
		// The mapping's locals are its indented lines.
		lines := strings.Split(block, "\n")
		for _, l := range lines[1:] {
			m := natLocalRE.FindStringSubmatch(l)
			if m == nil {
				break
			}
			out[m[1]] = true
			p, _ := strconv.Atoi(m[2])
			sum += p
		}
		return out, sum
	}
	text := n.cli("show cnat translation")
	i := strings.Index(text, bigIP+";80")
	if i < 0 {
		t.Fatalf("%s: VPP holds no translation of %s;80: %.2000s", n.name, bigIP, text)
	}
	block := text[i:]
	if j := strings.Index(block, "\n["); j >= 0 {
		block = block[:j]
	}
	for _, m := range cnatPathRE.FindAllStringSubmatch(block, -1) {
		out[m[1]] = true
	}
	return out, 0
}

// The W(N) scenario's own service, outside W's addresses: a ClusterIP
// which node 1's client asks after each restart.
const wWebIP = "10.100.0.20"

// wScale loads W(n) beside a small service (a ClusterIP on node 1's
// backend), starts node 1's agent (node 2 stays without one: one agent's
// figures on two CPUs) and measures the
// first programming, an agent restart and two VPP restarts.
func wScale(t *testing.T, renderer string, n int, figs *[]string) {
	// W's pods on node 1 take 10.1.1.2-241 and .247, on node 2 10.1.2.2-241:
	// the suite's pods sit above them.
	s := newSuiteWith(t, renderer, func(s *suite) { s.podIPBase, s.noRecord = 248, true },
		[]string{"client", "be1"}, []string{})
	skipRefused(t, renderer)
	n1 := s.nodes[0]
	// Debug logging of W(N) and a periodic resync every 3 s are not what a
	// node runs: the defaults' level and a long interval.
	s.configHook = func(_ *node, cfg string) string {
		cfg = strings.Replace(cfg, "level: debug", "level: info", 1)
		return strings.Replace(cfg, "resyncInterval: 3s", "resyncInterval: 10m", 1)
	}
	be1 := n1.pod("be1")
	be1.serve(t, backendPort)
	s.objects.put(&service{name: "web", clusterIP: wWebIP, ports: []svcPort{tcp("http", 80, backendPort)},
		endpoints: []endpoint{{pod: be1}}})
	s.objects.load(t)
	t0 := time.Now()
	loadWorkload(t, s, n)
	*figs = append(*figs, fmt.Sprintf("W(%d) into etcd %v", n, time.Since(t0).Round(100*time.Millisecond)))
	client := n1.pod("client").netns
	// VPP drops the packet that starts an ARP resolution: the path to the
	// backend is resolved before anything is measured.
	var err error
	for range 3 {
		if _, err = request(client, "tcp", fmt.Sprintf("%s:%d", be1.ip, backendPort), 2*time.Second); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("the client cannot reach be1 directly: %v", err)
	}

	start := time.Now()
	n1.startAgent(t)
	*figs = append(*figs, fmt.Sprintf("agent ready %v after start", time.Since(start).Round(100*time.Millisecond)))
	m := n1.agent.metrics(t)
	writes, by := n1.agent.writesBy(t)
	*figs = append(*figs, fmt.Sprintf("first programming: %d writes of %d calls (%v), full batch %.2f s", writes, int(m.sum("contiv_vpp_calls_total{")), by,
		m.sum(`contiv_controller_batch_duration_seconds_sum{full="true"}`)))
	if a, err := request(client, "tcp", wWebIP+":80", 3*time.Second); err != nil || a.backend != "be1" {
		t.Errorf("%s:80 beside W(%d): %+v %v, want be1 (agent not ready: %v; VPP's NAT44 interfaces: %s)", wWebIP, n, a, err, n1.notReady(t), n1.cli("show nat44 interfaces"))
	}

	t.Run("agent-restart", func(t *testing.T) {
		n1.agent.stop(t)
		start := time.Now()
		n1.startAgent(t)
		ready := time.Since(start)
		time.Sleep(2 * time.Second)
		w, by := n1.agent.writesBy(t)
		if w != 0 {
			t.Errorf("agent restart at W(%d) wrote %d times (%v), want 0", n, w, by)
		}
		*figs = append(*figs, fmt.Sprintf("agent restart: ready in %v, %d writes", ready.Round(100*time.Millisecond), w))
	})
	for k := 1; k <= 2; k++ {
		t.Run(fmt.Sprintf("vpp-restart-%d", k), func(t *testing.T) { wVPPRestart(t, s, n, k, 0, figs) })
	}
	// A loaded node's VPP made its interfaces 4.7-10 s after the agent
	// reconnected (issue 34 F3), past the 3 s the agent holds the mappings
	// for them: the startup configuration waits before making them.
	t.Run("vpp-restart-late-interfaces", func(t *testing.T) { wVPPRestart(t, s, n, 3, 6*time.Second, figs) })
}

// wVPPRestart restarts node 1's VPP under W(n), its interfaces made late
// by late (0: at once), and measures when the web service answers again
// after VPP's interfaces are back, and when the agent is ready again; the
// agent must keep its connection through the reprogram (one connect
// more, not several).
func wVPPRestart(t *testing.T, s *suite, n, k int, late time.Duration, figs *[]string) {
	n1 := s.nodes[0]
	client := n1.pod("client").netns
	before := n1.agent.vppStatus(t)
	if late > 0 {
		// VPP's CLI "wait" suspends the startup configuration's process;
		// the API answers meanwhile.
		s.startupEdit = func(_ *node, cli string) string { return fmt.Sprintf("wait %.3f\n%s", late.Seconds(), cli) }
		defer func() { s.startupEdit = nil }()
	}
	logFile := s.artifact(n1.name + "-agent.log")
	logStart := fileSize(logFile)
	n1.stopVPP(t)
	start := time.Now()
	n1.startVPP(t)
	ifs := time.Since(start)
	// A SYN VPP drops before the service is back is retransmitted only
	// after a second: each try waits 100 ms, so that "back" is known to
	// ~0.12 s.
	back := time.Duration(-1)
	for time.Since(start) < 2*time.Minute {
		if _, err := request(client, "tcp", wWebIP+":80", 100*time.Millisecond); err == nil {
			back = time.Since(start) - ifs
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if back < 0 {
		t.Fatalf("VPP restart %d at W(%d): %s:80 not answered within 2 min", k, n, wWebIP)
	}
	limit := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv(backEnv)); err == nil {
		limit = d
	}
	if back > limit {
		t.Errorf("VPP restart %d at W(%d): the service answered %v after VPP's interfaces, want at most %v (%s)", k, n, back.Round(10*time.Millisecond), limit, backEnv)
	}
	n1.waitReady(t, 3*time.Minute)
	ready := time.Since(start) - ifs
	after := n1.agent.vppStatus(t)
	// Features before mappings (issue 34 F1): the agent says when it gave
	// up waiting for the node's interfaces and added the mappings first.
	if b, err := os.ReadFile(logFile); err == nil && int64(len(b)) > logStart {
		if i := strings.Index(string(b[logStart:]), "adding mappings without its features"); i >= 0 {
			line, _, _ := strings.Cut(string(b[logStart+int64(i):]), "\n")
			t.Errorf("VPP restart %d at W(%d): the mappings went before the node's interface features (each feature enabled later walks every mapping): ...%s", k, n, line)
		}
	}
	// What the restart's full apply configured stays configured: the
	// events of the interfaces that went with the old VPP, handled after
	// that apply, are no losses (a re-created interface keeps its index).
	time.Sleep(2 * time.Second)
	if r := n1.refusals(logStart); len(r) > 0 {
		t.Errorf("VPP restart %d at W(%d): VPP refused %d calls, want 0; first: %s", k, n, len(r), r[0])
	}
	if c := after.Connects - before.Connects; c != 1 {
		t.Errorf("VPP restart %d at W(%d): the agent connected %d times, want once (a busy VPP is not a dead one)", k, n, c)
	}
	*figs = append(*figs, fmt.Sprintf("VPP restart %d (interfaces late by %v): interfaces %v, service back %v after them, ready %v after them, connects +%d",
		k, late, ifs.Round(10*time.Millisecond), back.Round(10*time.Millisecond), ready.Round(10*time.Millisecond), after.Connects-before.Connects))
}

// loadWorkload writes W(n) into the suite's etcd as the reflector and
// NodeSync would: the services, slices and nodes 3..100 of W, and the
// NodeSync records and ID keys of nodes 2..100 (nodes 1 and 2 are the
// suite's, already loaded). W's pods are left out: the suite's VPPs have
// no interface for them.
func loadWorkload(t *testing.T, s *suite, n int) {
	t.Helper()
	w := workload.New(n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := s.etcd.Client()
	var ops []kubestate.Op
	var ids []string
	for i, nd := range w.Nodes {
		vn := w.VppNodes[i]
		if vn.ID > 2 {
			ops = append(ops, kubestate.PutOp(nd))
		}
		if vn.ID > 1 {
			ops = append(ops, kubestate.PutOp(vn))
			ids = append(ids, noderegistry.IDPrefix+strconv.FormatUint(uint64(vn.ID), 10), vn.Name)
		}
	}
	for i := range w.Services {
		ops = append(ops, kubestate.PutOp(w.Services[i]), kubestate.PutOp(w.Slices[i]))
	}
	if err := kubestate.NewWriter(cli, nil).Apply(ctx, ops); err != nil {
		t.Fatalf("loading W(%d): %v", n, err)
	}
	for i := 0; i < len(ids); i += 2 {
		if _, err := cli.Put(ctx, ids[i], ids[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kubestate.MarkSynced(ctx, cli, "e2evpp", 0); err != nil {
		t.Fatal(err)
	}
}

// metricSet is an agent's /metrics, line by line.
type metricSet []string

// sum adds the samples of the lines that start with prefix.
func (m metricSet) sum(prefix string) float64 {
	v := 0.0
	for _, l := range m {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		f := strings.Fields(l)
		if x, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			v += x
		}
	}
	return v
}

// metrics reads the agent's /metrics.
func (a *agentProc) metrics(t testing.TB) metricSet {
	t.Helper()
	resp, err := a.client().Get("http://" + a.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// writesBy is writes with the messages that made them.
func (a *agentProc) writesBy(t testing.TB) (int, map[string]int) {
	t.Helper()
	by := map[string]int{}
	m := a.metrics(t)
	for _, l := range m {
		if w := countWrites(strings.NewReader(l)); w > 0 {
			msg := l[strings.Index(l, `msg="`)+5:]
			by[msg[:strings.IndexByte(msg, '"')]] += w
		}
	}
	return countWrites(strings.NewReader(strings.Join(m, "\n"))), by
}

// fileSize is the size of the file at path (0 when it cannot be read).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// notReady is what the node's agent says it waits for.
func (n *node) notReady(t testing.TB) []string {
	var st struct {
		NotReady []string `json:"notReady"`
	}
	if err := n.agent.get("/v1/status", &st); err != nil {
		return []string{err.Error()}
	}
	return st.NotReady
}

// vppStatus is the agent's view of its VPP connection.
func (a *agentProc) vppStatus(t testing.TB) (st struct {
	Connects int `json:"connects"`
	Restarts int `json:"restarts"`
}) {
	t.Helper()
	var v struct {
		VPP struct {
			Connects int `json:"connects"`
			Restarts int `json:"restarts"`
		} `json:"vpp"`
	}
	if err := a.get("/v1/status", &v); err != nil {
		t.Fatal(err)
	}
	st.Connects, st.Restarts = v.VPP.Connects, v.VPP.Restarts
	return st
}

// TestCountWrites checks the suite's count of an agent's writes against
// the metric as the agent exposes it (label msg): reads are not writes.
func TestCountWrites(t *testing.T) {
	text := `# HELP contiv_vpp_calls_total Binary-API calls to VPP by message and result.
# TYPE contiv_vpp_calls_total counter
contiv_vpp_calls_total{msg="control_ping",result="ok"} 40
contiv_vpp_calls_total{msg="ip_route_add_del",result="ok"} 7
contiv_vpp_calls_total{msg="ip_route_add_del",result="error"} 1
contiv_vpp_calls_total{msg="nat44_lb_static_mapping_dump",result="ok"} 3
contiv_vpp_calls_total{msg="nat44_add_del_lb_static_mapping",result="ok"} 2
contiv_vpp_call_duration_seconds_count{msg="ip_route_add_del"} 8
`
	if got := countWrites(strings.NewReader(text)); got != 10 {
		t.Errorf("countWrites: %d, want 10 (7+1 routes, 2 mappings)", got)
	}
}
