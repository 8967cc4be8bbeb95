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
// one owner: plugins/vpp owner.go). It reads VPP's owner marker before the
// first apply on each VPP connection and again before every full apply
// (one interface dump): none, it marks VPP as its own and applies; its
// own, it applies; another agent's, it applies nothing (the apply fails,
// so the controller's healing tries again with its backoff, each time a
// full apply that reads the marker again) and readiness names the other
// owner, unless vpp.takeOver says to take VPP over. Two agents starting at
// once on one VPP may both find it unmarked and both mark it: the last
// marker wins, and the other agent stops programming VPP at its next full
// apply (its periodic resync at the latest), logging it once.
//
// The marker is this agent's cluster name (clusterName) and node name,
// both from the configuration: a new or restored etcd changes neither.
// A marker of an agent before clusterName, "contiv@<etcd cluster ID>/<node>"
// with this node's name, is taken as this node's own and rewritten: an
// upgraded agent keeps its VPP without vpp.takeOver. (Only agents of two
// clusters with the same node name on one VPP could be confused by it, and
// only while the old one has not been upgraded.)
type ownership struct {
	inner    controller.Applier
	conn     ownerConn
	tag      string // this agent's marker
	node     string // this agent's node name (legacy markers)
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

// ownerTag is this agent's owner marker on VPP.
func (a *Agent) ownerTag() string { return vpp.OwnerTag(a.cfg.ClusterName, a.cfg.NodeName) }

// newOwnership is the gate of the agent's applies.
func (a *Agent) newOwnership(inner controller.Applier) *ownership {
	return &ownership{inner: inner, conn: a.conn, tag: a.ownerTag(), node: a.cfg.NodeName,
		takeOver: a.cfg.VPP.TakeOver, log: a.log.With("part", "vpp-owner")}
}

// Apply implements controller.Applier: it applies only to a VPP this
// agent owns.
func (o *ownership) Apply(ctx context.Context, full bool) error {
	if err := o.settle(ctx, full); err != nil {
		return err
	}
	return o.inner.Apply(ctx, full)
}

// settle makes sure this agent owns the VPP it is connected to: it reads
// the marker on a new connection, while another agent owns VPP, and at
// every full apply.
func (o *ownership) settle(ctx context.Context, full bool) error {
	conn := o.conn.Status().Connects
	o.mu.Lock()
	done := !full && o.settled == conn && o.other == ""
	had := o.settled == conn && o.other == "" // this agent owned VPP until now
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
	case vpp.IsLegacyOwnerTag(tag, o.node):
		o.log.Info("VPP carries this node's owner mark from before clusterName: rewriting it", "old", tag, "owner", o.tag)
		if err := o.mark(ctx); err != nil {
			return err
		}
	case marked && !o.takeOver:
		o.mu.Lock()
		first := o.other != owner
		o.other = owner
		o.mu.Unlock()
		if first && had {
			o.log.Error("another agent marked VPP as its own since this agent did: not programming it any more (vpp.takeOver: true takes it over)", "owner", owner, "self", o.tag)
		} else if first {
			o.log.Error("VPP is managed by another agent: not programming it (vpp.takeOver: true takes it over)", "owner", owner, "self", o.tag)
		}
		return fmt.Errorf("%w (%s)", errOtherOwner, owner)
	default:
		if marked {
			o.log.Warn("taking VPP over from another agent (vpp.takeOver)", "owner", owner, "self", o.tag)
		} else if tag != "" {
			o.log.Warn("VPP's local0 has a tag that is no owner marker: replacing it", "tag", tag)
		}
		if err := o.mark(ctx); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.settled, o.other = conn, ""
	o.mu.Unlock()
	return nil
}

// mark marks VPP as this agent's.
func (o *ownership) mark(ctx context.Context) error {
	if err := o.conn.MarkOwner(ctx, o.tag); err != nil {
		return err
	}
	if o.marked != nil {
		o.marked()
	}
	o.log.Info("VPP marked as this agent's", "owner", o.tag)
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
