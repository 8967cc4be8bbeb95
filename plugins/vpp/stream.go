package vpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"reflect"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

// PipelineWindow is how many calls a pipeline keeps in flight at most.
// govpp drops answers its reply queue cannot take in time (replyHandOver),
// so the stream's queue is sized to hold the whole window.
const PipelineWindow = 256

// stream keeps binary-API calls in flight on one connection: the core of
// NAT44.Pipeline and CNAT.Pipeline. Over VPP's socket it is a wire of its
// own (wire.go: requests written in batches, answers read in bulk); over
// an Adapter (the in-process simulated VPP) a govpp stream. VPP answers on
// one connection in order, so answers are matched to calls by position
// (on a wire, each answer's context is checked as well); at most
// PipelineWindow calls wait for their answer. Each call carries the
// caller's meta (what the call was for). A transport failure (a send or a
// receive failing, CallTimeout without an answer) breaks the stream: every
// later call fails with that error.
type stream[M any] struct {
	conn   *Conn
	ctx    context.Context
	s      api.Stream // nil on a wire
	w      *wire
	stopW  func() bool       // stops closing w when ctx ends
	cancel func()            // ends the stream's context (whileLive's done)
	failed func(error) error // marks an error of a connection that ended
	// q holds the calls sent (or settled without a message) and not
	// handed out by pop, oldest first, from head; next is the oldest
	// without an answer read from the stream, unread how many have none.
	q      []streamCall[M]
	head   int
	next   int
	unread int
	broken error
	// path is the binding path (govpp's, or a release's of binapi/) of
	// the calls in flight: govpp resolves an answer by the path of the
	// stream's last request, so requests of another path wait until
	// those in flight are answered (send). A wire decodes each answer
	// into the call's own reply: it needs no such wait.
	path string
}

// streamCall is one call: its meta, what to expect and its result once
// done.
type streamCall[M any] struct {
	meta  M
	name  string // the request's message name; "" for a call without one
	reply string // the reply's message name
	sent  time.Time
	seq   uint32      // the request's context on a wire
	into  api.Message // the reply to decode into, on a wire
	done  bool
	err   error
	msg   api.Message // the answer read (none when err is a transport one)
}

// openStream opens a stream on c's live connection.
func openStream[M any](ctx context.Context, c *Conn) (*stream[M], error) {
	conn, lost, err := c.live()
	if err != nil {
		return nil, err
	}
	ctx, cancel, failed := whileLive(ctx, lost)
	if w := c.takeWire(); w != nil {
		// A cancelled context (the caller's, or the connection's end)
		// closes the wire: a read waiting on it fails at once.
		stop := context.AfterFunc(ctx, func() { _ = w.conn.Close() })
		return &stream[M]{conn: c, ctx: ctx, w: w, stopW: stop, cancel: cancel, failed: failed}, nil
	}
	s, err := conn.NewStream(ctx,
		core.WithRequestSize(PipelineWindow), core.WithReplySize(PipelineWindow+8),
		core.WithReplyTimeout(c.cfg.CallTimeout))
	if err != nil {
		cancel()
		return nil, err
	}
	return &stream[M]{conn: c, ctx: ctx, s: s, cancel: cancel, failed: failed}, nil
}

// settled queues a call that needs no message: done, without error.
func (p *stream[M]) settled(meta M) {
	p.reuse()
	p.q = append(p.q, streamCall[M]{meta: meta, done: true})
}

// send sends req, whose answer is a reply of reply's type. On a broken
// stream nothing is sent and the call is done with the breaking error.
func (p *stream[M]) send(meta M, req, reply api.Message) {
	p.reuse()
	if p.unread >= PipelineWindow {
		p.readOne()
	}
	if path := bindingPath(req); p.w == nil && path != p.path {
		// govpp resolves an answer's message ID in the binding path of the
		// stream's last request (core.Stream.RecvMsg): the answers of
		// another path's calls are read first (VPP 26.06's cnat feature
		// call among govpp's cnat and route calls).
		for p.unread > 0 {
			p.readOne()
		}
		p.path = path
	}
	c := streamCall[M]{meta: meta, name: req.GetMessageName(), reply: reply.GetMessageName(), sent: time.Now()}
	p.conn.begin()
	if p.broken == nil {
		var err error
		if p.w != nil {
			c.seq, c.into = p.w.seq+1, reply
			err = wireLost(p.w.send(req))
		} else {
			err = p.s.SendMsg(req)
		}
		if err != nil {
			p.broken = p.failed(err)
			p.conn.poke()
		}
	}
	if p.broken != nil {
		c.done, c.err = true, fmt.Errorf("%s: %w", c.name, p.broken)
		p.conn.observe(c.name, c.sent, &c.err)
	} else {
		p.unread++
	}
	p.q = append(p.q, c)
}

// reuse moves the calls not handed out to the front of the queue once
// half of it or more was handed out, so that a long pipelined run keeps
// a queue about its window's size instead of one entry per call.
func (p *stream[M]) reuse() {
	if p.head == 0 || 2*p.head < len(p.q) {
		return
	}
	n := copy(p.q, p.q[p.head:])
	clear(p.q[n:])
	p.q, p.next, p.head = p.q[:n], max(p.next-p.head, 0), 0
}

// readOne reads the answer to the oldest call without one.
func (p *stream[M]) readOne() {
	p.next = max(p.next, p.head) // those before head are answered
	for p.q[p.next].done {
		p.next++ // answered without a message
	}
	c := &p.q[p.next]
	p.next++
	p.unread--
	c.done = true
	if p.broken != nil {
		c.err = fmt.Errorf("%s: %w", c.name, p.broken)
		p.conn.observe(c.name, c.sent, &c.err)
		return
	}
	var m api.Message
	var err error
	if p.w != nil {
		m, err = c.into, wireLost(p.w.recv(c.into, c.seq))
		c.into = nil
	} else {
		m, err = p.s.RecvMsg()
	}
	switch {
	case errors.Is(err, errWireBroken):
		// Answers no longer match calls: nothing after can be trusted.
		p.broken = fmt.Errorf("%s: %w", c.name, err)
		c.err = p.broken
	case err != nil:
		p.broken = p.failed(err)
		c.err = fmt.Errorf("%s: %w", c.name, p.broken)
		if p.w != nil {
			p.conn.poke()
		}
	case m.GetMessageName() != c.reply:
		// Answers no longer match calls: nothing after can be trusted.
		p.broken = fmt.Errorf("got %s for %s", m.GetMessageName(), c.name)
		c.err = p.broken
	default:
		c.msg = m
		if rv := retval(m); rv != 0 {
			c.err = fmt.Errorf("%s: %w", c.name, api.VPPApiError(rv))
		}
	}
	p.conn.observe(c.name, c.sent, &c.err)
}

// pop hands out the oldest call with its result, reading answers as
// needed; false when none is queued.
func (p *stream[M]) pop() (streamCall[M], bool) {
	if p.head == len(p.q) {
		return streamCall[M]{}, false
	}
	if !p.q[p.head].done {
		p.readOne()
	}
	c := p.q[p.head]
	p.q[p.head] = streamCall[M]{}
	p.head++
	return c, true
}

// close ends the stream; answers not read are dropped.
func (p *stream[M]) close() {
	p.conn.inflight.Add(-int64(p.unread)) // sent, never read: no longer in flight
	if p.w != nil {
		// A wire with nothing in flight serves the next pipeline; one
		// with answers unread (or broken, or whose context ended) is
		// closed.
		if p.stopW() && p.unread == 0 && p.broken == nil {
			p.conn.putWire(p.w)
		} else {
			p.w.close()
		}
		p.w = nil
	} else {
		_ = p.s.Close()
	}
	p.cancel()
	p.q, p.head, p.next, p.unread = nil, 0, 0, 0
}

// bindingPath is the path govpp groups m's binding under (the parent of
// its Go package: "go.fd.io/govpp/binapi", or a release's directory of
// internal/vppapi).
func bindingPath(m api.Message) string { return path.Dir(reflect.TypeOf(m).Elem().PkgPath()) }

// wireLost marks a wire's transport error (VPP closed the socket, a
// write failed) as ErrNotConnected, transient, as a govpp call's is once
// the connection is found lost: a wire notices before the connection's
// health probes do. A timeout, an answer that does not match and a
// message VPP lacks stay as they are.
func wireLost(err error) error {
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errWireBroken) || errors.Is(err, ErrIncompatible) || errors.Is(err, ErrNotConnected) {
		return err
	}
	return fmt.Errorf("%w (the pipeline's connection to VPP broke): %w", ErrNotConnected, err)
}
