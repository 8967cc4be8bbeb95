package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	ipapi "go.fd.io/govpp/binapi/ip"

	"contiv.dev/vpp/servicerenderer/cnat"
)

var _ cnat.Pipeliner = (*CNAT)(nil)

// Pipeline opens a stream on the live connection on which the apply's
// translation updates, deletes by id and interface features and tables
// (cnat.Pipelined) are sent without waiting for each answer, as
// NAT44.Pipeline sends NAT44 calls (the same stream core): answers are
// matched to calls by position, at most PipelineWindow in flight. Each
// call is one message, classified as the synchronous method classifies
// it. A transport failure breaks the pipeline: every later call fails
// with that error.
func (c *CNAT) Pipeline(ctx context.Context) (cnat.Pipeline, error) {
	st, err := openStream[cnatCall](ctx, c.conn)
	if err != nil {
		return nil, err
	}
	return &cnatPipeline{c: c, st: st}, nil
}

// cnatPipeline is a cnat.Pipeline on one stream.
type cnatPipeline struct {
	c  *CNAT
	st *stream[cnatCall]
	// update and updated are every translation update's request and
	// reply: a request is encoded as it is sent, and a reply's result
	// read as it is decoded (nothing keeps either), so that a pipeline of
	// thousands of updates allocates neither.
	update  cnatapi.CnatTranslationUpdate
	updated cnatapi.CnatTranslationUpdateReply
}

// cnatCall is what one pipelined message is for.
type cnatCall struct {
	what string   // how errors name the call; "" for a translation update
	key  cnat.Key // the translation updated (what is "")
	idx  uint32   // the interface's sw_if_index (an interface's call)
}

// name is how errors name the call, made only when one is reported.
func (c cnatCall) name() string {
	if c.what == "" {
		return translationWhat(c.key)
	}
	return c.what
}

// translationWhat is how errors name a translation update.
func translationWhat(k cnat.Key) string { return "cnat translation " + k.String() }

// cnatOpRequest is the one message of a pipelined operation, its reply,
// how errors name it ("" for a translation update: translationWhat) and,
// for an interface's operation, the interface's sw_if_index, resolved as
// the synchronous methods resolve it.
func (p *cnatPipeline) cnatOpRequest(op *cnat.Op) (req, reply api.Message, what string, idx uint32, err error) {
	switch op.Kind {
	case cnat.OpUpdateTranslation:
		if err := fillTranslation(&p.update, op.Translation); err != nil {
			return nil, nil, "", 0, fmt.Errorf("%s: %w: %s", translationWhat(op.Translation.Key), cnat.ErrInvalid, err)
		}
		return &p.update, &p.updated, "", 0, nil
	case cnat.OpDeleteTranslation:
		if op.HaveID {
			return &cnatapi.CnatTranslationDel{ID: op.ID}, &cnatapi.CnatTranslationDelReply{},
				fmt.Sprintf("delete cnat translation %d", op.ID), 0, nil
		}
	case cnat.OpFeature:
		what = featureWhat(op.Interface, op.Feature, op.Add)
		if idx, err = p.c.index(p.st.ctx, op.Interface, what); err != nil {
			return nil, nil, what, 0, err
		}
		r, reply, err := p.c.conn.Release().cnatFeatureRequest(idx, op.Feature, op.Add)
		if err != nil {
			return nil, nil, what, idx, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
		}
		return r, reply, what, idx, nil
	case cnat.OpSNATInterface:
		what = snatInterfaceWhat(op.Interface, op.Table, op.Add)
		if idx, err = p.c.index(p.st.ctx, op.Interface, what); err != nil {
			return nil, nil, what, 0, err
		}
		return snatInterfaceRequest(idx, op.Table, op.Add), &cnatapi.CnatSnatPolicyAddDelIfReply{}, what, idx, nil
	case cnat.OpRoute, cnat.OpVerdictRoute:
		rt := op.Route
		what = routeWhat(rt.Prefix, rt.VRF, op.Add)
		r, err := pathRequest(rt.Prefix, rt.VRF, op.Add, rt.Kind == cnat.RouteReject, rt.Kind == cnat.RouteLookup, rt.Table, p.c.conn.Release())
		if err != nil {
			return nil, nil, what, 0, fmt.Errorf("%s: %w: %s", what, cnat.ErrInvalid, err)
		}
		return r, &ipapi.IPRouteAddDelReply{}, what, 0, nil
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
	call := cnatCall{what: what, idx: idx}
	if what == "" {
		call.key = op.Translation.Key
	}
	if req == nil {
		// Nothing to send on this release (a cnat feature enabled with
		// the interface's FeatureInput4 call): done.
		p.st.settled(call)
		return nil
	}
	if p.st.broken != nil {
		return classifyCNAT(fmt.Errorf("%s: %w", req.GetMessageName(), p.st.broken), call.name())
	}
	p.st.send(call, req, reply)
	return nil
}

// Recv implements cnat.Pipeline: the result of the oldest call in flight.
func (p *cnatPipeline) Recv() (uint32, error) {
	c, ok := p.st.pop()
	if !ok {
		return 0, errors.New("cnat pipeline: no call in flight")
	}
	if p.c.log.Enabled(p.st.ctx, slog.LevelDebug) {
		p.c.log.Debug("cnat call", "call", c.meta.name(), "err", c.err)
	}
	if c.err == nil {
		return c.meta.idx, nil
	}
	return c.meta.idx, classifyCNAT(c.err, c.meta.name())
}

// Close implements cnat.Pipeline.
func (p *cnatPipeline) Close() { p.st.close() }
