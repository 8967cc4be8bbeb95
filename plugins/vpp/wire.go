package vpp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
)

// A wire is a socket connection of its own to VPP's binary API that
// carries a pipeline's calls without govpp's core: requests are encoded
// into one buffer and written together (wireBatch bytes at a time, or
// when an answer must be waited for), answers are read through one
// buffered reader and decoded by the caller's goroutine. VPP's socket
// server reads its API socket 4 KiB at a time and handles every whole
// message of a read (vlibmemory/socket_api.c, 25.02 and 26.06 alike), so
// a write of many requests costs VPP one read instead of one each (and
// the agent one write); govpp's socket client writes each request with a
// syscall of its own and hands each answer through its core's channels.
//
// The framing is VPP's: a 16-byte header (the data's length big-endian at
// bytes 8 to 12) before each message. A wire registers with
// sockclnt_create (the message table comes with the reply) and leaves
// with sockclnt_delete. It is used by one goroutine at a time.
type wire struct {
	conn  *net.UnixConn
	r     *bufio.Reader
	out   []byte // frames encoded and not yet written
	in    []byte // the last answer read (read's buffer, reused)
	index uint32 // the client index VPP gave
	ids   map[msgKey]uint16
	names map[uint16]string // for errors: a message ID's name
	delID uint16
	seq   uint32 // the context of the last request sent
	// flushed is the context of the last request written, answered of
	// the last one whose answer was read.
	flushed, answered uint32
	// writes counts the socket writes (tests).
	writes int
	// timeout bounds each wait for an answer (CallTimeout) and each
	// write.
	timeout time.Duration
	// rec, when recording, sees every message sent and received.
	rec *recordingAdapter
}

// wireBatch is how many bytes of requests are buffered before they are
// written: VPP reads its socket 4 KiB at a time. While fewer than wireLow
// requests written wait for their answer, each is written at once: VPP
// is not left idle while requests wait in the buffer.
const (
	wireBatch = 4096
	wireLow   = 32
)

// wireHeader is the length of the frame header before each message.
const wireHeader = 16

// sockclntCreateID is the ID sockclnt_create is sent with before the
// message table is known; VPP reserves it.
const sockclntCreateID = 15

// errWireBroken marks a wire that failed and may not be used again.
var errWireBroken = errors.New("pipeline connection broken")

// dialWire connects to the API socket at path and registers as name,
// within timeout.
func dialWire(path, name string, timeout time.Duration) (*wire, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	w := &wire{conn: c.(*net.UnixConn), r: bufio.NewReaderSize(c, 64<<10), timeout: timeout}
	if err := w.register(name); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("registering with VPP: %w", err)
	}
	return w, nil
}

// register sends sockclnt_create and reads the message table.
func (w *wire) register(name string) error {
	data, err := codec.EncodeMsg(&memclnt.SockclntCreate{Name: name}, sockclntCreateID)
	if err != nil {
		return err
	}
	w.frame(data)
	if err := w.flush(); err != nil {
		return err
	}
	data, err = w.read()
	if err != nil {
		return err
	}
	reply := &memclnt.SockclntCreateReply{}
	if err := codec.DecodeMsg(data, reply); err != nil {
		return fmt.Errorf("sockclnt_create_reply: %w", err)
	}
	if reply.Response != 0 {
		return fmt.Errorf("sockclnt_create_reply: %w", api.VPPApiError(reply.Response))
	}
	w.index = reply.Index
	w.ids = make(map[msgKey]uint16, len(reply.MessageTable))
	w.names = make(map[uint16]string, len(reply.MessageTable))
	for _, e := range reply.MessageTable {
		key, _, _ := strings.Cut(e.Name, "\x00")
		if i := strings.LastIndexByte(key, '_'); i > 0 {
			w.ids[msgKey{key[:i], key[i+1:]}] = e.Index
		}
		w.names[e.Index] = key
		if strings.HasPrefix(key, "sockclnt_delete_") {
			w.delID = e.Index
		}
	}
	return nil
}

// msgKey names a message as VPP's message table does ("name_crc"), in
// two parts, so that looking one up builds no string.
type msgKey struct{ name, crc string }

// id is the message ID of m on this VPP.
func (w *wire) id(m api.Message) (uint16, error) {
	k := msgKey{m.GetMessageName(), m.GetCrcString()}
	id, ok := w.ids[k]
	if !ok {
		return 0, fmt.Errorf("%w: VPP does not know %s_%s", ErrIncompatible, k.name, k.crc)
	}
	if w.rec != nil {
		w.rec.learn(id, k.name+"_"+k.crc)
	}
	return id, nil
}

// frame appends one message, header first, to the output.
func (w *wire) frame(data []byte) {
	var h [wireHeader]byte
	binary.BigEndian.PutUint32(h[8:12], uint32(len(data)))
	w.out = append(append(w.out, h[:]...), data...)
}

// send encodes req and queues it; the output is written once it holds
// wireBatch bytes. An error is req's own (it could not be encoded) or
// the wire's (a write failed: the wire is broken).
func (w *wire) send(req api.Message) error {
	id, err := w.id(req)
	if err != nil {
		return err
	}
	data, err := w.encode(req, id)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", req.GetMessageName(), err)
	}
	w.seq++
	binary.BigEndian.PutUint32(data[2:6], w.index)
	binary.BigEndian.PutUint32(data[6:10], w.seq)
	if w.rec != nil {
		w.rec.recordSend(w.seq, data)
	}
	if len(w.out) >= wireBatch || w.flushed-w.answered < wireLow {
		return w.flush()
	}
	return nil
}

// encode appends req's frame to the output, as codec.EncodeMsg encodes
// it (the message ID, then room for the client index and context, then
// the fields), without a buffer of its own: the message's data, within
// the output, is returned. On an error the output is as before.
func (w *wire) encode(req api.Message, id uint16) (data []byte, err error) {
	m, ok := req.(codec.Marshaler)
	if !ok || req.GetMessageType() != api.RequestMessage {
		// Not a generated request: govpp's codec, and a copy.
		if data, err = codec.EncodeMsg(req, id); err != nil {
			return nil, err
		}
		w.frame(data)
		return w.out[len(w.out)-len(data):], nil
	}
	const offset = 10 // message ID, client index, context
	start := len(w.out)
	n := offset + m.Size()
	w.out = slices.Grow(w.out, wireHeader+n)[:start+wireHeader+n]
	frame := w.out[start:]
	clear(frame) // generated marshalling skips the padding of fixed-size fields
	binary.BigEndian.PutUint32(frame[8:12], uint32(n))
	data = frame[wireHeader:]
	binary.BigEndian.PutUint16(data[0:2], id)
	defer func() {
		// Generated marshalling panics on a field too long for its
		// array, as in codec.EncodeMsg, which recovers it.
		if r := recover(); r != nil {
			w.out, err = w.out[:start], fmt.Errorf("%v", r)
		}
	}()
	if _, err = m.Marshal(data[offset:]); err != nil {
		w.out = w.out[:start]
		return nil, err
	}
	return data, nil
}

// flush writes the queued requests.
func (w *wire) flush() error {
	if len(w.out) == 0 {
		return nil
	}
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return err
	}
	_, err := w.conn.Write(w.out)
	w.out = w.out[:0]
	w.writes++
	w.flushed = w.seq
	return err
}

// read reads one message, writing the queued requests first when it
// has to wait for VPP. The message is valid until the next read.
func (w *wire) read() ([]byte, error) {
	if w.r.Buffered() < wireHeader {
		if err := w.flush(); err != nil {
			return nil, err
		}
		if err := w.conn.SetReadDeadline(time.Now().Add(w.timeout)); err != nil {
			return nil, err
		}
	}
	h, err := w.r.Peek(wireHeader)
	if err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[8:12]))
	if _, err := w.r.Discard(wireHeader); err != nil {
		return nil, err
	}
	if n < 6 {
		return nil, fmt.Errorf("a message of %d bytes from VPP", n)
	}
	if w.r.Buffered() < n {
		if err := w.conn.SetReadDeadline(time.Now().Add(w.timeout)); err != nil {
			return nil, err
		}
	}
	w.in = slices.Grow(w.in[:0], n)[:n]
	if _, err := readFull(w.r, w.in); err != nil {
		return nil, err
	}
	return w.in, nil
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// recv reads the answer to the oldest request without one and decodes
// it into reply. A transport error or an answer that is not reply's
// type or not to that request (its context) breaks the wire
// (errWireBroken wraps the latter): nothing after it can be matched.
func (w *wire) recv(reply api.Message, seq uint32) error {
	data, err := w.read()
	if err != nil {
		return err
	}
	want, err := w.id(reply)
	if err != nil {
		return err
	}
	id := binary.BigEndian.Uint16(data[0:2])
	if w.rec != nil {
		w.rec.received(id, data)
	}
	if id != want {
		name := w.names[id]
		if name == "" {
			name = fmt.Sprintf("message ID %d", id)
		}
		return fmt.Errorf("%w: got %s, want %s", errWireBroken, name, reply.GetMessageName())
	}
	if ctx := binary.BigEndian.Uint32(data[2:6]); ctx != seq {
		return fmt.Errorf("%w: %s answers request %d, want %d", errWireBroken, reply.GetMessageName(), ctx, seq)
	}
	if err := codec.DecodeMsg(data, reply); err != nil {
		return fmt.Errorf("%w: decoding %s: %w", errWireBroken, reply.GetMessageName(), err)
	}
	w.answered = seq
	return nil
}

// close leaves VPP (sockclnt_delete, its answer not awaited, written
// within a second) and closes the socket.
func (w *wire) close() {
	if w.rec != nil {
		w.rec.abandon()
	}
	w.out = w.out[:0]
	w.timeout = min(w.timeout, time.Second) // VPP may not be reading
	if w.delID != 0 {
		if data, err := codec.EncodeMsg(&memclnt.SockclntDelete{Index: w.index}, w.delID); err == nil {
			binary.BigEndian.PutUint32(data[2:6], w.index)
			w.frame(data)
			_ = w.flush()
		}
	}
	_ = w.conn.Close()
}

// wireAdapter lets a Recorder's recordingAdapter record a wire's
// messages: the wire feeds it directly (learn, recordSend, received);
// nothing goes through the adapter.
type wireAdapter struct{ adapter.VppAPI }

// SendMsg is called by recordingAdapter.SendMsg after it recorded the
// request: the wire writes it itself.
func (wireAdapter) SendMsg(uint32, []byte) error { return nil }

// learn records a message ID's name for decoding.
func (a *recordingAdapter) learn(id uint16, key string) {
	a.mu.Lock()
	if _, ok := a.ids[id]; !ok {
		a.ids[id] = key
	}
	a.mu.Unlock()
}

// recordSend records a request the wire sends.
func (a *recordingAdapter) recordSend(seq uint32, data []byte) { _ = a.SendMsg(seq, data) }

// takeWire returns a wire for a pipeline on the live connection: the
// spare one, or a new one. It returns nil when pipelines use govpp
// streams: over an Adapter, or when a wire could not be made on this
// connection (logged once).
func (c *Conn) takeWire() *wire {
	if c.cfg.Adapter != nil {
		return nil
	}
	c.mu.Lock()
	gen, w := c.gen, c.spare
	c.spare = nil
	if w != nil && c.wireGen != gen {
		w.close()
		w = nil
	}
	failed := c.wireFailed && c.wireGen == gen
	c.mu.Unlock()
	if w != nil || failed {
		return w
	}
	w, err := dialWire(c.cfg.Socket, "contiv-agent-pipeline", c.cfg.ConnectTimeout)
	if err == nil {
		w.timeout = c.cfg.CallTimeout
		if c.cfg.Record != nil {
			w.rec = c.cfg.Record.Wrap(wireAdapter{}).(*recordingAdapter)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.wireGen, c.wireFailed = gen, true
		c.log.Warn("pipelines use govpp streams: no connection of their own to VPP", "err", err)
		return nil
	case c.gen != gen || c.conn == nil:
		w.close() // the connection ended meanwhile
		return nil
	}
	c.wireGen, c.wireFailed = gen, false
	return w
}

// putWire keeps w, idle, for the next pipeline of its connection.
func (c *Conn) putWire(w *wire) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spare != nil || c.conn == nil || c.wireGen != c.gen {
		w.close()
		return
	}
	c.spare = w
}

// dropWire closes the spare wire: its connection ended.
func (c *Conn) dropWire() {
	c.mu.Lock()
	w := c.spare
	c.spare = nil
	c.mu.Unlock()
	if w != nil {
		w.close()
	}
}
