package vpp

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
)

// socketVPP serves a replay of recorded answers on a unix socket, speaking
// the framing and the sockclnt_create handshake of VPP's API socket, so
// that govpp's real socket client and this package's socket handling are
// what is tested. Its message table is VPP 25.02's (connect.jsonl) with
// govpp's CRCs (which VPP 25.02 accepted for these packages, connect.jsonl
// compat records).
type socketVPP struct {
	t    *testing.T
	path string
	rp   *replay
	ln   net.Listener

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startSocketVPP listens on path and answers from recs.
func startSocketVPP(t *testing.T, path string, recs []*corpusRecord) *socketVPP {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	s := &socketVPP{t: t, path: path, rp: newReplay(t, recs), ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.stop)
	return s
}

func (s *socketVPP) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// stop is VPP going away: the socket file is removed and every client
// connection closed.
func (s *socketVPP) stop() {
	_ = s.ln.Close() // removes the socket file
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
	_ = s.rp.Disconnect()
}

// unlinkOnly removes the socket file but keeps serving the connections
// made: the file was replaced under a live VPP's clients.
func (s *socketVPP) unlinkOnly() {
	if ul, ok := s.ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	_ = os.Remove(s.path)
	_ = s.ln.Close()
}

// serve answers one client: sockclnt_create here, the rest by the replay.
func (s *socketVPP) serve(c net.Conn) {
	defer s.wg.Done()
	r := bufio.NewReader(c)
	var wmu sync.Mutex
	write := func(data []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		hdr := make([]byte, 16)
		binary.BigEndian.PutUint32(hdr[8:12], uint32(len(data)))
		_, _ = c.Write(append(hdr, data...))
	}
	first := true
	for {
		hdr := make([]byte, 16)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		data := make([]byte, binary.BigEndian.Uint32(hdr[8:12]))
		if _, err := io.ReadFull(r, data); err != nil {
			return
		}
		if first {
			first = false
			write(s.createReply())
			s.rp.SetMsgCallback(func(_ uint16, d []byte) { write(d) })
			_ = s.rp.Disconnect()
			_ = s.rp.Connect()
			continue
		}
		if id, _ := s.rp.GetMsgID("sockclnt_delete", ""); binary.BigEndian.Uint16(data[0:2]) == id {
			continue // the client hangs up; it does not wait for a reply
		}
		_ = s.rp.SendMsg(binary.BigEndian.Uint32(data[6:10]), data)
	}
}

// createReply is sockclnt_create_reply with VPP 25.02's message table.
func (s *socketVPP) createReply() []byte {
	reply := &memclnt.SockclntCreateReply{Index: 1}
	for _, byName := range []map[string]api.Message{api.GetRegisteredMessages()[govppBindings]} {
		for _, m := range byName {
			if id, ok := s.rp.ids[m.GetMessageName()]; ok {
				reply.MessageTable = append(reply.MessageTable, memclnt.MessageTableEntry{Index: id, Name: m.GetMessageName() + "_" + m.GetCrcString()})
			}
		}
	}
	reply.Count = uint16(len(reply.MessageTable))
	id := s.rp.ids["sockclnt_create_reply"]
	b, err := codec.DefaultCodec.EncodeMsg(reply, id)
	if err != nil {
		s.t.Errorf("encoding sockclnt_create_reply: %v", err)
	}
	return b
}

// socketConn connects a Conn to path; its events go to the returned log.
func socketConn(t *testing.T, path string, cfg Config) (*Conn, *events) {
	t.Helper()
	ev := newEvents()
	cfg.Socket, cfg.OnEvent = path, ev.add
	c := New(cfg)
	c.Start(t.Context())
	t.Cleanup(c.Close)
	return c, ev
}

// TestSocketAppearsDuringLongBackoff stops VPP (socket gone) with a backoff
// of an hour: the new VPP's socket is still noticed and connected to, and
// the restart reported.
func TestSocketAppearsDuringLongBackoff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.sock")
	a := startSocketVPP(t, path, pick(t, loadScenario(t, "connect"), 6)) // pid 17858
	c, ev := socketConn(t, path, Config{HealthInterval: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour})
	if e := ev.next(t); e.Kind != Connected || e.PID != 17858 || e.Version != "25.02-release" {
		t.Fatalf("first event %+v", e)
	}
	a.stop()
	if e := ev.next(t); e.Kind != Disconnected {
		t.Fatalf("after VPP stopped: %+v", e)
	}
	startSocketVPP(t, path, pick(t, loadScenario(t, "restart"), 19)) // pid 15301
	if e := ev.next(t); e.Kind != Connected || !e.Restarted || e.PID != 15301 {
		t.Fatalf("after the new VPP started: %+v", e)
	}
	if st := c.Status(); !st.Connected || st.Restarts != 1 || st.Socket != path {
		t.Errorf("status %+v", st)
	}
}

// TestSocketReplaced replaces the socket file under a connection whose
// old VPP still answers, with health probes an hour apart: the new file
// ends the connection, and the new VPP is connected.
func TestSocketReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.sock")
	a := startSocketVPP(t, path, pick(t, loadScenario(t, "connect"), 6))
	_, ev := socketConn(t, path, Config{HealthInterval: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour})
	if e := ev.next(t); e.Kind != Connected {
		t.Fatalf("first event %+v", e)
	}
	a.unlinkOnly()
	startSocketVPP(t, path, pick(t, loadScenario(t, "restart"), 19))
	if e := ev.next(t); e.Kind != Disconnected || !strings.Contains(e.Err.Error(), "replaced") {
		t.Fatalf("after the socket was replaced: %+v", e)
	}
	if e := ev.next(t); e.Kind != Connected || !e.Restarted || e.PID != 15301 {
		t.Fatalf("after reconnecting: %+v", e)
	}
}

// TestBrokenSocketProbedAtOnce kills the connection (VPP crashed, its
// socket file left behind): the next call fails and makes the watcher
// probe at once, although health probes are an hour apart.
func TestBrokenSocketProbedAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.sock")
	a := startSocketVPP(t, path, pick(t, loadScenario(t, "agent_flow"), 3))
	c, ev := socketConn(t, path, Config{HealthInterval: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour})
	if e := ev.next(t); e.Kind != Connected {
		t.Fatalf("first event %+v", e)
	}
	a.mu.Lock()
	for _, conn := range a.conns {
		_ = conn.Close()
	}
	a.mu.Unlock()
	ifs := NewInterfaces(c, nil)
	deadline := time.Now().Add(10 * time.Second)
	for !ev.pending() {
		if time.Now().After(deadline) {
			t.Fatal("calls on a broken connection did not end it")
		}
		// Calls fail in the transport; the first ones may still be
		// written (the kernel's buffer) and time out.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_ = ifs.Refresh(ctx)
		cancel()
	}
	if e := ev.next(t); e.Kind != Disconnected {
		t.Fatalf("after the connection broke: %+v", e)
	}
}

func TestRetryDelay(t *testing.T) {
	cfg := Config{RetryMin: 100 * time.Millisecond, RetryMax: 10 * time.Second}
	cfg.setDefaults()
	var d time.Duration
	var present, absent []time.Duration
	for range 8 {
		d = retryDelay(d, true, cfg)
		present = append(present, d)
	}
	d = 0
	for range 8 {
		d = retryDelay(d, false, cfg)
		absent = append(absent, d)
	}
	ms := time.Millisecond
	wantPresent := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second, time.Second}
	wantAbsent := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * time.Second}
	if !equalDurations(present, wantPresent) || !equalDurations(absent, wantAbsent) {
		t.Errorf("socket present %v, want %v; absent %v, want %v", present, wantPresent, absent, wantAbsent)
	}
	// The socket appears after a long wait: back to at most RetryPresent.
	if got := retryDelay(10*time.Second, true, cfg); got != time.Second {
		t.Errorf("present after a long wait: %v", got)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
