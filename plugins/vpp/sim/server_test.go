package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"
)

// serve serves v on a fresh socket; the server is closed at the test's end.
func serve(t *testing.T, v *VPP) *Server {
	t.Helper()
	s, err := v.Serve(filepath.Join(t.TempDir(), "api.sock"))
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dial connects govpp's real socket client to path.
func dial(t *testing.T, path string) *core.Connection {
	t.Helper()
	sc := socketclient.NewVppClient(path)
	sc.SetClientName("server-test")
	sc.SetConnectTimeout(5 * time.Second)
	conn, err := core.Connect(sc)
	if err != nil {
		t.Fatalf("connecting over the socket: %v", err)
	}
	return conn
}

// TestServeSocketClient drives the served VPP through govpp's socket
// client: the handshake's message table passes the compatibility check,
// and writes, dumps and control_ping work as in-process.
func TestServeSocketClient(t *testing.T) {
	v := New(Options{ServiceTime: 100 * time.Microsecond})
	if _, err := v.AddInterface("eth0", "main"); err != nil {
		t.Fatal(err)
	}
	s := serve(t, v)
	conn := dial(t, s.Path())
	defer conn.Disconnect()

	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	err = ch.CheckCompatiblity(&nat44_ed.Nat44AddDelStaticMappingV2{}, &nat44_ed.Nat44StaticMappingDump{},
		&interfaces.SwInterfaceDump{}, &vpe.ShowVersion{}, &memclnt.ControlPing{})
	ch.Close()
	if err != nil {
		t.Fatalf("compatibility check: %v", err)
	}
	// A message the VPP lacks fails the check, as with a real VPP.
	lacking := New(Options{Without: []string{"nat44_ed_plugin_enable_disable"}})
	other := dial(t, serve(t, lacking).Path())
	ch, _ = other.NewAPIChannel()
	if err := ch.CheckCompatiblity(&nat44_ed.Nat44EdPluginEnableDisable{}); err == nil {
		t.Errorf("compatibility check passed for a message the VPP lacks")
	}
	ch.Close()
	other.Disconnect()

	ping := &memclnt.ControlPingReply{}
	call(t, conn, &memclnt.ControlPing{}, ping)
	if ping.VpePID != v.PID() {
		t.Errorf("control_ping pid %d, want %d", ping.VpePID, v.PID())
	}
	ver := &vpe.ShowVersionReply{}
	call(t, conn, &vpe.ShowVersion{}, ver)
	if ver.Version != DefaultVersion {
		t.Errorf("version %q", ver.Version)
	}
	enable(t, conn)
	if rv := call(t, conn, static("10.96.0.1", 80, "10.1.1.2", true, 0), &nat44_ed.Nat44AddDelStaticMappingV2Reply{}); rv != 0 {
		t.Fatalf("static mapping add: %v", rv)
	}
	if rv := call(t, conn, static("10.96.0.1", 80, "10.1.1.2", true, 0), &nat44_ed.Nat44AddDelStaticMappingV2Reply{}); rv != api.VALUE_EXIST {
		t.Errorf("duplicate static mapping: %v, want %v", rv, api.VALUE_EXIST)
	}
	got := dump(t, conn, &nat44_ed.Nat44StaticMappingDump{})
	if len(got) != 1 || got[0].(*nat44_ed.Nat44StaticMappingDetails).ExternalPort != 80 {
		t.Errorf("static mappings dumped over the socket: %+v", got)
	}
	ifs := dump(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
	if len(ifs) != 2 || ifs[1].(*interfaces.SwInterfaceDetails).InterfaceName != "eth0" {
		t.Errorf("interfaces dumped over the socket: %+v", ifs)
	}
	if n := v.Calls("nat44_add_del_static_mapping_v2"); n != 2 {
		t.Errorf("the VPP counted %d static mapping calls, want 2", n)
	}
}

// TestServeInterfaceEvents registers for interface events over the socket
// and receives the events of an interface the CNI creates and deletes.
func TestServeInterfaceEvents(t *testing.T) {
	v := New(Options{})
	conn := dial(t, serve(t, v).Path())
	defer conn.Disconnect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := conn.WatchEvent(ctx, &interfaces.SwInterfaceEvent{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if rv := call(t, conn, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 77}, &interfaces.WantInterfaceEventsReply{}); rv != 0 {
		t.Fatalf("want_interface_events: %v", rv)
	}
	idx, err := v.AddInterface("pod1", "pod")
	if err != nil {
		t.Fatal(err)
	}
	next := func() *interfaces.SwInterfaceEvent {
		select {
		case m := <-w.Events():
			return m.(*interfaces.SwInterfaceEvent)
		case <-ctx.Done():
			t.Fatal("no interface event over the socket")
		}
		return nil
	}
	if e := next(); uint32(e.SwIfIndex) != idx || e.Deleted || e.PID != 77 {
		t.Errorf("event for the new interface: %+v", e)
	}
	if err := v.DelInterface("pod1"); err != nil {
		t.Fatal(err)
	}
	if e := next(); uint32(e.SwIfIndex) != idx || !e.Deleted {
		t.Errorf("event for the deleted interface: %+v", e)
	}
}

// TestServePipelined keeps many requests in flight on one stream with a
// service time: every answer comes back, in order.
func TestServePipelined(t *testing.T) {
	v := New(Options{ServiceTime: time.Millisecond})
	conn := dial(t, serve(t, v).Path())
	defer conn.Disconnect()
	enable(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := conn.NewStream(ctx, core.WithReplySize(256))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	const n = 200
	for i := range n {
		// Every third request repeats the previous one: VALUE_EXIST.
		port := uint16(1000 + i - i%3/2)
		if err := st.SendMsg(static("10.96.0.1", port, "10.1.1.2", true, nat_types.NAT_IS_OUT2IN_ONLY)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		m, err := st.RecvMsg()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		want := api.VPPApiError(0)
		if i%3 == 2 {
			want = api.VALUE_EXIST
		}
		if rv := api.VPPApiError(m.(*nat44_ed.Nat44AddDelStaticMappingV2Reply).Retval); rv != want {
			t.Errorf("answer %d: %v, want %v", i, rv, want)
		}
	}
	if got := len(v.Snapshot().Mappings); got != n-n/3 {
		t.Errorf("%d mappings, want %d", got, n-n/3)
	}
}

// TestServeRestarts covers both ways a VPP comes back: the server closed
// and served again (the socket file replaced, the state kept), and a VPP
// restart under a live server (the client's connection closed, the socket
// file created anew, the state gone).
func TestServeRestarts(t *testing.T) {
	v := New(Options{})
	s := serve(t, v)
	conn := dial(t, s.Path())
	enable(t, conn)
	conn.Disconnect() // sockclnt_delete
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := os.Stat(s.Path()); !os.IsNotExist(err) {
		t.Errorf("socket file left after Close: %v", err)
	}
	s2, err := v.Serve(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	if _, err := os.Stat(s.Path()); err != nil {
		t.Fatalf("socket file not created: %v", err)
	}
	conn = dial(t, s.Path())
	defer func() { conn.Disconnect() }()
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	call(t, conn, &nat44_ed.Nat44ShowRunningConfig{}, rc)
	if rc.Sessions == 0 {
		t.Errorf("NAT44 state lost across serving again")
	}

	before, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	pid := v.PID()
	v.Restart()
	// The restart closes the old connection: its calls fail, at the
	// latest once the kernel reports the closed socket.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := conn.Invoke(ctx, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old connection still answers after a restart")
		}
	}
	conn.Disconnect()
	// The socket file is another file: clients watching it see a new VPP.
	for {
		now, err := os.Stat(s.Path())
		if err == nil && !os.SameFile(before, now) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("socket file not created anew after a restart")
		}
		time.Sleep(time.Millisecond)
	}
	conn = dial(t, s.Path())
	ping := &memclnt.ControlPingReply{}
	call(t, conn, &memclnt.ControlPing{}, ping)
	if ping.VpePID == pid || ping.VpePID != v.PID() {
		t.Errorf("pid after restart %d (before %d, now %d)", ping.VpePID, pid, v.PID())
	}
	call(t, conn, &nat44_ed.Nat44ShowRunningConfig{}, rc)
	if rc.Sessions != 0 {
		t.Errorf("NAT44 state kept across a restart")
	}
}

// TestServeSeveralClients connects a second client beside the first, as
// the agent's pipelines do: VPP serves both (it ended the first one's
// connection before), each gets the answers to its own requests though
// their contexts are the same, and the VPP stays connected until the
// last one leaves.
func TestServeSeveralClients(t *testing.T) {
	v := New(Options{})
	s := serve(t, v)
	first := dial(t, s.Path())
	defer first.Disconnect()
	second := dial(t, s.Path())
	call(t, second, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	for range 3 {
		call(t, first, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
		call(t, second, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	}
	second.Disconnect()
	call(t, first, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
}
