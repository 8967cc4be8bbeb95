package etcdproxy

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// waitDeadline bounds every wait: generous for a shared machine, never a
// timing assertion.
const waitDeadline = 60 * time.Second

// historyCheck is the controllers' Params.HistoryCheck here.
const historyCheck = 50 * time.Millisecond

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	t.Cleanup(cancel)
	return ctx
}

// startProxy serves a proxy on addr in front of srv, with a member client
// of its own; it is closed when the test ends (if not before).
func startProxy(t *testing.T, srv *etcdtest.Server, addr string) *Proxy {
	t.Helper()
	p, err := Start(context.Background(), srv.Client(), addr)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(p.Close) })
	return p
}

// clientOf is an agent's etcd client (internal/etcd.NewClient, as the agent
// makes it) of the proxy at endpoint.
func clientOf(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func put(t *testing.T, cli *clientv3.Client, o kubestate.Object) int64 {
	t.Helper()
	b, err := kubestate.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Put(ctxT(t), o.Key().String(), string(b))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func ns(name, v string) *kubestate.Namespace {
	return &kubestate.Namespace{Name: name, Labels: map[string]string{"v": v}}
}

// recorder is a controller handler keeping the view it was handed.
type recorder struct {
	mu      sync.Mutex
	objs    map[kubestate.Key]kubestate.Object
	resyncs map[controller.ResyncKind]int
}

func newRecorder() *recorder {
	return &recorder{objs: map[kubestate.Key]kubestate.Object{}, resyncs: map[controller.ResyncKind]int{}}
}

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) HandlesEvent(ev controller.Event) bool {
	_, ok := ev.(*controller.ChangeEvent)
	return ok
}

func (r *recorder) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resyncs[ev.Kind]++
	if ev.State != nil {
		r.objs = maps.Clone(ev.State.Objects)
	}
	return nil
}

func (r *recorder) Update(_ context.Context, ev controller.Event) error {
	c := ev.(*controller.ChangeEvent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.New == nil {
		delete(r.objs, c.Key)
	} else {
		r.objs[c.Key] = c.New
	}
	return nil
}

// holds tells whether the view holds o (by its encoding).
func (r *recorder) holds(o kubestate.Object) bool {
	r.mu.Lock()
	got, ok := r.objs[o.Key()]
	r.mu.Unlock()
	if !ok {
		return false
	}
	a, _ := kubestate.Encode(got)
	b, _ := kubestate.Encode(o)
	return string(a) == string(b)
}

func (r *recorder) count(k controller.ResyncKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resyncs[k]
}

// runController runs the agent's controller (its real watcher) on cli,
// with rec as its handler, until the test ends; it requires a complete
// reflector output, as the agent does, and checks etcd's history every
// historyCheck (which must never make it list a history it kept).
func runController(t *testing.T, cli *clientv3.Client, rec *recorder) *controller.Controller {
	t.Helper()
	ctl := controller.New(controller.Params{
		Client: cli, Handlers: []controller.Handler{rec}, RequireSynced: true,
		HealingBackoff: controller.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		HistoryCheck:   historyCheck,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	eventually(t, "controller ready", ctl.Ready)
	return ctl
}

// has tells whether the view holds key k.
func (r *recorder) has(k kubestate.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.objs[k]
	return ok
}
