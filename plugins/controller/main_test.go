package controller

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitDeadline is how long a test waits for an outcome before failing: a
// generous bound for a slow shared machine, never a timing assertion.
const waitDeadline = 60 * time.Second

// eventually waits until cond holds, failing the test after waitDeadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// start runs a controller until the test ends.
func start(t testing.TB, c *Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func nsKey(name string) kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResNamespace, Name: name}
}

func ns(name, v string) *kubestate.Namespace {
	return &kubestate.Namespace{Name: name, Labels: map[string]string{"v": v}}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	t.Cleanup(cancel)
	return ctx
}

// put stores o in etcd and returns the revision of the write.
func put(t testing.TB, cli *clientv3.Client, o kubestate.Object) int64 {
	t.Helper()
	b, err := kubestate.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	return putRaw(t, cli, o.Key().String(), string(b))
}

func putRaw(t testing.TB, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	resp, err := cli.Put(ctxT(t), key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

func del(t testing.TB, cli *clientv3.Client, k kubestate.Key) int64 {
	t.Helper()
	resp, err := cli.Delete(ctxT(t), k.String())
	if err != nil {
		t.Fatalf("delete %s: %v", k, err)
	}
	return resp.Header.Revision
}

// etcdObjects is what etcd holds under the watched prefixes, decoded
// (undecodable values left out).
func etcdObjects(t testing.TB, cli *clientv3.Client) map[kubestate.Key]kubestate.Object {
	t.Helper()
	out := map[kubestate.Key]kubestate.Object{}
	for _, r := range kubestate.Resources {
		resp, err := cli.Get(ctxT(t), r.KeyPrefix(), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			k, err := kubestate.ParseKey(string(kv.Key))
			if err != nil {
				continue
			}
			if o, err := kubestate.Decode(k, kv.Value); err == nil {
				out[k] = o
			}
		}
	}
	return out
}

// callLog is an ordered log shared by handlers and appliers.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// recorder is a handler that keeps the view it was given and checks, on
// every event, that the view stays consistent: a ChangeEvent's Prev is
// exactly what the handler holds, and no no-op is delivered.
type recorder struct {
	name    string
	log     *callLog
	handles func(Event) bool

	mu         sync.Mutex
	view       map[kubestate.Key]kubestate.Object
	resyncs    []ResyncKind
	listed     [][]kubestate.Object // each resync's ResyncEvent.Listed
	changes    []*ChangeEvent
	others     []Event
	violations []string
}

func newRecorder(name string, log *callLog) *recorder {
	return &recorder{name: name, log: log, view: map[kubestate.Key]kubestate.Object{}}
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) HandlesEvent(ev Event) bool {
	if r.handles != nil {
		return r.handles(ev)
	}
	_, shutdown := ev.(*ShutdownEvent)
	return !shutdown
}

func (r *recorder) Resync(_ context.Context, ev *ResyncEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.view = cloneObjects(ev.State.Objects)
	r.resyncs = append(r.resyncs, ev.Kind)
	r.listed = append(r.listed, slices.Clone(ev.Listed))
	if r.log != nil {
		r.log.add("%s:resync-%s", r.name, ev.Kind)
	}
	return nil
}

func (r *recorder) Update(_ context.Context, ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *ChangeEvent:
		if cur := r.view[e.Key]; !reflect.DeepEqual(cur, e.Prev) {
			r.violations = append(r.violations, fmt.Sprintf("%s@%d: prev %v, handler holds %v", e.Key, e.Revision, e.Prev, cur))
		}
		if reflect.DeepEqual(e.Prev, e.New) {
			r.violations = append(r.violations, fmt.Sprintf("%s@%d: no-op delivered", e.Key, e.Revision))
		}
		if e.New == nil {
			delete(r.view, e.Key)
		} else {
			r.view[e.Key] = e.New
		}
		c := *e // the controller reuses its ChangeEvent
		r.changes = append(r.changes, &c)
		if r.log != nil {
			r.log.add("%s:change:%s", r.name, e.Key.Name)
		}
	default:
		r.others = append(r.others, ev)
		if r.log != nil {
			r.log.add("%s:%s", r.name, ev.EventName())
		}
	}
	return nil
}

func cloneObjects(m map[kubestate.Key]kubestate.Object) map[kubestate.Key]kubestate.Object {
	out := make(map[kubestate.Key]kubestate.Object, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (r *recorder) snapshot() (view map[kubestate.Key]kubestate.Object, resyncs []ResyncKind, changes []*ChangeEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneObjects(r.view), slices.Clone(r.resyncs), slices.Clone(r.changes)
}

func (r *recorder) holds(k kubestate.Key, o kubestate.Object) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return reflect.DeepEqual(r.view[k], o)
}

func (r *recorder) sawResync(kind ResyncKind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.resyncs, kind)
}

func (r *recorder) checkConsistent(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Error(v)
	}
}

// viewEquals tells whether the handler's view is what etcd holds.
func (r *recorder) viewEquals(t testing.TB, cli *clientv3.Client) bool {
	want := etcdObjects(t, cli)
	r.mu.Lock()
	defer r.mu.Unlock()
	return reflect.DeepEqual(r.view, want)
}

// applier records its calls; fail, when set, decides the outcome of each.
type applier struct {
	log  *callLog
	mu   sync.Mutex
	full []bool
	fail func(n int) error
}

func (a *applier) Apply(_ context.Context, full bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.full = append(a.full, full)
	if a.log != nil {
		a.log.add("apply:%t", full)
	}
	if a.fail != nil {
		return a.fail(len(a.full))
	}
	return nil
}

func (a *applier) calls() []bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.full)
}

// gate is a handler that blocks in Update on a chosen key until released,
// holding the loop so that producers queue up behind it.
type gate struct {
	key     kubestate.Key
	entered chan struct{}
	release chan struct{}
}

func newGate(k kubestate.Key) *gate {
	return &gate{key: k, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Name() string                               { return "gate" }
func (g *gate) HandlesEvent(ev Event) bool                 { _, ok := ev.(*ChangeEvent); return ok }
func (g *gate) Resync(context.Context, *ResyncEvent) error { return nil }
func (g *gate) Update(ctx context.Context, ev Event) error {
	if ev.(*ChangeEvent).Key != g.key {
		return nil
	}
	close(g.entered)
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return nil
}

// logSink keeps log records for assertions.
type logSink struct {
	mu   sync.Mutex
	recs []string
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *logSink) WithGroup(string) slog.Handler            { return s }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	s.mu.Lock()
	s.recs = append(s.recs, b.String())
	s.mu.Unlock()
	return nil
}

// has tells whether a record at level holds every one of parts.
func (s *logSink) has(level slog.Level, parts ...string) bool { return s.count(level, parts...) > 0 }

// count is the number of records at level that hold every one of parts.
func (s *logSink) count(level slog.Level, parts ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
next:
	for _, r := range s.recs {
		if !strings.HasPrefix(r, level.String()+" ") {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// testEtcd starts an embedded etcd and returns a client for it.
func testEtcd(t testing.TB) (*etcdtest.Server, *clientv3.Client) {
	t.Helper()
	srv := etcdtest.Start(t)
	return srv, srv.Client()
}
