package vpp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/core"
	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

func TestMain(m *testing.M) {
	RouteGovppLogs(slog.New(slog.DiscardHandler)) // govpp complains about replayed breakdowns
	goleak.VerifyTestMain(m)
}

// events records connection events.
type events struct{ ch chan Event }

func newEvents() *events { return &events{ch: make(chan Event, 64)} }

func (e *events) add(ev Event) {
	select {
	case e.ch <- ev:
	default: // a test not reading events must not block the connection
	}
}

// pending says whether an event is waiting.
func (e *events) pending() bool { return len(e.ch) > 0 }

// next waits for the next event.
func (e *events) next(t testing.TB) Event {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no connection event within 10s")
		return Event{}
	}
}

// env is a client connected to a simulated VPP through a real govpp
// connection.
type env struct {
	vpp    *sim.VPP
	conn   *Conn
	ifaces *Interfaces
	nat    *NAT44
	events *events
}

func setup(t testing.TB, opts sim.Options) *env {
	t.Helper()
	e := &env{vpp: sim.New(opts), events: newEvents()}
	e.conn = New(Config{
		Adapter:        e.vpp,
		HealthInterval: 10 * time.Millisecond,
		RetryMin:       time.Millisecond,
		RetryMax:       20 * time.Millisecond,
		OnEvent:        e.events.add,
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); e.conn.Close() })
	e.conn.Start(ctx)
	e.ifaces = NewInterfaces(e.conn, nil)
	e.nat = NewNAT44(e.conn, e.ifaces, nil)
	return e
}

func (e *env) connected(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.conn.WaitConnected(ctx); err != nil {
		t.Fatalf("WaitConnected: %v", err)
	}
}

func TestConnectStatusAndEvents(t *testing.T) {
	e := setup(t, sim.Options{Version: "25.02-test"})
	e.connected(t)
	ev := e.events.next(t)
	if ev.Kind != Connected || ev.Restarted || ev.PID != e.vpp.PID() || ev.Version != "25.02-test" {
		t.Errorf("first event %+v", ev)
	}
	st := e.conn.Status()
	if !st.Connected || !st.Simulated || st.Version != "25.02-test" || st.Connects != 1 || st.Restarts != 0 ||
		!strings.Contains(st.Note, "nothing forwards packets") || st.Socket != "" {
		t.Errorf("status %+v", st)
	}
}

// TestRestartDetected restarts the simulated VPP: the client notices,
// reconnects and reports the restart; calls meanwhile fail transiently.
func TestRestartDetected(t *testing.T) {
	e := setup(t, sim.Options{})
	e.connected(t)
	ctx := context.Background()
	if err := e.nat.SetGlobal(ctx, nat44.Global{SessionLimit: 1000, Forwarding: true}); err != nil {
		t.Fatal(err)
	}
	if ev := e.events.next(t); ev.Kind != Connected {
		t.Fatalf("event %+v", ev)
	}
	oldPID := e.vpp.PID()
	e.vpp.Restart()
	if _, err := e.nat.Dump(ctx); err != nil && errors.Is(err, nat44.ErrInvalid) {
		t.Errorf("call during a restart reported invalid: %v", err)
	}
	down := e.events.next(t)
	if down.Kind != Disconnected || down.Err == nil {
		t.Errorf("event after restart %+v", down)
	}
	up := e.events.next(t)
	if up.Kind != Connected || !up.Restarted || up.PID == oldPID {
		t.Errorf("reconnect event %+v (old pid %d)", up, oldPID)
	}
	e.connected(t)
	st, err := e.nat.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Global.SessionLimit != 0 || st.Global.Forwarding {
		t.Errorf("state survived the restart: %+v", st.Global)
	}
	if s := e.conn.Status(); s.Restarts != 1 || s.Connects != 2 || !s.Connected {
		t.Errorf("status %+v", s)
	}
}

// TestIncompatibleVPP connects to a VPP lacking one message.
func TestIncompatibleVPP(t *testing.T) {
	e := setup(t, sim.Options{Without: []string{"nat44_lb_static_mapping_add_del_local"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.conn.WaitConnected(ctx)
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "nat44_lb_static_mapping_add_del_local_") {
		t.Fatalf("WaitConnected: %v", err)
	}
	if ev := e.events.next(t); ev.Kind != Incompatible || !errors.Is(ev.Err, ErrIncompatible) {
		t.Errorf("event %+v", ev)
	}
	if st := e.conn.Status(); st.Connected || !strings.Contains(st.LastError, "nat44_lb_static_mapping_add_del_local") {
		t.Errorf("status %+v", st)
	}
	if _, err := e.nat.Dump(context.Background()); !errors.Is(err, ErrNotConnected) {
		t.Errorf("dump on an incompatible VPP: %v", err)
	}
}

func TestNotConnected(t *testing.T) {
	c := New(Config{Adapter: sim.New(sim.Options{})})
	defer c.Close()
	n := NewNAT44(c, NewInterfaces(c, nil), nil)
	err := n.AddDelPoolAddress(context.Background(), nat44.PoolAddress{IP: ip("10.0.0.1")}, true)
	if !errors.Is(err, ErrNotConnected) || errors.Is(err, nat44.ErrInvalid) {
		t.Errorf("call before Start: %v", err)
	}
}

// TestMissingSocket starts against a socket that does not exist: the
// connection keeps retrying, says why, and closes cleanly.
func TestMissingSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	c := New(Config{Socket: sock, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	c.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.WaitConnected(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitConnected: %v", err)
	}
	st := c.Status()
	if st.Connected || st.Simulated || st.Socket != sock || !strings.Contains(st.LastError, sock) {
		t.Errorf("status %+v", st)
	}
	c.Close()
	c.Close() // idempotent
}

func TestCloseBeforeStart(t *testing.T) {
	c := New(Config{Adapter: sim.New(sim.Options{})})
	c.Close()
	c.Start(context.Background()) // no effect after Close
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.WaitConnected(ctx); !errors.Is(err, ErrNotConnected) {
		t.Errorf("WaitConnected after Close: %v", err)
	}
}

func TestOnCall(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	failed := 0
	v := sim.New(sim.Options{})
	c := New(Config{Adapter: v, OnCall: func(msg string, took time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls[msg]++
		if err != nil {
			failed++
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Close() }()
	c.Start(ctx)
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	n := NewNAT44(c, NewInterfaces(c, nil), nil)
	_ = n.AddDelPoolAddress(ctx, nat44.PoolAddress{IP: ip("10.0.0.1")}, true) // plugin disabled: fails
	if _, err := n.Dump(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["nat44_add_del_address_range"] != 1 || calls["nat44_static_mapping_dump"] != 1 || calls["show_version"] != 1 || failed != 1 {
		t.Errorf("observed %v, %d failed", calls, failed)
	}
}

// TestWatchNoticesNewPID checks the health probe's second signal: a VPP
// answering with another process ID has restarted even if the
// connection survived.
func TestWatchNoticesNewPID(t *testing.T) {
	v := sim.New(sim.Options{})
	conn, err := core.Connect(v)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	c := New(Config{Adapter: v, HealthInterval: time.Millisecond})
	err = c.watch(context.Background(), conn, v.PID()+1, nil)
	if err == nil || !strings.Contains(err.Error(), "restarted") {
		t.Errorf("watch with a stale process ID: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.watch(ctx, conn, v.PID(), nil); err != nil {
		t.Errorf("watch stopped by its context: %v", err)
	}
}

// TestNotVPPSocket connects the socket client to a socket whose server
// hangs up at once: the connection fails with an error naming the socket
// and keeps retrying until closed.
func TestNotVPPSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	c := New(Config{Socket: sock, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	c.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.WaitConnected(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitConnected: %v", err)
	}
	c.Close()
	_ = ln.Close()
	<-accepted
	if st := c.Status(); st.Connected || !strings.Contains(st.LastError, sock) {
		t.Errorf("status %+v", st)
	}
}

// TestOptionalPluginMissing: a VPP without acl_plugin.so, the ACL plugin
// optional, is connected (not incompatible): the event, the status and
// HasPlugin name the missing plugin and the rest works. Restarted with
// the plugin, it has it.
func TestOptionalPluginMissing(t *testing.T) {
	v, evs := sim.New(sim.Options{NoACLPlugin: true}), newEvents()
	var logs syncBuffer
	conn := New(Config{Adapter: v, HealthInterval: 10 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond,
		OnEvent: evs.add, OptionalPlugins: []Plugin{ACLPlugin()}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); conn.Close() })
	conn.Start(ctx)
	nat := NewNAT44(conn, NewInterfaces(conn, nil), nil)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := conn.WaitConnected(wait); err != nil {
		t.Fatalf("WaitConnected: %v", err)
	}
	if ev := evs.next(t); ev.Kind != Connected || !slices.Equal(ev.MissingPlugins, []string{ACLPluginName}) {
		t.Errorf("event %+v", ev)
	}
	if st := conn.Status(); !st.Connected || !slices.Equal(st.MissingPlugins, []string{ACLPluginName}) || conn.HasPlugin(ACLPluginName) || nat.HasACLPlugin() {
		t.Errorf("status %+v, has plugin %v", st, conn.HasPlugin(ACLPluginName))
	}
	if _, err := nat.Dump(ctx); err != nil {
		t.Errorf("NAT44 dump: %v", err)
	}
	if n := strings.Count(logs.String(), "level=WARN msg=\"VPP lacks the optional plugin acl_plugin.so"); n != 1 {
		t.Errorf("%d warnings naming the missing plugin, want 1:\n%s", n, logs.String())
	}
	v.SetACLPlugin(true)
	v.Restart()
	for {
		ev := evs.next(t)
		if ev.Kind == Connected {
			if len(ev.MissingPlugins) != 0 {
				t.Errorf("event %+v", ev)
			}
			break
		}
	}
	if !nat.HasACLPlugin() || len(conn.Status().MissingPlugins) != 0 {
		t.Errorf("after a restart with the plugin: status %+v", conn.Status())
	}
	if _, err := nat.DumpACLs(ctx, "x"); err != nil {
		t.Errorf("acl_dump: %v", err)
	}
}
