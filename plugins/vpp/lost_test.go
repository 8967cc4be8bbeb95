package vpp

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/memclnt"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestCallFailsWhenTheConnectionEnds: a call in flight when VPP goes away
// fails with ErrNotConnected as the connection ends, rather than waiting
// out CallTimeout while the agent reconnects (govpp fails no request in
// flight on a broken connection).
func TestCallFailsWhenTheConnectionEnds(t *testing.T) {
	v := sim.New(sim.Options{ServiceTime: 2 * time.Second}) // the call is in flight for 2 s
	srv, err := v.Serve(filepath.Join(t.TempDir(), "api.sock"))
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	c := New(Config{Socket: srv.Path(), CallTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	c.Start(ctx)
	t.Cleanup(func() { cancel(); c.Close(); _ = srv.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := c.WaitConnected(wctx); err != nil {
		t.Fatalf("WaitConnected: %v", err)
	}

	got := make(chan error, 1)
	go func() {
		_, err := c.ReadOwner(ctx)
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the request sent
	v.Restart()                        // the server ends the connection
	select {
	case err := <-got:
		if !errors.Is(err, ErrNotConnected) {
			t.Errorf("the call in flight ended with %v, want ErrNotConnected", err)
		}
	case <-time.After(45 * time.Second): // bounds a hung test only (CallTimeout is a minute)
		t.Fatal("the call in flight still waits after the connection ended")
	}

	// The same for a pipelined stream's call, on the next connection.
	if err := c.WaitConnected(wctx); err != nil {
		t.Fatalf("WaitConnected after the restart: %v", err)
	}
	st, err := openStream[int](ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	st.send(1, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	popped := make(chan streamCall[int], 1)
	go func() {
		call, _ := st.pop()
		popped <- call
	}()
	time.Sleep(100 * time.Millisecond) // the request sent
	v.Restart()
	select {
	case call := <-popped:
		if !errors.Is(call.err, ErrNotConnected) {
			t.Errorf("the pipelined call in flight ended with %v, want ErrNotConnected", call.err)
		}
	case <-time.After(45 * time.Second): // bounds a hung test only
		t.Fatal("the pipelined call in flight still waits after the connection ended")
	}
}
