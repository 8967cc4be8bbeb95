package vpp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// fakeVPP is a scripted API socket: it answers sockclnt_create with a
// small message table, then hands every request to serve, which answers
// (or not) through reply. It checks the wire's framing and failure
// handling where the simulated VPP answers correctly.
type fakeVPP struct {
	path  string
	ids   map[string]uint16 // name_crc → ID
	reads chan int          // bytes of each read of the client's requests
}

// fakeMessages are the messages fakeVPP knows, in ID order from 16.
var fakeMessages = []api.Message{
	&memclnt.SockclntCreateReply{}, &memclnt.SockclntDelete{}, &memclnt.SockclntDeleteReply{},
	&memclnt.ControlPing{}, &memclnt.ControlPingReply{},
}

func startFakeVPP(t *testing.T, serve func(c net.Conn, seq int, ctx uint32, id uint16, f *fakeVPP) bool) *fakeVPP {
	t.Helper()
	f := &fakeVPP{path: filepath.Join(t.TempDir(), "api.sock"), ids: map[string]uint16{}, reads: make(chan int, 1<<16)}
	for i, m := range fakeMessages {
		f.ids[m.GetMessageName()+"_"+m.GetCrcString()] = uint16(16 + i)
	}
	ln, err := net.Listen("unix", f.path)
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(&countingReader{c: c, reads: f.reads})
		create := true
		for seq := 0; ; {
			var hdr [16]byte
			if _, err := readFullBuf(r, hdr[:]); err != nil {
				return
			}
			data := make([]byte, binary.BigEndian.Uint32(hdr[8:12]))
			if _, err := readFullBuf(r, data); err != nil {
				return
			}
			if create {
				create = false
				reply := &memclnt.SockclntCreateReply{Index: 7}
				for k, id := range f.ids {
					reply.MessageTable = append(reply.MessageTable, memclnt.MessageTableEntry{Index: id, Name: k})
				}
				f.reply(c, reply, binary.BigEndian.Uint32(data[6:10]))
				continue
			}
			id := binary.BigEndian.Uint16(data[0:2])
			if id == f.ids["sockclnt_delete_"+(&memclnt.SockclntDelete{}).GetCrcString()] {
				return
			}
			if !serve(c, seq, binary.BigEndian.Uint32(data[6:10]), id, f) {
				return
			}
			seq++
		}
	}()
	return f
}

// countingReader notes the size of each read of the socket.
type countingReader struct {
	c     net.Conn
	reads chan int
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.c.Read(b)
	if n > 0 {
		r.reads <- n
	}
	return n, err
}

func readFullBuf(r *bufio.Reader, b []byte) (int, error) { return readFull(r, b) }

// reply writes m, framed, with context ctx.
func (f *fakeVPP) reply(c net.Conn, m api.Message, ctx uint32) {
	data, err := codec.EncodeMsg(m, f.ids[m.GetMessageName()+"_"+m.GetCrcString()])
	if err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint32(data[2:6], ctx)
	hdr := make([]byte, 16)
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(data)))
	_, _ = c.Write(append(hdr, data...))
}

// wireStream opens a stream on a wire to f, as openStream does on a
// connection that has one.
func wireStream(t *testing.T, f *fakeVPP, timeout time.Duration) (*stream[int], *Conn) {
	t.Helper()
	w, err := dialWire(f.path, "test", time.Second)
	if err != nil {
		t.Fatalf("dialWire: %v", err)
	}
	w.timeout = timeout
	c := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, func() { _ = w.conn.Close() })
	st := &stream[int]{conn: c, ctx: ctx, w: w, stopW: stop, cancel: cancel, failed: func(err error) error { return err }}
	t.Cleanup(st.close)
	return st, c
}

// pingReplies answers every request with a control_ping_reply.
func pingReplies(c net.Conn, _ int, ctx uint32, _ uint16, f *fakeVPP) bool {
	f.reply(c, &memclnt.ControlPingReply{}, ctx)
	return true
}

// TestWireBatchesRequests sends 200 requests before reading an answer:
// they go in a few large writes (govpp's socket client writes each
// request apart), and every answer comes back to its call.
func TestWireBatchesRequests(t *testing.T) {
	f := startFakeVPP(t, pingReplies)
	st, c := wireStream(t, f, 5*time.Second)
	const n = 200
	for i := range n {
		st.send(i, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	}
	for i := range n {
		call, ok := st.pop()
		if !ok || call.meta != i || call.err != nil {
			t.Fatalf("call %d: %+v %v", i, call, ok)
		}
		if _, isReply := call.msg.(*memclnt.ControlPingReply); !isReply {
			t.Fatalf("call %d answered with %T", i, call.msg)
		}
	}
	if got := c.inflight.Load(); got != 0 {
		t.Errorf("%d calls still counted in flight", got)
	}
	frame := 16 + 10 // header and control_ping
	// The handshake, the first wireLow requests one by one (VPP has
	// nothing to do yet), then a write per 4 KiB.
	if max := 1 + wireLow + n*frame/4096 + 1; st.w.writes > max {
		t.Errorf("the %d requests took %d writes, want at most %d (written together)", n, st.w.writes, max)
	}
}

// TestWireClosedMidBatch: VPP answers 10 requests of 50 and hangs up
// once it has read them all. The 10 succeed; every other call fails with
// a transport error, the stream is broken, and a later call fails
// without being sent.
func TestWireClosedMidBatch(t *testing.T) {
	f := startFakeVPP(t, func(c net.Conn, seq int, ctx uint32, _ uint16, f *fakeVPP) bool {
		switch {
		case seq == 49:
			return false // VPP goes away
		case seq < 10:
			f.reply(c, &memclnt.ControlPingReply{}, ctx)
		}
		return true
	})
	st, _ := wireStream(t, f, 5*time.Second)
	for i := range 50 {
		st.send(i, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	}
	for i := range 50 {
		call, _ := st.pop()
		switch {
		case i < 10 && call.err != nil:
			t.Errorf("call %d (answered): %v", i, call.err)
		case i >= 10 && call.err == nil:
			t.Errorf("call %d after VPP hung up succeeded", i)
		}
	}
	if st.broken == nil {
		t.Fatal("the stream is not broken after VPP hung up")
	}
	st.send(50, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	if call, _ := st.pop(); call.err == nil || !errors.Is(call.err, st.broken) {
		t.Errorf("a call on the broken stream: %v, want the breaking error %v", call.err, st.broken)
	}
}

// TestWireWrongAnswer: an answer of another type, or to another request
// (its context), breaks the stream: nothing after it can be matched.
func TestWireWrongAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(c net.Conn, ctx uint32, f *fakeVPP)
		want  string
	}{
		{"type", func(c net.Conn, ctx uint32, f *fakeVPP) { f.reply(c, &memclnt.SockclntDeleteReply{}, ctx) }, "got sockclnt_delete_reply"},
		{"context", func(c net.Conn, ctx uint32, f *fakeVPP) { f.reply(c, &memclnt.ControlPingReply{}, ctx+1) }, "answers request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFakeVPP(t, func(c net.Conn, seq int, ctx uint32, _ uint16, f *fakeVPP) bool {
				if seq == 3 {
					tc.reply(c, ctx, f)
				} else {
					f.reply(c, &memclnt.ControlPingReply{}, ctx)
				}
				return true
			})
			st, _ := wireStream(t, f, 5*time.Second)
			for i := range 6 {
				st.send(i, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
			}
			for i := range 6 {
				call, _ := st.pop()
				switch {
				case i < 3 && call.err != nil:
					t.Errorf("call %d: %v", i, call.err)
				case i == 3 && (call.err == nil || !strings.Contains(call.err.Error(), tc.want)):
					t.Errorf("call %d (the wrong answer): %v, want %q", i, call.err, tc.want)
				case i > 3 && call.err == nil:
					t.Errorf("call %d after the wrong answer succeeded", i)
				}
			}
		})
	}
}

// TestWireTimeout: VPP never answers; the call fails once CallTimeout
// passes (a deadline error), and the stream is broken.
func TestWireTimeout(t *testing.T) {
	f := startFakeVPP(t, func(net.Conn, int, uint32, uint16, *fakeVPP) bool { return true })
	st, _ := wireStream(t, f, 200*time.Millisecond)
	st.send(0, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	call, _ := st.pop()
	if !errors.Is(call.err, os.ErrDeadlineExceeded) {
		t.Errorf("unanswered call: %v, want a deadline error", call.err)
	}
	if st.broken == nil {
		t.Error("the stream is not broken after a timeout")
	}
}

// TestWireCancelled: the stream's context ending (the connection lost)
// fails a call waiting for its answer at once, without CallTimeout.
func TestWireCancelled(t *testing.T) {
	f := startFakeVPP(t, func(net.Conn, int, uint32, uint16, *fakeVPP) bool { return true })
	st, _ := wireStream(t, f, time.Hour)
	st.send(0, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
	st.cancel()
	if call, _ := st.pop(); call.err == nil {
		t.Error("a call whose stream's context ended succeeded")
	}
}

// TestPipelinesShareAWire runs two pipelines in turn over the simulated
// VPP's socket: both go over one wire of their own (the spare kept
// between them), beside the connection's govpp channel, which keeps
// working.
func TestPipelinesShareAWire(t *testing.T) {
	ctx := context.Background()
	v, _, n := socketEnv(t, sim.Options{}, Config{})
	if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	var first *wire
	for round := range 2 {
		p, err := n.Pipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := p.(*pipeline).st.w
		if w == nil {
			t.Fatal("a pipeline over the socket does not use a wire")
		}
		if round == 0 {
			first = w
		} else if w != first {
			t.Error("the second pipeline made a wire of its own rather than take the spare")
		}
		op := nat44.Op{Kind: nat44.OpAddPool, Pool: nat44.PoolAddress{IP: netip.MustParseAddr("192.168.16.1")}}
		if err := p.Send(&op); err != nil {
			t.Fatal(err)
		}
		if err := p.Recv(); (err != nil) != (round == 1) {
			t.Errorf("round %d: %v", round, err) // the second add is refused
		}
		p.Close()
		// The synchronous path still answers over govpp's connection.
		if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
			t.Fatalf("round %d: a synchronous call after the pipeline: %v", round, err)
		}
	}
	if got := v.Calls("nat44_add_del_address_range"); got != 2 {
		t.Errorf("VPP got %d nat44_add_del_address_range, want 2", got)
	}
}

// TestWireRecorded: a pipeline's calls over its wire are recorded as the
// connection's are, each request with its answer.
func TestWireRecorded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	rec, err := OpenRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, n := socketEnv(t, sim.Options{}, Config{Record: rec, HealthInterval: time.Hour})
	if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	p, err := n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.(*pipeline).st.w == nil {
		t.Fatal("the pipeline does not use a wire")
	}
	ops := []nat44.Op{
		{Kind: nat44.OpAddPool, Pool: nat44.PoolAddress{IP: netip.MustParseAddr("192.168.16.1")}},
		{Kind: nat44.OpAddPool, Pool: nat44.PoolAddress{IP: netip.MustParseAddr("192.168.16.1")}}, // refused
	}
	for i := range ops {
		if err := p.Send(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	for range ops {
		_ = p.Recv()
	}
	p.Close()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"name":"nat44_add_del_address_range"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d recorded nat44_add_del_address_range calls, want 2:\n%s", len(lines), b)
	}
	for i, l := range lines {
		if !strings.Contains(l, `"nat44_add_del_address_range_reply"`) {
			t.Errorf("call %d recorded without its answer: %s", i, l)
		}
	}
	if !strings.Contains(lines[1], "-81") && !strings.Contains(lines[1], `"retval":-`) {
		t.Errorf("the refused call's answer is not its own: %s", lines[1])
	}
}

// TestWireEncodesAsGovpp checks that a request encoded into the wire's
// output (reused, its old bytes still there) is govpp's codec's encoding
// (client index and context zero, set by send): fixed-size fields padded
// with zeros, variable-length arrays at their length.
func TestWireEncodesAsGovpp(t *testing.T) {
	two := &cnatapi.CnatTranslationUpdate{Translation: cnatapi.CnatTranslation{
		Vip: endpoint(netip.MustParseAddr("10.96.0.1"), 80), IPProto: 6, NPaths: 2,
		Paths: []cnatapi.CnatEndpointTuple{
			{DstEp: endpoint(netip.MustParseAddr("10.1.1.2"), 8080)},
			{DstEp: endpoint(netip.MustParseAddr("10.1.2.2"), 8080)},
		},
	}}
	reqs := []api.Message{
		&interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 3, Tag: "default/web"},
		&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: "ip4-unicast", FeatureName: "cnat-input-ip4"},
		two,
		&memclnt.ControlPing{},
	}
	w := &wire{}
	for i, m := range reqs {
		// The output's room holds another message's bytes.
		w.out = slices.Repeat([]byte{0xff}, 4096)[:0]
		if _, err := w.encode(m, uint16(100+i)); err != nil {
			t.Fatalf("%s: %v", m.GetMessageName(), err)
		}
		want, err := codec.EncodeMsg(m, uint16(100+i))
		if err != nil {
			t.Fatal(err)
		}
		if len(w.out) != wireHeader+len(want) || binary.BigEndian.Uint32(w.out[8:12]) != uint32(len(want)) {
			t.Fatalf("%s: frame of %d bytes, header length %d, want %d", m.GetMessageName(), len(w.out), binary.BigEndian.Uint32(w.out[8:12]), len(want))
		}
		if got := w.out[wireHeader:]; !bytes.Equal(got, want) {
			t.Errorf("%s encoded\n%x\nwant\n%x", m.GetMessageName(), got, want)
		}
	}
}
