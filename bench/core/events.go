package core

import (
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// Events are W(N)'s inputs as the controller hands them over, every
// object decoded from its stored bytes: the base snapshot, the churn as
// changes, and node 101 joining.
type Events struct {
	Snap  *controller.Snapshot
	Churn []*controller.ChangeEvent
	// churnSvc is the service each churn change touches.
	ChurnSvc []int
	// undo reverts the churn, last change first.
	Undo []*controller.ChangeEvent
	Join []controller.Event
}

// decoded is o as the controller's watcher delivers it: decoded from its
// stored bytes, with none of its memory shared with o.
func decoded[T kubestate.Object](o T) (T, error) {
	var zero T
	b, err := kubestate.Encode(o)
	if err != nil {
		return zero, err
	}
	d, err := kubestate.Decode(o.Key(), b)
	if err != nil {
		return zero, err
	}
	return d.(T), nil
}

// NewEvents decodes W(N)'s base snapshot and node 101's join; the churn is
// decoded apart (DecodeChurn), so that a measurement can decode it just
// before it runs, as the watcher would.
func NewEvents(w *workload.Workload) (*Events, error) {
	objs := w.Objects()
	for k, o := range objs {
		d, err := decoded(o)
		if err != nil {
			return nil, err
		}
		objs[k] = d
	}
	ev := &Events{Snap: &controller.Snapshot{Revision: 1, Objects: objs}}
	node, rec := workload.JoinNode()
	n, err := decoded(node)
	if err != nil {
		return nil, err
	}
	vn, err := decoded(rec)
	if err != nil {
		return nil, err
	}
	ev.Join = []controller.Event{
		&controller.ChangeEvent{Key: n.Key(), New: n},
		&controller.ChangeEvent{Key: vn.Key(), New: vn},
		&controller.NodeUpdate{Name: vn.Name, New: vn},
	}
	return ev, nil
}

// DecodeChurn decodes the churn and its undoing; each change's Prev is the
// object the change before left under its key.
func (ev *Events) DecodeChurn(w *workload.Workload) error {
	cur := map[kubestate.Key]kubestate.Object{}
	step := func(next *kubestate.EndpointSlice) (*controller.ChangeEvent, error) {
		d, err := decoded(next)
		if err != nil {
			return nil, err
		}
		// The key is the decoded object's, as the watcher's is: strings
		// just made, not the workload's, built long before.
		k := d.Key()
		prev, ok := cur[k]
		if !ok {
			prev = ev.Snap.Objects[k]
		}
		cur[k] = d
		return &controller.ChangeEvent{Key: k, Prev: prev, New: d}, nil
	}
	cs := w.Churn()
	ev.Churn, ev.ChurnSvc, ev.Undo = make([]*controller.ChangeEvent, 0, len(cs)), make([]int, 0, len(cs)), make([]*controller.ChangeEvent, 0, len(cs))
	for _, c := range cs {
		ch, err := step(c.New)
		if err != nil {
			return err
		}
		ev.Churn = append(ev.Churn, ch)
		ev.ChurnSvc = append(ev.ChurnSvc, c.S)
	}
	for i := len(cs) - 1; i >= 0; i-- {
		ch, err := step(cs[i].Prev)
		if err != nil {
			return err
		}
		ev.Undo = append(ev.Undo, ch)
	}
	return nil
}

// AllEvents is NewEvents and DecodeChurn.
func AllEvents(w *workload.Workload) (*Events, error) {
	ev, err := NewEvents(w)
	if err != nil {
		return nil, err
	}
	return ev, ev.DecodeChurn(w)
}
