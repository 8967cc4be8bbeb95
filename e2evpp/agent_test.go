package e2evpp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/vpp"
)

// agentProc is one running contiv-agent binary, in its node's network
// namespace as a DaemonSet's agent is in its host's.
type agentProc struct {
	n    *node
	cmd  *exec.Cmd
	done chan error
	http string // its REST address, inside the node's namespace
}

// Inside a node's namespace the agent reaches the suite's etcd through a
// forwarder on etcdInNode; its REST API listens on 127.0.0.1:9900+node ID.
const etcdInNode = "127.0.0.1:2379"

// agentConfig is the node's agent configuration: the defaults of
// deploy/examples/agent.yaml but for what the suite's node differs in.
func (n *node) agentConfig(httpAddr string) string {
	// The health servers listen in the node's namespace, where VPP brings
	// the checks (the host interconnect); an agent on another node's VPP
	// (n.sock) serves none, its node's own agent does.
	health := ""
	if n.sock != "" {
		health = "  proxyHealthAddress: \"off\"\n  serviceHealthAddress: 127.0.0.1\n"
	}
	return fmt.Sprintf(`nodeName: %[1]s
log:
  level: debug
controller:
  resyncInterval: 3s
etcd:
  endpoints: [%[2]s]
vpp:
  socket: %[3]s
  simulate: never
  allowUnsupported: %[10]v
http:
  address: %[4]s
%[9]srenderer: %[5]s
routing:
  hostInterconnectInterface: host-vpp1
nodeSync:
  stateFile: %[6]s/node-id
nodeConfig:
- nodeName: %[1]s
  mainInterface: {name: host-eth1, ipCIDR: %[7]s/24}
  gateway: %[8]s
`, n.name, "http://"+etcdInNode, n.apiSocket(), httpAddr, n.s.renderer, n.dir, n.ip(), outsideIP, health, os.Getenv(allowUnsupportedEnv) != "")
}

// startAgent starts the node's agent and waits until it is ready.
func (n *node) startAgent(t *testing.T) {
	t.Helper()
	n.startAgentNoWait(t)
	n.waitReady(t, 90*time.Second)
}

// startAgentNoWait starts the node's agent.
func (n *node) startAgentNoWait(t *testing.T) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", 9900+n.id)
	n.s.forwardEtcd(t, n.netns)
	cfg := filepath.Join(n.dir, "agent.yaml")
	text := n.agentConfig(addr)
	if n.s.configHook != nil {
		text = n.s.configHook(n, text)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// The node's ID is its index: written before the first start, as a
	// node that has run before keeps it.
	if err := noderegistry.WriteState(filepath.Join(n.dir, "node-id"), noderegistry.State{Name: n.name, ID: uint32(n.id)}); err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(n.s.artifact(n.name+"-agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+n.netns, filepath.Join(env.bin, "contiv-agent"), "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if n.recorded() {
		// Node 1's agent records its binary-API calls (record_test.go).
		cmd.Env = append(os.Environ(), vpp.RecordEnv+"="+n.s.recordFile())
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentProc{n: n, cmd: cmd, done: make(chan error, 1), http: addr}
	go func() { a.done <- cmd.Wait(); log.Close() }()
	n.agent = a
}

// stop stops the agent as kubelet does (SIGTERM) and waits for it.
func (a *agentProc) stop(t testing.TB) {
	if a == nil || a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
		t.Errorf("agent %s did not stop within 20 s of SIGINT", a.n.name)
	}
	a.cmd = nil
}

// waitReady waits until the node's agent says it is ready.
func (n *node) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, func() (bool, string) {
		select {
		case err := <-n.agent.done:
			n.agent.done <- err
			t.Fatalf("agent %s exited: %v (log %s)", n.name, err, n.s.artifact(n.name+"-agent.log"))
		default:
		}
		var st struct {
			Ready    bool     `json:"ready"`
			NotReady []string `json:"notReady"`
		}
		if err := n.agent.get("/v1/status", &st); err != nil {
			return false, err.Error()
		}
		return st.Ready, fmt.Sprintf("agent %s not ready: %v", n.name, st.NotReady)
	})
}

// client is an HTTP client whose connections are made inside the agent's
// namespace.
func (a *agentProc) client() *http.Client { return nsClient(a.n.netns) }

// nsClient is an HTTP client whose connections are made inside namespace
// ns.
func nsClient(ns string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = inNetns(ns, func() (err error) {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
}

// get reads a JSON view of the agent's REST API into v.
func (a *agentProc) get(path string, v any) error {
	resp, err := a.client().Get("http://" + a.http + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// writes is the number of binary-API calls the agent made that change
// VPP's state (every message but dumps, gets, pings and shows), from its
// contiv_vpp_calls_total metric.
func (a *agentProc) writes(t testing.TB) int {
	t.Helper()
	resp, err := a.client().Get("http://" + a.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return countWrites(resp.Body)
}

// countWrites sums, in a Prometheus text exposition, the
// contiv_vpp_calls_total samples of messages that change VPP's state.
func countWrites(r io.Reader) int {
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "contiv_vpp_calls_total{") {
			continue
		}
		// The metric's label is "msg" (agent/vppwire.go).
		i := strings.Index(line, `msg="`)
		if i < 0 {
			continue
		}
		msg := line[i+len(`msg="`):]
		msg = msg[:strings.IndexByte(msg, '"')]
		if isRead(msg) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			n += int(v)
		}
	}
	return n
}

// isRead tells a binary-API message that changes nothing in VPP.
func isRead(msg string) bool {
	for _, s := range []string{"_dump", "_get", "control_ping", "show_", "want_", "memclnt", "sockclnt", "get_", "_details", "cli_inband"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// logMark is where the node's agent log ends now: refusals reads from it.
func (n *node) logMark() int64 { return fileSize(n.s.artifact(n.name + "-agent.log")) }

// refusals are the warnings the node's agent logged since mark about a
// call VPP answered with an error (a VPP refusal, not a lost connection):
// after a VPP restart the agent must program what the new VPP lacks and
// nothing it already holds (VPP: -81 "Value already exists").
func (n *node) refusals(mark int64) []string {
	b, err := os.ReadFile(n.s.artifact(n.name + "-agent.log"))
	if err != nil || int64(len(b)) <= mark {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b[mark:]), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "VPPApiError") {
			out = append(out, line)
		}
	}
	return out
}

// forwardEtcd makes the suite's etcd reachable at etcdInNode inside
// namespace ns (once per namespace): a listener opened in the namespace
// whose connections are relayed to etcd in the root namespace.
func (s *suite) forwardEtcd(t *testing.T, ns string) {
	t.Helper()
	if s.etcdFwd[ns] {
		return
	}
	var l net.Listener
	if err := inNetns(ns, func() (err error) {
		l, err = net.Listen("tcp", etcdInNode)
		return err
	}); err != nil {
		t.Fatalf("%s: etcd's forwarder: %v", ns, err)
	}
	s.etcdFwd[ns] = true
	target := strings.TrimPrefix(s.etcd.Endpoint(), "http://")
	s.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relay(c, target)
		}
	}()
}

// relay copies c to a new connection to target and back until either
// side closes.
func relay(c net.Conn, target string) {
	defer c.Close()
	u, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}
