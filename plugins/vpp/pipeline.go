package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.fd.io/govpp/api"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"contiv.dev/vpp/servicerenderer/nat44"
)

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
	st, err := openStream[nat44Call](ctx, n.conn)
	if err != nil {
		return nil, err
	}
	return &pipeline{n: n, st: st}, nil
}

// pipeline is a nat44.Pipeline on one stream.
type pipeline struct {
	n  *NAT44
	st *stream[nat44Call]
}

// nat44Call is what one message of a pipelined operation is for (or, with
// no message, the operation that needed none). An operation's messages
// are adjacent; last marks its final one.
type nat44Call struct {
	op   *nat44.Op
	what string // how errors name the call; "" for describeOp(op)
	last bool
}

// Send implements nat44.Pipeline.
func (p *pipeline) Send(op *nat44.Op) error {
	var calls []featureCall
	var req, reply api.Message
	var err error
	if op.Kind == nat44.OpSetInterface {
		calls, err = p.featureCalls(op)
	} else if req, reply, err = opRequest(op, p.n.conn.Release()); err != nil {
		err = invalid(describeOp(op), err.Error())
	}
	if err != nil {
		return err
	}
	if p.st.broken != nil {
		what := describeOp(op)
		return classify(fmt.Errorf("%s: %w", what, p.st.broken), what, false)
	}
	if req != nil {
		// One call, the common case: no list of calls is made.
		p.st.send(nat44Call{op: op, last: true}, req, reply)
		return nil
	}
	if len(calls) == 0 {
		p.st.settled(nat44Call{op: op, last: true})
		return nil
	}
	for i, c := range calls {
		p.st.send(nat44Call{op: op, what: c.what, last: i == len(calls)-1}, c.req, c.reply)
	}
	return nil
}

// featureCalls are the messages of an OpSetInterface. An error is op's
// result: nothing is to be sent.
func (p *pipeline) featureCalls(op *nat44.Op) ([]featureCall, error) {
	if op.OldFeatures == op.NewFeatures {
		return nil, nil
	}
	idx, ok, err := p.n.ifaces.index(p.st.ctx, op.Interface)
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

// Recv implements nat44.Pipeline: the result of the oldest operation in
// flight, its messages' errors joined as the synchronous method joins
// them.
func (p *pipeline) Recv() error {
	var errs []error // made only for an operation of several calls
	for {
		c, ok := p.st.pop()
		if !ok {
			return errors.New("NAT44 pipeline: no call in flight")
		}
		if c.name != "" {
			what := c.meta.what
			if c.err != nil && what == "" {
				what = describeOp(c.meta.op)
			}
			if p.n.log.Enabled(p.st.ctx, slog.LevelDebug) {
				p.n.log.Debug("NAT44 call", "op", c.meta.op.String(), "call", what, "err", c.err)
			}
			// Removing one of a mapping's last two locals is refused with
			// VPP's unspecified error (-1), as in AddDelLBLocal.
			err := classify(c.err, what, c.meta.op.Kind == nat44.OpDelLocal)
			if c.meta.last && errs == nil {
				return err
			}
			errs = append(errs, err)
		}
		if c.meta.last {
			break
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Close implements nat44.Pipeline.
func (p *pipeline) Close() { p.st.close() }

// opRequest is the request (and its reply) of a single-call operation,
// the same the synchronous methods send.
func opRequest(op *nat44.Op, rel *Release) (req, reply api.Message, err error) {
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
		return localRequest(op.Mapping.MappingKey, op.Local, op.Kind == nat44.OpAddLocal), &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}, nil
	case nat44.OpAddRoute, nat44.OpDelRoute:
		r, err := routeRequest(op.Route, op.Kind == nat44.OpAddRoute, rel)
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
		return routeWhat(op.Route.Prefix.AsPrefix(), op.Route.VRF, add)
	case nat44.OpSetInterface:
		return fmt.Sprintf("NAT44 features of interface %q", op.Interface)
	}
	return op.String()
}
