package e2evpp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/internal/etcdtest"
)

// buildEnv names the VPP build the suite runs (a directory with bin/vpp and
// lib/x86_64-linux-gnu/vpp_plugins); make e2e-vpp sets it.
const buildEnv = "CONTIV_E2E_VPP"

// env is what TestMain prepared for every test.
var env struct {
	build   string // VPP build directory
	version string // VPP's version, as `vpp -version`... reports it
	bin     string // contiv-agent and contivctl, built from this tree
	art     string // artifacts: every process's log
	table   *table
	// heap is the memory section of each VPP's startup configuration,
	// heapNote says what it is, restoreHeap gives back the huge pages the
	// suite reserved (heap_test.go).
	heap, heapNote string
	restoreHeap    func()
}

func TestMain(m *testing.M) {
	env.build = os.Getenv(buildEnv)
	if env.build == "" {
		fmt.Printf("e2evpp: skipped: no real VPP (%s unset; make e2e-vpp builds one and runs this suite)\n", buildEnv)
		os.Exit(m.Run()) // every test skips
	}
	if os.Geteuid() != 0 {
		fmt.Println("e2evpp: needs root (namespaces, veths, VPP)")
		os.Exit(1)
	}
	if err := prepare(); err != nil {
		fmt.Println("e2evpp:", err)
		giveBackHeap()
		os.Exit(1)
	}
	code := m.Run()
	env.table.print(os.Stdout)
	removeLeftovers()
	giveBackHeap()
	os.Exit(code)
}

// giveBackHeap gives back the huge pages the suite reserved, if any.
func giveBackHeap() {
	if env.restoreHeap != nil {
		env.restoreHeap()
	}
}

// prepare builds the binaries, reads VPP's version and makes the
// artifacts directory.
func prepare() error {
	var err error
	env.version = "unknown" // until a VPP says (node.startVPP)
	env.art = os.Getenv("CONTIV_E2E_VPP_ARTIFACTS")
	if env.art == "" {
		if env.art, err = os.MkdirTemp("", "e2evpp-artifacts-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(env.art, 0o755); err != nil {
		return err
	}
	env.bin = filepath.Join(env.art, "bin")
	for _, c := range []string{"contiv-agent", "contivctl"} {
		b := exec.Command("go", "build", "-o", filepath.Join(env.bin, c), "contiv.dev/vpp/cmd/"+c)
		if out, err := b.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v: %s", c, err, out)
		}
	}
	env.table = &table{}
	if err := mainHeap(); err != nil {
		return err
	}
	fmt.Printf("e2evpp: VPP from %s, %s; artifacts in %s\n", env.build, env.heapNote, env.art)
	removeLeftovers()
	return nil
}

// suite is one cluster: etcd, two nodes with their VPPs and agents, the
// fabric and the outside client.
type suite struct {
	t        *testing.T
	build    string
	renderer string
	etcd     *etcdtest.Server
	nodes    []*node
	objects  *cluster
	// configHook, when set, edits a node's agent configuration before it starts.
	configHook func(n *node, cfg string) string
	etcdFwd    map[string]bool // namespaces etcd is forwarded into (forwardEtcd)
	// podIPBase moves the pods' addresses up (pod k: 10.1.i.(k+1+podIPBase))
	// and startupEdit, when set, edits each node's VPP startup
	// configuration; they and noRecord are set by newSuiteWith's opt
	// (scale_test.go).
	podIPBase   int
	startupEdit func(n *node, cli string) string
	// noRecord leaves node 1's agent unrecorded (record_test.go): the
	// scale figures are not to include the recorder's cost.
	noRecord bool
	// recordAs names the record kept in testdata (record_test.go; default
	// the renderer).
	recordAs string
}

// newSuite makes the cluster's namespaces and links and starts the VPPs;
// pods declares each node's pods (node index → pod names, namespace
// "default"). Cleanup stops and removes all of it.
func newSuite(t *testing.T, renderer string, pods ...[]string) *suite {
	return newSuiteWith(t, renderer, nil, pods...)
}

// newSuiteWith is newSuite with opt, when set, editing the suite before
// anything is built.
func newSuiteWith(t *testing.T, renderer string, opt func(s *suite), pods ...[]string) *suite {
	if env.build == "" {
		t.Skipf("no real VPP: %s unset (make e2e-vpp)", buildEnv)
	}
	s := &suite{t: t, build: env.build, renderer: renderer, etcdFwd: map[string]bool{}}
	if opt != nil {
		opt(s)
	}
	t.Cleanup(s.teardown)
	removeLeftovers()
	addNetns(t, fabricNS)
	ipIn(t, fabricNS, "link", "add", "br0", "type", "bridge")
	ipIn(t, fabricNS, "link", "set", "br0", "up")
	addNetns(t, outsideNS)
	veth(t, outsideNS, "eth0", fabricNS, "upout")
	ipIn(t, fabricNS, "link", "set", "upout", "master", "br0")
	ipIn(t, outsideNS, "addr", "add", outsideIP+"/24", "dev", "eth0")
	// A server beyond the node network, as the internet is to a pod.
	ipIn(t, outsideNS, "addr", "add", internetIP+"/32", "dev", "lo")
	for i := range pods {
		n := &node{s: s, id: i + 1, name: fmt.Sprintf("node-%d", i+1),
			netns: fmt.Sprintf("%s-n%d", prefix, i+1),
			dir:   filepath.Join(runDir(), fmt.Sprintf("n%d", i+1))}
		s.nodes = append(s.nodes, n)
	}
	for i, n := range s.nodes {
		for _, p := range pods[i] {
			n.addPod("default", p)
		}
		n.build(t)
	}
	// The outside client reaches services through node 1 (the cluster's
	// "load balancer"), and each node's pod subnet through that node.
	ipIn(t, outsideNS, "route", "add", "10.96.0.0/12", "via", s.nodes[0].ip())
	ipIn(t, outsideNS, "route", "add", "203.0.113.0/24", "via", s.nodes[0].ip())
	for _, n := range s.nodes {
		ipIn(t, outsideNS, "route", "add", n.podSubnet(), "via", n.ip())
	}
	for _, n := range s.nodes {
		n.startVPP(t)
	}
	s.etcd = etcdtest.Start(t)
	s.objects = newCluster(s)
	return s
}

// teardown stops the agents and VPPs and removes the namespaces.
func (s *suite) teardown() {
	for _, n := range s.nodes {
		if n.agent != nil {
			n.agent.stop(s.t)
		}
		n.stopVPP(s.t)
	}
	s.keepRecord() // record_test.go
	removeLeftovers()
}

// runDir holds the nodes' sockets, configurations and state.
func runDir() string { return filepath.Join(os.TempDir(), "e2evpp") }

// artifact is the path of a log kept for the run.
func (s *suite) artifact(name string) string {
	dir := filepath.Join(env.art, sanitize(s.t.Name()))
	_ = os.MkdirAll(dir, 0o755)
	return filepath.Join(dir, name)
}

func sanitize(s string) string { return strings.NewReplacer("/", "_", " ", "_").Replace(s) }

// waitFor polls cond until it holds or limit passes (then the test fails
// with cond's last word).
func waitFor(t testing.TB, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// table is the run's results: one row per scenario and renderer.
type table struct {
	mu   sync.Mutex
	rows [][5]string
}

// add records a row: scenario, renderer, result and figures.
func (tb *table) add(scenario, renderer, result, figures string) {
	if tb == nil {
		return // no real VPP: every test skipped (TestMain)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, [5]string{scenario, renderer, env.version, result, figures})
}

func (tb *table) print(w *os.File) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	sort.SliceStable(tb.rows, func(i, j int) bool { return tb.rows[i][0] < tb.rows[j][0] })
	fmt.Fprintf(w, "\n%s.\n", env.heapNote)
	fmt.Fprintln(w, "\n| scenario | renderer | VPP | result | figures |\n| --- | --- | --- | --- | --- |")
	for _, r := range tb.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3], r[4])
	}
}

// record adds the test's row when it ends: passed or failed, with the
// figures it noted.
func record(t *testing.T, scenario, renderer string, figures *[]string) {
	t.Cleanup(func() {
		result := "pass"
		if t.Failed() {
			result = "FAIL"
		} else if t.Skipped() {
			result = "skip"
		}
		env.table.add(scenario, renderer, result, strings.Join(*figures, "; "))
	})
}
