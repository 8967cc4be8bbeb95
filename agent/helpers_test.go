package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.fd.io/govpp/api"

	"contiv.dev/vpp/agent/healthcheck"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// tb is what the harness needs of a test; *testing.T and *rapid.T have it.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// How the harness waits. The state counts as settled when the agent's
// handlers have taken in the test's last write, nothing is queued or
// scheduled, the agent is connected to the simulated VPP's current process
// and has resynced since connecting, and the simulated VPP's state and
// write count have not changed for quietFor (which also covers the
// moments between a batch being taken from the queue and applied), or
// for lagQuietFor when the last write cannot be seen taken in (see
// settled). Deadlines are generous: they are only reached when something
// is wrong.
const (
	quietFor    = 250 * time.Millisecond
	lagQuietFor = 3 * time.Second
	pollEvery   = 15 * time.Millisecond
	settleLimit = 60 * time.Second
)

// harness runs node-1's agent against a real etcd and a simulated VPP that
// outlives the agent's restarts, and writes cluster objects into etcd the
// way contivctl load does.
type harness struct {
	t    tb
	cfg  contivconf.Config
	vpp  *sim.VPP
	cli  *clientv3.Client
	kv   *revKV
	w    *kubestate.Writer
	logs *tailBuffer

	agent *Agent
	stop  func() error
	// srv serves vpp on a unix socket in sockDir.
	srv     *sim.Server
	sockDir string

	// injected counts the calls failed by setFaults.
	injected atomic.Int64
	// watchSeen is the newest revision seen queued by the agent's watcher.
	watchSeen int64
}

// newHarness connects to etcd at endpoint and starts an agent configured
// by cfg against a new simulated VPP. close must be called.
func newHarness(t tb, endpoint string, cfg contivconf.Config) *harness {
	t.Helper()
	return newHarnessWith(t, endpoint, cfg, sim.Options{})
}

// newHarnessWith is newHarness with a simulated VPP made with opts.
func newHarnessWith(t tb, endpoint string, cfg contivconf.Config, opts sim.Options) *harness {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	kv := &revKV{KV: cli}
	h := &harness{t: t, cfg: cfg, vpp: sim.New(opts), cli: cli, kv: kv, w: kubestate.NewWriter(kv, nil), logs: &tailBuffer{max: 16 << 10}}
	// The agent reaches the simulated VPP as it reaches a real one: govpp's
	// socket client on a unix socket.
	dir, err := os.MkdirTemp("", "contiv-vpp-")
	if err != nil {
		t.Fatalf("socket directory: %v", err)
	}
	h.sockDir = dir
	if h.srv, err = h.vpp.Serve(filepath.Join(dir, "api.sock")); err != nil {
		t.Fatalf("serving the simulated VPP: %v", err)
	}
	h.cfg.VPP.Socket = h.srv.Path()
	h.markSynced()
	h.startAgent()
	return h
}

// markSynced writes the markers of a complete reflector output (as
// contiv-ksr's sweep does): the agent takes no listing without them.
func (h *harness) markSynced() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kubestate.MarkSynced(ctx, h.cli, "test", 0); err != nil {
		h.t.Fatalf("sync marker: %v", err)
	}
}

// close stops the agent, the simulated VPP's server and the etcd client.
func (h *harness) close() {
	if h.stop != nil {
		_ = h.stop()
		h.stop = nil
	}
	_ = h.srv.Close()
	h.vpp.Close()
	_ = os.RemoveAll(h.sockDir)
	_ = h.cli.Close()
}

// startAgent starts an agent against the harness's simulated VPP and waits
// until it is ready.
func (h *harness) startAgent() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, Options{Config: h.cfg, Dataplane: SimulatedOverSocket(h.vpp), LogOutput: h.logs})
	if err != nil {
		cancel()
		h.t.Fatalf("agent: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	h.agent = a
	h.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	deadline := time.Now().Add(settleLimit)
	for !a.Ready() {
		if time.Now().After(deadline) {
			h.t.Fatalf("agent not ready after %v: %v\nlog tail:\n%s", settleLimit, a.notReady(), h.logs)
		}
		time.Sleep(pollEvery)
	}
}

// stopAgent stops the agent and checks that it stopped cleanly.
func (h *harness) stopAgent() {
	h.t.Helper()
	err := h.stop()
	h.stop = nil
	if err != nil {
		h.t.Fatalf("agent stopped with %v", err)
	}
}

// restartAgent stops the agent and starts a new one; the call counters
// are reset in between, so that Writes counts the new agent's writes.
func (h *harness) restartAgent() {
	h.t.Helper()
	h.stopAgent()
	h.vpp.ResetCalls()
	h.startAgent()
}

// putYAML puts the objects of a YAML document into etcd and waits until
// the agent is quiet; it returns them.
func (h *harness) putYAML(doc string) []kubestate.Object {
	h.t.Helper()
	objs, err := kubestate.LoadYAML(strings.NewReader(doc))
	if err != nil {
		h.t.Fatalf("%v", err)
	}
	ops := make([]kubestate.Op, 0, len(objs))
	for _, o := range objs {
		ops = append(ops, kubestate.PutOp(o))
	}
	h.apply(ops)
	h.waitQuiet()
	return objs
}

// apply writes ops into etcd through kubestate's Writer, the puts first:
// like contivctl load, it skips the puts of objects stored with the same
// bytes, so that every revision the harness waits for is a change the
// agent takes in.
func (h *harness) apply(ops []kubestate.Op) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var puts []kubestate.Object
	var dels []kubestate.Op
	for _, op := range ops {
		if op.Object != nil {
			puts = append(puts, op.Object)
		} else {
			dels = append(dels, op)
		}
	}
	if len(puts) > 0 {
		if err := retryTimeout(func() error { _, err := h.w.PutChanged(ctx, puts); return err }); err != nil {
			h.t.Fatalf("writing %d objects into etcd: %v", len(puts), err)
		}
	}
	if len(dels) > 0 {
		dels = h.podKeys(ctx, dels)
		if err := retryTimeout(func() error { return h.w.Apply(ctx, dels) }); err != nil {
			h.t.Fatalf("deleting %d objects from etcd: %v", len(dels), err)
		}
	}
}

// retryTimeout calls write again, up to twice, when the embedded etcd
// answers "request timed out" (a loaded test machine; the write may or may
// not have been committed). Both of apply's writes are safe to repeat:
// PutChanged skips what is stored already, a delete of a missing key does
// nothing.
func retryTimeout(write func() error) error {
	err := write()
	for i := 0; i < 2 && errors.Is(err, rpctypes.ErrTimeout); i++ {
		err = write()
	}
	return err
}

// podKeys replaces the deletes of pods, named without their node, by the
// deletes of the keys they are stored under (a pod's key holds its node).
func (h *harness) podKeys(ctx context.Context, dels []kubestate.Op) []kubestate.Op {
	h.t.Helper()
	resp, err := h.cli.Get(ctx, kubestate.ResPod.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		h.t.Fatalf("listing pods: %v", err)
	}
	out := make([]kubestate.Op, 0, len(dels))
	for _, op := range dels {
		if op.Key.Resource != kubestate.ResPod {
			out = append(out, op)
			continue
		}
		for _, kv := range resp.Kvs {
			if k, err := kubestate.ParseKey(string(kv.Key)); err == nil && k.ID() == op.Key.ID() {
				out = append(out, kubestate.DeleteOp(k))
			}
		}
	}
	return out
}

// setFaults makes the simulated VPP fail the given fraction of its
// state-changing calls with a transient error, counting them in injected.
// The choice is deterministic for a seed and a sequence of calls.
func (h *harness) setFaults(rate float64, seed uint64) {
	if rate <= 0 {
		h.vpp.SetFaults(sim.Faults{})
		return
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	h.vpp.SetFaults(sim.Faults{Rate: 1, Match: func(api.Message) bool {
		// Called for every state-changing call, under the simulated
		// VPP's lock: rng needs no lock of its own.
		if rng.Float64() >= rate {
			return false
		}
		h.injected.Add(1)
		return true
	}})
}

// fingerprint is what must stay still for the state to count as quiet.
type fingerprint struct {
	lines   string
	writes  int
	batches uint64
}

// settled tells whether the agent is idle, and whether it has caught up
// with the test's last write; the fingerprint is read either way.
//
// Catching up is judged from two revisions, neither enough alone: the
// handlers' (which stays behind when the last changes to a key coalesce
// into a no-op) and the last one the watcher queued (which can go back,
// as the watcher merges one watch per resource); the newest the harness
// saw of the latter counts.
func (h *harness) settled() (fp fingerprint, idle, caughtUp bool, why string) {
	a := h.agent
	st := a.ctl.Status()
	vs := a.conn.Status()
	fp = fingerprint{lines: strings.Join(h.vpp.Snapshot().Lines(), "\n"), writes: h.vpp.Writes(), batches: st.Batches}
	h.watchSeen = max(h.watchSeen, st.WatchRevision)
	caughtUp = st.Revision >= h.kv.rev() || h.watchSeen >= h.kv.rev()
	switch {
	case !st.Ready:
		why = "controller not ready"
	case st.QueueDepth > 0:
		why = fmt.Sprintf("%d events queued", st.QueueDepth)
	case st.HealingPending:
		why = "healing resync pending"
	case !vs.Connected || vs.PID != h.vpp.PID():
		why = fmt.Sprintf("not connected to VPP pid %d (connected %v to pid %d)", h.vpp.PID(), vs.Connected, vs.PID)
	case !st.LastResync.After(vs.Since):
		why = "no resync since VPP connected"
	}
	idle = why == ""
	if idle && !caughtUp {
		why = fmt.Sprintf("handlers at revision %d, watcher at %d, test wrote revision %d", st.Revision, h.watchSeen, h.kv.rev())
	}
	return fp, idle, caughtUp, why
}

// waitQuiet waits until the agent is idle and the simulated VPP's state
// has stopped changing for quietFor, or for lagQuietFor when the agent
// does not seem to have caught up with the test's last write (see
// settled: the revisions can miss it when it coalesced into a no-op).
func (h *harness) waitQuiet() {
	h.t.Helper()
	deadline := time.Now().Add(settleLimit)
	var last fingerprint
	var since time.Time
	for {
		fp, idle, caughtUp, why := h.settled()
		now := time.Now()
		need := quietFor
		if !caughtUp {
			need = lagQuietFor
		}
		switch {
		case !idle:
			since = time.Time{}
		case since.IsZero() || fp != last:
			since, last = now, fp
		case now.Sub(since) >= need:
			return
		}
		if now.After(deadline) {
			if why == "" {
				why = "the simulated VPP's state kept changing"
			}
			h.t.Fatalf("not quiet after %v: %s; controller %+v\nlog tail:\n%s", settleLimit, why, h.agent.ctl.Status(), h.logs)
		}
		time.Sleep(pollEvery)
	}
}

// eventually waits until cond holds (false if it does not within limit),
// then until the state is quiet, and reports whether cond still holds.
func (h *harness) eventually(limit time.Duration, cond func() bool) bool {
	h.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	h.waitQuiet()
	return cond()
}

// lines is the simulated VPP's NAT44 state, one line per object.
func (h *harness) lines() []string { return h.vpp.Snapshot().Lines() }

// revKV records the etcd revision of the last transaction that changed
// something, so that the harness can wait for the agent's watch to reach
// it. Only the Writer's transactions go through it.
type revKV struct {
	clientv3.KV
	last atomic.Int64
}

func (k *revKV) rev() int64 { return k.last.Load() }

func (k *revKV) Txn(ctx context.Context) clientv3.Txn { return &revTxn{Txn: k.KV.Txn(ctx), kv: k} }

type revTxn struct {
	clientv3.Txn
	kv *revKV
}

func (t *revTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *revTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *revTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

// Commit commits and notes the revision when the transaction wrote: a
// transaction that only deleted absent keys leaves the revision alone.
func (t *revTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err != nil || resp.Header == nil {
		return resp, err
	}
	wrote := false
	for _, r := range resp.Responses {
		if r.GetResponsePut() != nil || r.GetResponseDeleteRange().GetDeleted() > 0 {
			wrote = true
		}
	}
	if wrote {
		for {
			old := t.kv.last.Load()
			if resp.Header.Revision <= old || t.kv.last.CompareAndSwap(old, resp.Header.Revision) {
				break
			}
		}
	}
	return resp, err
}

// tailBuffer keeps the last max bytes written to it (the agent's log, shown
// when a wait fails).
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

// observed is inner's apply step watched by obs, as the controller runs
// it (controller.Observe).
type observed struct {
	inner controller.Applier
	obs   []controller.ApplyObserver
}

func (o observed) Apply(ctx context.Context, full bool) error {
	return controller.Observe(o.obs, full, func() error { return o.inner.Apply(ctx, full) })
}

var loopback = netip.MustParseAddr("127.0.0.1")

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// hcGet asks the health check on port; code 0 when nothing answers.
func hcGet(t *testing.T, port uint16) (int, healthcheck.ServiceResponse, http.Header) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(int(port)) + "/")
	if err != nil {
		return 0, healthcheck.ServiceResponse{}, nil
	}
	defer resp.Body.Close()
	var body healthcheck.ServiceResponse
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return resp.StatusCode, body, resp.Header
}

// ifName is the interface the simulated CNI gives a pod.
func ifName(namespace, pod string) string { return simnode.PodInterface(namespace, pod) }
