package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.fd.io/govpp/api"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// PipelineWindow is how many calls a Pipeline keeps in flight at most.
// govpp drops answers its reply queue cannot take within 100 ms, so the
// stream's queue is sized to hold the whole window.
const PipelineWindow = 256

var _ nat44.Pipeliner = (*NAT44)(nil)

// Pipeline opens a stream on the live connection on which the apply's
// operations but the global settings (pool addresses, interface features,
// identities, mappings, locals, routes) are sent without waiting for each
// answer. VPP answers on one connection in order, so answers are matched
// to calls by position. Each operation's result is classified exactly as
// the synchronous method classifies it. A transport failure (a send or a
// receive failing, CallTimeout without an answer) breaks the pipeline:
// every later call fails with that error.
func (n *NAT44) Pipeline(ctx context.Context) (nat44.Pipeline, error) {
	conn, _, err := n.conn.current()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s, err := conn.NewStream(ctx,
		core.WithRequestSize(PipelineWindow), core.WithReplySize(PipelineWindow+8),
		core.WithReplyTimeout(n.conn.cfg.CallTimeout))
	if err != nil {
		cancel()
		return nil, err
	}
	return &pipeline{n: n, ctx: ctx, s: s, cancel: cancel}, nil
}

// pipeline is a nat44.Pipeline on one govpp stream.
type pipeline struct {
	n      *NAT44
	ctx    context.Context
	s      api.Stream
	cancel context.CancelFunc
	// q holds the messages sent and not handed out by Recv, oldest first,
	// from head; next is the oldest without an answer read from the
	// stream, unread how many have none.
	q      []inFlight
	head   int
	next   int
	unread int
	broken error
}

// inFlight is one message sent (or, with no name, an operation that
// needed none): what to expect and how to report it. An operation's
// messages are adjacent; last marks its final one.
type inFlight struct {
	op    *nat44.Op
	name  string // the request's message name
	reply string // the reply's message name
	what  string // how errors name the call; "" for describeOp(op)
	last  bool
	sent  time.Time
	done  bool
	err   error
}

// Send implements nat44.Pipeline.
func (p *pipeline) Send(op *nat44.Op) error {
	calls, err := p.calls(op)
	if err != nil {
		return err
	}
	if p.broken != nil {
		what := describeOp(op)
		return classify(fmt.Errorf("%s: %w", what, p.broken), what, false)
	}
	if p.head > 0 && p.head == len(p.q) {
		p.q, p.head, p.next = p.q[:0], 0, 0
	}
	if len(calls) == 0 {
		p.q = append(p.q, inFlight{op: op, last: true, done: true})
		return nil
	}
	for i, c := range calls {
		if p.unread >= PipelineWindow {
			p.readOne()
		}
		f := inFlight{op: op, name: c.req.GetMessageName(), reply: c.reply.GetMessageName(), what: c.what, last: i == len(calls)-1, sent: time.Now()}
		if err := p.s.SendMsg(c.req); err != nil {
			p.broken = err
			p.n.conn.poke()
		}
		if p.broken != nil {
			f.done, f.err = true, fmt.Errorf("%s: %w", f.name, p.broken)
			p.n.conn.observe(f.name, f.sent, &f.err)
		} else {
			p.unread++
		}
		p.q = append(p.q, f)
	}
	return nil
}

// calls are the messages of op. An error is op's result: nothing is to
// be sent. How errors name a call is left empty where describeOp(op) says
// it, and built only for an error.
func (p *pipeline) calls(op *nat44.Op) ([]featureCall, error) {
	if op.Kind == nat44.OpSetInterface {
		if op.OldFeatures == op.NewFeatures {
			return nil, nil
		}
		idx, ok, err := p.n.ifaces.index(p.ctx, op.Interface)
		what := describeOp(op)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", what, err)
		case !ok:
			return nil, fmt.Errorf("%s: %w: %w", what, nat44.ErrNoInterface, nat44.ErrInvalid)
		}
		op.SwIfIndex = idx
		return featureCalls(op.Interface, idx, op.OldFeatures, op.NewFeatures), nil
	}
	req, reply, err := opRequest(op)
	if err != nil {
		return nil, invalid(describeOp(op), err.Error())
	}
	return []featureCall{{req: req, reply: reply}}, nil
}

// readOne reads the answer to the oldest message without one.
func (p *pipeline) readOne() {
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
	p.n.conn.observe(c.name, c.sent, &c.err)
}

// Recv implements nat44.Pipeline: the result of the oldest operation in
// flight, its messages' errors joined as the synchronous method joins
// them.
func (p *pipeline) Recv() error {
	var errs []error
	for {
		if p.head == len(p.q) {
			return errors.New("NAT44 pipeline: no call in flight")
		}
		if !p.q[p.head].done {
			p.readOne()
		}
		c := p.q[p.head]
		p.q[p.head] = inFlight{}
		p.head++
		if c.name != "" {
			if c.err != nil && c.what == "" {
				c.what = describeOp(c.op)
			}
			if p.n.log.Enabled(p.ctx, slog.LevelDebug) {
				p.n.log.Debug("NAT44 call", "op", c.op.String(), "call", c.what, "error", c.err)
			}
			// Removing one of a mapping's last two locals is refused with
			// VPP's unspecified error (-1), as in AddDelLBLocal.
			errs = append(errs, classify(c.err, c.what, c.op.Kind == nat44.OpDelLocal))
		}
		if c.last {
			break
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Close implements nat44.Pipeline.
func (p *pipeline) Close() {
	p.cancel()
	_ = p.s.Close()
	p.q, p.head, p.next, p.unread = nil, 0, 0, 0
}

// opRequest is the request (and its reply) of a single-call operation,
// the same the synchronous methods send.
func opRequest(op *nat44.Op) (req, reply api.Message, err error) {
	switch op.Kind {
	case nat44.OpAddPool, nat44.OpDelPool:
		r, err := poolRequest(op.Pool, op.Kind == nat44.OpAddPool)
		return r, &nat44_ed.Nat44AddDelAddressRangeReply{}, err
	case nat44.OpAddIdentity, nat44.OpDelIdentity:
		r, err := identityRequest(op.Identity, op.Kind == nat44.OpAddIdentity)
		return r, &nat44_ed.Nat44AddDelIdentityMappingReply{}, err
	case nat44.OpAddMapping, nat44.OpDelMapping:
		return mappingRequest(op.Mapping, op.Kind == nat44.OpAddMapping)
	case nat44.OpAddLocal, nat44.OpDelLocal:
		r, err := localRequest(op.Mapping.MappingKey, op.Local, op.Kind == nat44.OpAddLocal)
		return r, &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}, err
	case nat44.OpAddRoute, nat44.OpDelRoute:
		r, err := routeRequest(op.Route, op.Kind == nat44.OpAddRoute)
		return r, &ipapi.IPRouteAddDelReply{}, err
	}
	return nil, nil, fmt.Errorf("operation %s is not pipelined", op.Kind)
}

// poolRequest is the request that adds or deletes one pool address.
func poolRequest(a nat44.PoolAddress, add bool) (*nat44_ed.Nat44AddDelAddressRange, error) {
	ip, ok := ip4(a.IP)
	if !ok {
		return nil, errors.New("not an IPv4 address")
	}
	req := &nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip, LastIPAddress: ip, VrfID: a.VRF, IsAdd: add}
	if a.TwiceNAT {
		req.Flags = nat_types.NAT_IS_TWICE_NAT
	}
	return req, nil
}

// describeOp names an operation in errors as the synchronous methods do.
func describeOp(op *nat44.Op) string {
	add := false
	switch op.Kind {
	case nat44.OpAddPool, nat44.OpAddIdentity, nat44.OpAddMapping, nat44.OpAddLocal, nat44.OpAddRoute:
		add = true
	}
	switch op.Kind {
	case nat44.OpAddPool, nat44.OpDelPool:
		a := op.Pool
		return fmt.Sprintf("%s NAT44 pool address %v (vrf %d, twice-NAT %v)", addDel(add), a.IP, a.VRF, a.TwiceNAT)
	case nat44.OpAddIdentity, nat44.OpDelIdentity:
		return identityWhat(op.Identity, add)
	case nat44.OpAddMapping, nat44.OpDelMapping:
		return mappingWhat(op.Mapping, add)
	case nat44.OpAddLocal, nat44.OpDelLocal:
		return localWhat(op.Mapping.MappingKey, op.Local, add)
	case nat44.OpAddRoute, nat44.OpDelRoute:
		return fmt.Sprintf("%s drop route %v in VRF %d", addDel(add), op.Route.Prefix, op.Route.VRF)
	case nat44.OpSetInterface:
		return fmt.Sprintf("NAT44 features of interface %q", op.Interface)
	}
	return op.String()
}
