package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
)

// errOtherOwner is the apply error while another agent owns VPP.
var errOtherOwner = errors.New("VPP is managed by another agent")

// ownerConn is what ownership needs of the VPP connection.
type ownerConn interface {
	ReadOwner(ctx context.Context) (string, error)
	MarkOwner(ctx context.Context, tag string) error
	Status() vpp.Status
}

// ownership keeps the agent off a VPP another agent manages (one VPP,
// one owner: plugins/vpp owner.go). Before the first apply on each VPP
// connection it reads VPP's owner marker: none, it marks VPP as its own
// and applies; its own, it applies; another agent's, it applies nothing
// (the apply fails, so the controller's healing tries again with its
// backoff) and readiness names the other owner, unless vpp.takeOver says
// to take VPP over. Two agents starting at once on one VPP may both find
// it unmarked: the last marker wins, and the other agent refuses VPP on
// its next connection.
type ownership struct {
	inner    controller.Applier
	conn     ownerConn
	tag      string // this agent's marker
	takeOver bool
	log      *slog.Logger
	// marked, when set, is told each time VPP is marked as this agent's.
	marked func()

	mu sync.Mutex
	// settled is the connection (Status().Connects) whose owner was
	// found to be this agent; other the owner found instead ("" none).
	settled int
	other   string
}

// newOwnership is the gate of the agent's applies; cluster is the etcd
// cluster's ID.
func (a *Agent) newOwnership(inner controller.Applier, cluster string) *ownership {
	return &ownership{inner: inner, conn: a.conn, tag: vpp.OwnerTag(cluster, a.cfg.NodeName),
		takeOver: a.cfg.VPP.TakeOver, log: a.log.With("part", "vpp-owner")}
}

// Apply implements controller.Applier: it applies only to a VPP this
// agent owns.
func (o *ownership) Apply(ctx context.Context, full bool) error {
	if err := o.settle(ctx); err != nil {
		return err
	}
	return o.inner.Apply(ctx, full)
}

// settle makes sure this agent owns the VPP it is connected to.
func (o *ownership) settle(ctx context.Context) error {
	conn := o.conn.Status().Connects
	o.mu.Lock()
	done := o.settled == conn && o.other == ""
	o.mu.Unlock()
	if done {
		return nil
	}
	tag, err := o.conn.ReadOwner(ctx)
	if err != nil {
		return err
	}
	owner, marked := vpp.OwnerOf(tag)
	switch {
	case tag == o.tag:
	case marked && !o.takeOver:
		o.mu.Lock()
		first := o.other != owner
		o.other = owner
		o.mu.Unlock()
		if first {
			o.log.Error("VPP is managed by another agent: not programming it (vpp.takeOver: true takes it over)", "owner", owner, "self", o.tag)
		}
		return fmt.Errorf("%w (%s)", errOtherOwner, owner)
	default:
		if marked {
			o.log.Warn("taking VPP over from another agent (vpp.takeOver)", "owner", owner, "self", o.tag)
		} else if tag != "" {
			o.log.Warn("VPP's local0 has a tag that is no owner marker: replacing it", "tag", tag)
		}
		if err := o.conn.MarkOwner(ctx, o.tag); err != nil {
			return err
		}
		if o.marked != nil {
			o.marked()
		}
		o.log.Info("VPP marked as this agent's", "owner", o.tag)
	}
	o.mu.Lock()
	o.settled, o.other = conn, ""
	o.mu.Unlock()
	return nil
}

// reason says why the agent is not ready because of VPP's owner ("" when
// it is not).
func (o *ownership) reason() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.other == "" {
		return ""
	}
	return fmt.Sprintf("VPP is managed by another agent (%s): not programming it; stop that agent, or set vpp.takeOver to take VPP over", o.other)
}
