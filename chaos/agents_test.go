package chaos

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// node is one agent on its own simulated VPP.
type node struct {
	name string
	cfg  contivconf.Config
	vpp  *sim.VPP
	a    *agent.Agent
	logs *tailBuffer
	stop func() error
}

// agentConfig is the configuration of the agent on node name: every etcd
// endpoint, its own state file, a free HTTP port, short backoffs.
func agentConfig(t *testing.T, name string, endpoints []string) contivconf.Config {
	t.Helper()
	cfg := contivconf.Defaults()
	cfg.NodeName = name
	cfg.Etcd.Endpoints = endpoints
	cfg.NodeSync.StateFile = filepath.Join(t.TempDir(), "node-id")
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Log.Level = contivconf.LogLevelWarn
	short := contivconf.Backoff{Initial: contivconf.Duration(20 * time.Millisecond), Max: contivconf.Duration(200 * time.Millisecond)}
	cfg.Controller.HealingBackoff = short
	cfg.VPP.ReconnectBackoff = short
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startNode starts the agent of node name and waits until it is ready; it
// is stopped when the test ends (before the etcd cluster, started earlier).
func startNode(t *testing.T, name string, endpoints []string) *node {
	t.Helper()
	n := &node{name: name, cfg: agentConfig(t, name, endpoints), vpp: sim.New(sim.Options{}), logs: &tailBuffer{max: 16 << 10}}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{Config: n.cfg, Dataplane: agent.Simulated(n.vpp), LogOutput: n.logs})
	if err != nil {
		cancel()
		t.Fatalf("agent %s: %v", name, err)
	}
	n.a = a
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	n.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := n.stop(); err != nil {
			t.Errorf("agent %s stopped with %v", name, err)
		}
		if t.Failed() {
			t.Logf("agent %s log tail:\n%s", name, n.logs)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("agent %s not ready after 60s; log tail:\n%s", name, n.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// lines is the node's simulated VPP state, one line per object.
func (n *node) lines() []string { return n.vpp.Snapshot().Lines() }

// listAll reads the cluster state from etcd, retrying while the cluster
// recovers (bounded).
func listAll(t *testing.T, cli *clientv3.Client) *kubestate.Listing {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l, err := kubestate.ListAll(ctx, cli)
		cancel()
		if err == nil {
			if len(l.Bad) > 0 {
				t.Fatalf("etcd holds undecodable values: %v", l.Bad)
			}
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("listing etcd: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expected renders, for every node, what its VPP should hold for the
// objects of l.
func expected(t *testing.T, nodes []*node, l *kubestate.Listing) map[string][]string {
	t.Helper()
	objs := slices.Collect(maps.Values(l.Objects))
	out := make(map[string][]string, len(nodes))
	for _, n := range nodes {
		r, err := offline.Render(context.Background(), offline.Params{Objects: objs, Config: n.cfg, NodeID: n.a.NodeID()})
		if err != nil {
			t.Fatalf("render for %s: %v", n.name, err)
		}
		if len(r.Failures) > 0 {
			t.Fatalf("render for %s: the simulated VPP refused %v", n.name, r.Failures)
		}
		out[n.name] = r.Applied.Lines()
	}
	return out
}

// converged tells whether every node's VPP holds want; why names the
// first node that does not.
func converged(nodes []*node, want map[string][]string) (ok bool, why string) {
	for _, n := range nodes {
		if got := n.lines(); !slices.Equal(got, want[n.name]) {
			return false, fmt.Sprintf("%s differs:\n%s", n.name, diff(got, want[n.name]))
		}
	}
	return true, ""
}

// waitConverged waits until every node's VPP holds want and returns when
// that was first seen; it fails the test after limit (a guard, not a
// timing assertion).
func waitConverged(t *testing.T, nodes []*node, want map[string][]string, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := converged(nodes, want)
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				t.Logf("%s controller: %+v", n.name, n.a.Controller().Status())
			}
			t.Fatalf("not converged after %v: %s", limit, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// diff lists the lines only in got (+) and only in want (-), at most 20.
func diff(got, want []string) string {
	var b strings.Builder
	n := 0
	add := func(sign string, l string) {
		if n < 20 {
			fmt.Fprintf(&b, "%s %s\n", sign, l)
		}
		n++
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			add("+", l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			add("-", l)
		}
	}
	if n > 20 {
		fmt.Fprintf(&b, "... %d more\n", n-20)
	}
	return b.String()
}

// tailBuffer keeps the last max bytes written to it (an agent's log, shown
// when the test fails).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
