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
// single-call operations (pool addresses, identities, mappings, locals,
// routes) are sent without waiting for each answer. VPP answers on one
// connection in order, so answers are matched to calls by position. Each
// answer is classified exactly as the synchronous method classifies it.
// A transport failure (a send or a receive failing, CallTimeout without
// an answer) breaks the pipeline: every later call fails with that error.
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
	return &pipeline{n: n, s: s, cancel: cancel}, nil
}

// pipeline is a nat44.Pipeline on one govpp stream.
type pipeline struct {
	n      *NAT44
	s      api.Stream
	cancel context.CancelFunc
	// q holds the calls sent and not handed out by Recv, oldest first;
	// the last unread of them have no answer read from the stream yet.
	q      []inFlight
	head   int
	unread int
	broken error
}

// inFlight is one call sent: what to expect and how to report it.
type inFlight struct {
	op    *nat44.Op
	name  string // the request's message name
	reply string // the reply's message name
	sent  time.Time
	done  bool
	err   error
}

// Send implements nat44.Pipeline.
func (p *pipeline) Send(op *nat44.Op) error {
	req, reply, err := opRequest(op)
	if err != nil {
		return invalid(describeOp(op), err.Error())
	}
	if p.broken != nil {
		return classify(fmt.Errorf("%s: %w", req.GetMessageName(), p.broken), describeOp(op), false)
	}
	if p.unread >= PipelineWindow {
		p.readOne()
	}
	if err := p.s.SendMsg(req); err != nil {
		p.broken = err
		p.n.conn.poke()
		err = fmt.Errorf("%s: %w", req.GetMessageName(), err)
		p.n.conn.observe(req.GetMessageName(), time.Now(), &err)
		return classify(err, describeOp(op), false)
	}
	if p.head > 0 && p.head == len(p.q) {
		p.q, p.head = p.q[:0], 0
	}
	p.q = append(p.q, inFlight{op: op, name: req.GetMessageName(), reply: reply.GetMessageName(), sent: time.Now()})
	p.unread++
	return nil
}

// readOne reads the answer to the oldest call without one.
func (p *pipeline) readOne() {
	c := &p.q[len(p.q)-p.unread]
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

// Recv implements nat44.Pipeline.
func (p *pipeline) Recv() error {
	if p.head == len(p.q) {
		return errors.New("NAT44 pipeline: no call in flight")
	}
	if !p.q[p.head].done {
		p.readOne()
	}
	c := p.q[p.head]
	p.q[p.head] = inFlight{}
	p.head++
	if p.n.log.Enabled(context.Background(), slog.LevelDebug) {
		p.n.log.Debug("NAT44 call", "op", c.op.String(), "error", c.err)
	}
	// Removing one of a mapping's last two locals is refused with VPP's
	// unspecified error (-1), as in AddDelLBLocal.
	return classify(c.err, describeOp(c.op), c.op.Kind == nat44.OpDelLocal)
}

// Close implements nat44.Pipeline.
func (p *pipeline) Close() {
	p.cancel()
	_ = p.s.Close()
	p.q, p.head, p.unread = nil, 0, 0
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
	}
	return op.String()
}
