package sim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
)

// Server serves a simulated VPP's binary API on a unix socket, speaking
// VPP's socket API protocol as govpp's socket client (adapter/socketclient)
// expects it: every message framed by a 16-byte header (queue, length,
// timeout; the length big-endian at bytes 8 to 12), the sockclnt_create
// handshake answered with the message table (name_crc -> ID), and
// sockclnt_delete answered before the client hangs up. Every other request
// goes through the VPP's own SendMsg, and its answers and events come back
// over the socket.
//
// Like VPP's main thread, one goroutine executes the requests of all
// clients in the order they arrived, one at a time; with
// Options.ServiceTime each request waits that long after its arrival
// before it runs. ASSUMPTION: the service time is a latency, not a cost
// of the main thread: a client keeping several requests in flight
// overlaps their waits (a real VPP reads its socket in batches in each
// main-loop turn); the simulator's own work per request is the only
// serial cost.
//
// As VPP does, it serves several client connections at once (the agent
// keeps one for its pipelines beside govpp's): the VPP is connected while
// any client is, and each answer goes back to the client of its request
// (the server gives each request a context of its own and restores the
// client's in the answers); an event goes to the client that registered
// for events last (want_interface_events), or the oldest one. A restart
// (Restart, a crash) closes every client's connection and creates the
// socket file anew, as a VPP that exits and starts again does (noticed
// within restartPoll). The VPP must not be connected in-process while it
// is served.
type Server struct {
	v    *VPP
	path string
	reqs chan request
	quit chan struct{}
	wg   sync.WaitGroup

	// vmu orders the VPP's Connect and Disconnect with the clients
	// coming and going; mu guards the rest.
	vmu     sync.Mutex
	mu      sync.Mutex
	ln      *net.UnixListener
	clients []*serverConn // the clients past the handshake, oldest first
	events  *serverConn   // the client that registered for events last
	conns   map[*serverConn]struct{}
	closed  bool
	// routes maps the contexts the server gave requests to their
	// client's; byClient the other way (a dump and its control_ping
	// share a context); names are the messages' names by ID.
	routes   map[uint32]clientCtx
	byClient map[clientCtx]uint32
	nextCtx  uint32
	names    map[uint16]string
}

// clientCtx is a request's client and its context.
type clientCtx struct {
	c   *serverConn
	ctx uint32
}

// request is one framed request waiting for the main loop.
type request struct {
	c    *serverConn
	data []byte
	at   time.Time
}

// serverConn is one client's socket.
type serverConn struct {
	s     *Server
	conn  net.Conn
	index uint32 // the client index sockclnt_create_reply gave

	wmu  sync.Mutex
	wbuf []byte

	once sync.Once
	gone chan struct{}
}

// frameHeader is the length of the header in front of every message.
const frameHeader = 16

// sockclntCreateID is the message ID govpp's socket client sends
// sockclnt_create with, before it knows the message table.
const sockclntCreateID = 15

// restartPoll is how often the server looks for a restart of its VPP.
const restartPoll = 10 * time.Millisecond

// Serve starts serving v on a unix socket at path (a stale socket file
// there is replaced) and returns at once; Close stops it.
func (v *VPP) Serve(path string) (*Server, error) {
	ln, err := listen(path)
	if err != nil {
		return nil, err
	}
	s := &Server{
		v:     v,
		path:  path,
		ln:    ln,
		reqs:  make(chan request, 1024),
		quit:  make(chan struct{}),
		conns: make(map[*serverConn]struct{}),

		routes:   make(map[uint32]clientCtx),
		byClient: make(map[clientCtx]uint32),
	}
	s.wg.Add(2)
	go s.accept(ln)
	go s.mainLoop()
	v.log.Info("simulated VPP: serving the binary API on a unix socket", "socket", path, "serviceTime", v.service)
	return s, nil
}

// listen creates the socket file anew: bound beside path, then renamed
// over it, so that it is always another file (another inode) than the
// one it replaces, which is how clients tell a new VPP. The listener
// does not unlink on close: Close removes path itself.
func listen(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("simulated VPP: serving on %s: a file that is not a socket is there", path)
	}
	tmp := path + ".new"
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("simulated VPP: serving on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("simulated VPP: serving on %s: %w", path, err)
	}
	return ln, nil
}

// restarted is a restart of the VPP seen by the server: every client's
// connection ends and the socket file is created anew.
func (s *Server) restarted() {
	s.mu.Lock()
	clients := append([]*serverConn(nil), s.clients...)
	old := s.ln
	s.mu.Unlock()
	for _, c := range clients {
		c.end()
	}
	_ = old.Close()
	ln, err := listen(s.path)
	if err != nil {
		s.v.log.Error("simulated VPP: re-creating the API socket after a restart", "err", err)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return
	}
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	go s.accept(ln)
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving: the socket file is removed, every client
// connection closed and the VPP's client disconnected. The VPP's state is
// kept: serving it again is a VPP whose API socket came back.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	ln := s.ln
	s.mu.Unlock()
	err := ln.Close()
	if rerr := os.Remove(s.path); rerr != nil && !os.IsNotExist(rerr) && err == nil {
		err = rerr
	}
	close(s.quit)
	for _, c := range conns {
		c.end()
	}
	s.wg.Wait()
	return err
}

func (s *Server) accept(ln *net.UnixListener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c := &serverConn{s: s, conn: conn, gone: make(chan struct{})}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go c.read()
	}
}

// read reads c's frames: the handshake is answered here, the rest queued
// for the main loop.
func (c *serverConn) read() {
	defer c.s.wg.Done()
	defer c.end()
	r := bufio.NewReaderSize(c.conn, 64<<10)
	first := true
	for {
		data, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.v.log.Debug("simulated VPP: reading a client's socket", "err", err)
			}
			return
		}
		if first {
			first = false
			if err := c.s.handshake(c, data); err != nil {
				c.s.v.log.Warn("simulated VPP: socket handshake failed", "err", err)
				return
			}
			continue
		}
		select {
		case c.s.reqs <- request{c: c, data: data, at: time.Now()}:
		case <-c.gone:
			return
		case <-c.s.quit:
			return
		}
	}
}

// readFrame reads one framed message.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[8:12])
	if n > 64<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// write sends one framed message to the client; errors end the
// connection.
func (c *serverConn) write(data []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf[:0], make([]byte, frameHeader)...)
	binary.BigEndian.PutUint32(c.wbuf[8:12], uint32(len(data)))
	c.wbuf = append(c.wbuf, data...)
	if _, err := c.conn.Write(c.wbuf); err != nil {
		go c.end()
	}
}

// end closes c's socket and, when c was the VPP's last client,
// disconnects the VPP.
func (c *serverConn) end() {
	c.once.Do(func() {
		close(c.gone)
		_ = c.conn.Close()
		s := c.s
		s.vmu.Lock()
		defer s.vmu.Unlock()
		s.mu.Lock()
		delete(s.conns, c)
		was := len(s.clients)
		s.clients = slices.DeleteFunc(s.clients, func(x *serverConn) bool { return x == c })
		last := was > 0 && len(s.clients) == 0
		if s.events == c {
			s.events = nil
		}
		for k, v := range s.byClient {
			if k.c == c {
				delete(s.byClient, k)
				delete(s.routes, v)
			}
		}
		s.mu.Unlock()
		if last {
			_ = s.v.Disconnect()
		}
	})
}

// client is a request's client: the server's context ctx is replaced by
// the client's own.
func (s *Server) client(ctx uint32, data []byte) (*serverConn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.names[binary.BigEndian.Uint16(data[0:2])]
	if strings.HasSuffix(name, "_reply") || strings.HasSuffix(name, "_details") {
		r, ok := s.routes[ctx]
		if !ok {
			return nil, false // its client is gone
		}
		if strings.HasSuffix(name, "_reply") {
			delete(s.routes, ctx)
			delete(s.byClient, r)
		}
		binary.BigEndian.PutUint32(data[2:6], r.ctx)
		return r.c, true
	}
	switch {
	case s.events != nil:
		return s.events, true
	case len(s.clients) > 0:
		return s.clients[0], true
	}
	return nil, false
}

// deliver is the VPP's message callback: each message to its client.
func (s *Server) deliver(_ uint16, data []byte) {
	if len(data) < 6 {
		return
	}
	if c, ok := s.client(binary.BigEndian.Uint32(data[2:6]), data); ok {
		c.write(data)
	}
}

// route gives a request of c with context ctx a context of the server's
// own, or false when c is no longer a client.
func (s *Server) route(c *serverConn, ctx uint32, id uint16) (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.clients, c) {
		return 0, false
	}
	if s.names[id] == "want_interface_events" {
		s.events = c
	}
	k := clientCtx{c: c, ctx: ctx}
	if own, ok := s.byClient[k]; ok {
		return own, true
	}
	s.nextCtx++
	for s.nextCtx == 0 || s.routes[s.nextCtx].c != nil {
		s.nextCtx++
	}
	s.routes[s.nextCtx], s.byClient[k] = k, s.nextCtx
	return s.nextCtx, true
}

// handshake answers sockclnt_create with the message table and makes c
// the VPP's client.
func (s *Server) handshake(c *serverConn, data []byte) error {
	if len(data) < 10 {
		return fmt.Errorf("first message of %d bytes", len(data))
	}
	create, _ := s.v.GetMsgID((&memclnt.SockclntCreate{}).GetMessageName(), (&memclnt.SockclntCreate{}).GetCrcString())
	if id := binary.BigEndian.Uint16(data[0:2]); id != sockclntCreateID && id != create {
		return fmt.Errorf("first message has ID %d, not sockclnt_create", id)
	}
	req := &memclnt.SockclntCreate{}
	if err := codec.DefaultCodec.DecodeMsg(data, req); err != nil {
		return fmt.Errorf("decoding sockclnt_create: %w", err)
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	s.mu.Lock()
	closed, first := s.closed, len(s.clients) == 0
	s.mu.Unlock()
	if closed {
		return errors.New("server closed")
	}
	if first {
		// The VPP's first client: the VPP is connected.
		s.v.SetMsgCallback(s.deliver)
		if err := s.v.Connect(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	s.v.mu.Lock()
	c.index = s.v.pid // any non-zero index will do
	reply := &memclnt.SockclntCreateReply{Index: c.index}
	names := make(map[uint16]string, len(s.v.ids))
	for k, id := range s.v.ids {
		reply.MessageTable = append(reply.MessageTable, memclnt.MessageTableEntry{Index: id, Name: k})
		names[id] = k[:max(strings.LastIndexByte(k, '_'), 0)]
	}
	s.v.mu.Unlock()
	s.mu.Lock()
	s.names = names
	s.mu.Unlock()
	reply.Count = uint16(len(reply.MessageTable))
	b, err := s.encode(reply, binary.BigEndian.Uint32(data[6:10]))
	if err != nil {
		return err
	}
	c.write(b)
	s.v.log.Debug("simulated VPP: socket client connected", "name", req.Name, "messages", reply.Count)
	return nil
}

// encode encodes an answer with the VPP's ID for it and the context.
func (s *Server) encode(m api.Message, context uint32) ([]byte, error) {
	id, err := s.v.GetMsgID(m.GetMessageName(), m.GetCrcString())
	if err != nil {
		return nil, err
	}
	b, err := codec.DefaultCodec.EncodeMsg(m, id)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", m.GetMessageName(), err)
	}
	binary.BigEndian.PutUint32(b[2:6], context)
	return b, nil
}

// spinBelow is the wait below which the main loop yields instead of
// sleeping: Go's timers wake up to a millisecond late on Linux (epoll's
// resolution), which would make a 200 µs service time a millisecond.
const spinBelow = 2 * time.Millisecond

// waitUntil waits until t, sleeping while far from it and yielding the
// processor close to it; false when the server closes meanwhile.
func (s *Server) waitUntil(t time.Time, timer **time.Timer) bool {
	for {
		d := time.Until(t)
		switch {
		case d <= 0:
			return true
		case d > spinBelow:
			if *timer == nil {
				*timer = time.NewTimer(d - spinBelow/2)
			} else {
				(*timer).Reset(d - spinBelow/2)
			}
			select {
			case <-s.quit:
				return false
			case <-(*timer).C:
			}
		default:
			runtime.Gosched()
		}
	}
}

// mainLoop executes the requests of every client in arrival order, one
// at a time, each not before its arrival plus the service time.
func (s *Server) mainLoop() {
	defer s.wg.Done()
	del, _ := s.v.GetMsgID((&memclnt.SockclntDelete{}).GetMessageName(), (&memclnt.SockclntDelete{}).GetCrcString())
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	poll := time.NewTicker(restartPoll)
	defer poll.Stop()
	pid := s.v.PID()
	for {
		var r request
		select {
		case <-s.quit:
			return
		case <-poll.C:
			if now := s.v.PID(); now != pid {
				pid = now
				s.restarted()
			}
			continue
		case r = <-s.reqs:
		}
		if s.v.service > 0 && !s.waitUntil(r.at.Add(s.v.service), &timer) {
			return
		}
		if len(r.data) < 10 {
			s.v.log.Warn("simulated VPP: request shorter than its header; client dropped", "bytes", len(r.data))
			r.c.end()
			continue
		}
		context := binary.BigEndian.Uint32(r.data[6:10])
		if del != 0 && binary.BigEndian.Uint16(r.data[0:2]) == del {
			// The client leaves: answer, then it hangs up.
			if b, err := s.encode(&memclnt.SockclntDeleteReply{}, context); err == nil {
				r.c.write(b)
			}
			continue
		}
		own, ok := s.route(r.c, context, binary.BigEndian.Uint16(r.data[0:2]))
		if !ok {
			continue // the client is gone: VPP drops its queue
		}
		binary.BigEndian.PutUint32(r.data[6:10], own)
		err := s.v.SendMsg(own, r.data)
		switch {
		case errors.Is(err, ErrConnectionReset):
			// VPP restarted or crashed: its sockets close.
			s.v.log.Info("simulated VPP: closing the socket clients' connections", "reason", err)
			s.restartedClients()
		case err != nil:
			// ASSUMPTION: VPP drops a request it cannot handle without
			// answering; the client's call times out.
			s.v.log.Warn("simulated VPP: request dropped", "err", err)
		}
	}
}

// restartedClients ends every client's connection: the VPP restarted or
// crashed (the socket file is made anew by restarted).
func (s *Server) restartedClients() {
	s.mu.Lock()
	clients := append([]*serverConn(nil), s.clients...)
	s.mu.Unlock()
	for _, c := range clients {
		c.end()
	}
}
