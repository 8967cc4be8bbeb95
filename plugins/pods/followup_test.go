package pods

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
)

// batches records, per applied batch, the events a handler after the pod
// manager took in (the service processor's place).
type batches struct {
	mu   sync.Mutex
	cur  []string
	done [][]string
}

func (b *batches) Name() string { return "recorder" }
func (b *batches) HandlesEvent(ev controller.Event) bool {
	switch ev.(type) {
	case *Call, *addBatch, *service.PodInterfaceEvent:
		return true
	}
	return false
}
func (b *batches) Resync(context.Context, *controller.ResyncEvent) error { return nil }
func (b *batches) Update(_ context.Context, ev controller.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	name := ev.EventName()
	if p, ok := ev.(*service.PodInterfaceEvent); ok {
		name += " " + p.Namespace + "/" + p.Name
	}
	b.cur = append(b.cur, name)
	return nil
}
func (b *batches) ApplyStarting(bool) {}
func (b *batches) Applied(bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = append(b.done, b.cur)
	b.cur = nil
}

// TestAddTellsTheProcessorInItsOwnBatch: the batch that runs a CNI ADD
// also hands the handlers after the pod manager (the service processor)
// a PodInterfaceEvent for the pod, and so does DEL's: the processor
// learns of the pod's interface before the CNI hears the outcome, with
// no later event needed.
func TestAddTellsTheProcessorInItsOwnBatch(t *testing.T) {
	e := newEnv(t, 24)
	rec := &batches{}
	ctl := controller.New(controller.Params{Handlers: []controller.Handler{e.m, rec},
		ApplyObservers: []controller.ApplyObserver{rec, e.m}, BatchHold: -1})
	e.m.SetEvents(ctl)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctl.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{}})
	req := e.request("told", e.netns())
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	for _, op := range []Op{OpAdd, OpDel} {
		if _, err := e.m.Submit(sctx, ctl, op, req); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		rec.mu.Lock()
		i := slices.IndexFunc(rec.done, func(b []string) bool { return slices.Contains(b, "cni-"+string(op)) })
		var got []string
		if i >= 0 {
			got = rec.done[i]
		}
		rec.mu.Unlock()
		if !slices.Contains(got, "pod-interface default/told") {
			t.Errorf("the batch of the %s holds %v; want the pod's PodInterfaceEvent in it", op, got)
		}
	}
}
