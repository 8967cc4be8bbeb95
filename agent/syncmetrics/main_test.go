package syncmetrics

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/controller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeApplier fails while err is set and counts its calls.
type fakeApplier struct {
	err   error
	calls int
}

func (f *fakeApplier) Apply(context.Context, bool) error {
	f.calls++
	return f.err
}

// observed is inner's apply step watched by obs, as the controller runs
// it (controller.Observe).
type observed struct {
	inner controller.Applier
	obs   []controller.ApplyObserver
}

func (o observed) Apply(ctx context.Context, full bool) error {
	return controller.Observe(o.obs, full, func() error { return o.inner.Apply(ctx, full) })
}
