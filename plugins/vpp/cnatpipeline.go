package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/servicerenderer/cnat"
)

var _ cnat.Pipeliner = (*CNAT)(nil)

// Pipeline opens a stream on the live connection on which the apply's
// translation updates, deletes by id and interface features and tables
// (cnat.Pipelined) are sent
// without waiting for each answer, as NAT44.Pipeline sends NAT44 calls:
// VPP answers in order, so answers are matched to calls by position, at
// most PipelineWindow in flight. Each call is one message, classified as
// the synchronous method classifies it. A transport failure breaks the
// pipeline: every later call fails with that error.
func (c *CNAT) Pipeline(ctx context.Context) (cnat.Pipeline, error) {
	conn, _, err := c.conn.current()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s, err := conn.NewStream(ctx,
		core.WithRequestSize(PipelineWindow), core.WithReplySize(PipelineWindow+8),
		core.WithReplyTimeout(c.conn.cfg.CallTimeout))
	if err != nil {
		cancel()
		return nil, err
	}
	return &cnatPipeline{c: c, ctx: ctx, s: s, cancel: cancel}, nil
}

// cnatPipeline is a cnat.Pipeline on one govpp stream.
type cnatPipeline struct {
	c      *CNAT
	ctx    context.Context
	s      api.Stream
	cancel context.CancelFunc
	// q holds the calls sent and not handed out by Recv, oldest first,
	// from head; next is the oldest without an answer read from the
	// stream, unread how many have none.
	q      []cnatCall
	head   int
	next   int
	unread int
	broken error
}

// cnatCall is one message sent: what to expect and how to report it.
type cnatCall struct {
	what  string // how errors name the call
	idx   uint32 // the interface's sw_if_index (an interface's call)
	name  string // the request's message name
	reply string // the reply's message name
	sent  time.Time
	done  bool
	err   error
}

// cnatOpRequest is the one message of a pipelined operation, its reply,
// how errors name it and, for an interface's operation, the interface's
// sw_if_index, resolved as the synchronous methods resolve it.
func (p *cnatPipeline) cnatOpRequest(op *cnat.Op) (req, reply api.Message, what string, idx uint32, err error) {
	switch op.Kind {
	case cnat.OpUpdateTranslation:
		what = "cnat translation " + op.Translation.Key.String()
		r, err := translationRequest(op.Translation)
		if err != nil {
			return nil, nil, what, 0, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
		}
		return r, &cnatapi.CnatTranslationUpdateReply{}, what, 0, nil
	case cnat.OpDeleteTranslation:
		if op.HaveID {
			return &cnatapi.CnatTranslationDel{ID: op.ID}, &cnatapi.CnatTranslationDelReply{},
				fmt.Sprintf("delete cnat translation %d", op.ID), 0, nil
		}
	case cnat.OpFeature:
		what = featureWhat(op.Interface, op.Feature, op.Add)
		if idx, err = p.c.index(p.ctx, op.Interface, what); err != nil {
			return nil, nil, what, 0, err
		}
		r, err := featureRequest(idx, op.Feature, op.Add)
		if err != nil {
			return nil, nil, what, idx, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
		}
		return r, &feature.FeatureEnableDisableReply{}, what, idx, nil
	case cnat.OpSNATInterface:
		what = snatInterfaceWhat(op.Interface, op.Table, op.Add)
		if idx, err = p.c.index(p.ctx, op.Interface, what); err != nil {
			return nil, nil, what, 0, err
		}
		return snatInterfaceRequest(idx, op.Table, op.Add), &cnatapi.CnatSnatPolicyAddDelIfReply{}, what, idx, nil
	}
	what = op.Kind.String()
	return nil, nil, what, 0, fmt.Errorf("%s: %w: not pipelined", what, cnat.ErrInvalid)
}

// Send implements cnat.Pipeline.
func (p *cnatPipeline) Send(op *cnat.Op) error {
	req, reply, what, idx, err := p.cnatOpRequest(op)
	if err != nil {
		return err
	}
	if p.broken != nil {
		return classifyCNAT(fmt.Errorf("%s: %w", req.GetMessageName(), p.broken), what)
	}
	if p.head > 0 && p.head == len(p.q) {
		p.q, p.head, p.next = p.q[:0], 0, 0
	}
	if p.unread >= PipelineWindow {
		p.readOne()
	}
	sent := time.Now()
	if err := p.s.SendMsg(req); err != nil {
		p.broken = err
		p.c.conn.poke()
		err = fmt.Errorf("%s: %w", req.GetMessageName(), err)
		p.c.conn.observe(req.GetMessageName(), sent, &err)
		return classifyCNAT(err, what)
	}
	p.unread++
	p.q = append(p.q, cnatCall{what: what, idx: idx, name: req.GetMessageName(), reply: reply.GetMessageName(), sent: sent})
	return nil
}

// readOne reads the answer to the oldest call without one.
func (p *cnatPipeline) readOne() {
	p.next = max(p.next, p.head)
	c := &p.q[p.next]
	p.next++
	p.unread--
	c.done = true
	if p.broken != nil {
		c.err = fmt.Errorf("%s: %w", c.name, p.broken)
		return
	}
	m, err := p.s.RecvMsg()
	switch {
	case err != nil:
		p.broken = err
		c.err = fmt.Errorf("%s: %w", c.name, err)
	case m.GetMessageName() != c.reply:
		// Answers no longer match calls: nothing after can be trusted.
		p.broken = fmt.Errorf("got %s for %s", m.GetMessageName(), c.name)
		c.err = p.broken
	default:
		if rv := retval(m); rv != 0 {
			c.err = fmt.Errorf("%s: %w", c.name, api.VPPApiError(rv))
		}
	}
	p.c.conn.observe(c.name, c.sent, &c.err)
}

// Recv implements cnat.Pipeline: the result of the oldest call in flight.
func (p *cnatPipeline) Recv() (uint32, error) {
	if p.head == len(p.q) {
		return 0, errors.New("cnat pipeline: no call in flight")
	}
	if !p.q[p.head].done {
		p.readOne()
	}
	c := p.q[p.head]
	p.q[p.head] = cnatCall{}
	p.head++
	if p.c.log.Enabled(p.ctx, slog.LevelDebug) {
		p.c.log.Debug("cnat call", "call", c.what, "error", c.err)
	}
	return c.idx, classifyCNAT(c.err, c.what)
}

// Close implements cnat.Pipeline.
func (p *cnatPipeline) Close() {
	p.cancel()
	_ = p.s.Close()
	p.q, p.head, p.next, p.unread = nil, 0, 0, 0
}
