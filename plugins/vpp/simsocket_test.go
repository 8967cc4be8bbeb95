package vpp

import (
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestServedVPPRestart connects the agent's Conn through govpp's socket
// client to the simulated VPP served on a socket, restarts the VPP, then
// stops and serves it again: each time the connection is lost and found
// again, the restart reported with the new process ID.
func TestServedVPPRestart(t *testing.T) {
	ev := newEvents()
	v, srv, n := socketEnv(t, sim.Options{}, Config{
		OnEvent: ev.add, HealthInterval: time.Hour, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond,
	})
	if e := ev.next(t); e.Kind != Connected || e.PID != v.PID() || e.Version != sim.DefaultVersion {
		t.Fatalf("first event %+v", e)
	}
	if st := n.conn.Status(); st.Simulated || st.Socket != srv.Path() {
		t.Errorf("status over the socket %+v", st)
	}
	old := v.PID()
	v.Restart()
	if e := ev.next(t); e.Kind != Disconnected {
		t.Fatalf("after a VPP restart: %+v", e)
	}
	if e := ev.next(t); e.Kind != Connected || !e.Restarted || e.PID == old || e.PID != v.PID() {
		t.Fatalf("after reconnecting: %+v (pid was %d)", e, old)
	}
	// The socket goes away and comes back with the same VPP.
	_ = srv.Close()
	if e := ev.next(t); e.Kind != Disconnected {
		t.Fatalf("after the socket closed: %+v", e)
	}
	again, err := v.Serve(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = again.Close() }()
	if e := ev.next(t); e.Kind != Connected || e.Restarted {
		t.Fatalf("after serving again: %+v", e)
	}
}
