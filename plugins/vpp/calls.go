package vpp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"
)

// invoke sends one request on the live connection and decodes its reply.
// A non-zero Retval comes back as an api.VPPApiError.
func (c *Conn) invoke(ctx context.Context, req, reply api.Message) error {
	conn, lost, err := c.live()
	if err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	ctx, done, failed := whileLive(ctx, lost)
	defer done()
	return failed(c.invokeOn(ctx, conn, req, reply))
}

func (c *Conn) invokeOn(ctx context.Context, conn *core.Connection, req, reply api.Message) (err error) {
	c.begin()
	defer c.observe(req.GetMessageName(), time.Now(), &err)
	return call(ctx, conn, req, reply)
}

// call is invokeOn without observation (health probes).
func call(ctx context.Context, conn *core.Connection, req, reply api.Message) error {
	if err := conn.Invoke(ctx, req, reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	if rv := retval(reply); rv != 0 {
		return fmt.Errorf("%s: %w", req.GetMessageName(), api.VPPApiError(rv))
	}
	return nil
}

// begin counts a call sent; observe counts it finished.
func (c *Conn) begin() { c.inflight.Add(1) }

// observe reports a finished call to OnCall, and notes when VPP last
// answered one (an answer with an error code is an answer).
func (c *Conn) observe(msg string, start time.Time, err *error) {
	c.inflight.Add(-1)
	var apiErr api.VPPApiError
	if *err == nil || errors.As(*err, &apiErr) {
		c.answered.Store(time.Now().UnixNano())
	}
	if c.cfg.OnCall != nil {
		c.cfg.OnCall(msg, time.Since(start), *err)
	}
}

// retval reads the Retval field every VPP reply has.
func retval(m api.Message) int32 {
	if f := reflect.Indirect(reflect.ValueOf(m)).FieldByName("Retval"); f.IsValid() && f.CanInt() {
		return int32(f.Int())
	}
	return 0
}

// DumpReplyBuffer is how many replies a dump's stream holds for its reader.
// govpp hands replies over through a channel and drops one its reader does
// not take in time once the channel is full (it logs that; nothing else
// tells): with its default 100 and 100 ms, a reader stalled that long (a
// GC pause, a starved CPU) in the middle of a large dump lost objects,
// which the agent then took for missing. A dump of up to this many objects
// is never cut short, however long its reader stalls; a larger one only
// when its reader stalls past replyHandOver, and then the dump fails
// (ErrRepliesDropped) rather than return less. The channel costs 512 KiB
// per dump.
const DumpReplyBuffer = 1 << 16

// stream sends requests on one stream and hands every answer to each
// until each says the stream is done.
func (c *Conn) stream(ctx context.Context, reqs []api.Message, each func(api.Message) (done bool, err error), opts ...api.StreamOption) (err error) {
	name := reqs[0].GetMessageName()
	conn, lost, err := c.live()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.begin()
	defer c.observe(name, time.Now(), &err)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	ctx, done, failed := whileLive(ctx, lost)
	defer done()
	defer func() { err = failed(err) }()
	s, err := conn.NewStream(ctx, opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer func() { _ = s.Close() }()
	for _, r := range reqs {
		if err := s.SendMsg(r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for {
		m, err := s.RecvMsg()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		done, err := each(m)
		if err != nil || done {
			return err
		}
	}
}

// dumpReplies is DumpReplyBuffer; tests make it small.
var dumpReplies = DumpReplyBuffer

// dump runs a dump request and hands every details message to each. It
// fails with ErrRepliesDropped when govpp dropped a reply meanwhile.
func (c *Conn) dump(ctx context.Context, req api.Message, each func(api.Message) error) error {
	dropped := droppedReplies.Load()
	err := c.stream(ctx, []api.Message{req, &memclnt.ControlPing{}}, func(m api.Message) (bool, error) {
		if _, end := m.(*memclnt.ControlPingReply); end {
			return true, nil
		}
		return false, each(m)
	}, core.WithReplySize(dumpReplies))
	if err == nil && droppedReplies.Load() != dropped {
		err = fmt.Errorf("%s: %w", req.GetMessageName(), ErrRepliesDropped)
	}
	return err
}
