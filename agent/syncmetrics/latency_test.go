package syncmetrics

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

func histCount(t *testing.T, l *Latency) uint64 {
	t.Helper()
	var m dto.Metric
	if err := l.hist.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestLatencyTracker: each trigger time is observed once, after an apply
// succeeded; trigger times older than the start, repeated ones and those a
// resync dropped are not.
func TestLatencyTracker(t *testing.T) {
	inner := &fakeApplier{}
	l := NewLatency()
	app := observed{inner: inner, obs: []controller.ApplyObserver{l}}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := start.Add(time.Minute)
	l.start, l.now = start, func() time.Time { return now }
	ctx := context.Background()
	key := kubestate.Key{Resource: kubestate.ResEndpointSlice, Namespace: "shop", Name: "web-abc"}
	slice := func(trigger time.Time) *controller.ChangeEvent {
		return &controller.ChangeEvent{Key: key, New: &kubestate.EndpointSlice{Namespace: "shop", Name: "web-abc", ServiceName: "web", AddressType: "IPv4", TriggerTime: trigger}}
	}
	step := func(ev controller.Event) {
		t.Helper()
		if !l.HandlesEvent(ev) {
			t.Fatalf("HandlesEvent(%s) = false", ev.EventName())
		}
		if err := l.Update(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	apply := func() {
		t.Helper()
		if err := app.Apply(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	want := func(observed, stale, repeated uint64, why string) {
		t.Helper()
		v := l.View()
		if v.Observed != observed || v.Stale != stale || v.Repeated != repeated || histCount(t, l) != observed ||
			vecCount(t, l.kpHist, "IPv4") != observed { // kube-proxy's name, by the slice's family
			t.Fatalf("%s: %+v (histogram %d), want observed=%d stale=%d repeated=%d", why, v, histCount(t, l), observed, stale, repeated)
		}
	}

	step(slice(start.Add(-time.Hour))) // a change from before the agent started
	apply()
	want(0, 1, 0, "trigger time older than the start")

	t1 := now.Add(-20 * time.Millisecond)
	step(slice(t1))
	step(slice(t1)) // the same change twice in one batch counts once
	inner.err = errors.New("vpp down")
	if err := app.Apply(ctx, false); err == nil {
		t.Fatal("apply error not returned")
	}
	want(0, 1, 0, "failed apply observes nothing")
	inner.err = nil
	now = now.Add(10 * time.Millisecond)
	apply()
	want(1, 1, 0, "observed after the apply that succeeded")
	if v := l.View(); v.P50 < 0.029 || v.P50 > 0.031 || v.Max != v.P50 {
		t.Errorf("latency %+v, want 0.03 s", v)
	}

	step(slice(t1)) // delivered again (another field changed): not measured again
	apply()
	want(1, 1, 1, "repeated trigger time")

	t2 := now.Add(-5 * time.Millisecond)
	step(slice(t2))
	if err := l.Resync(ctx, &controller.ResyncEvent{State: &controller.Snapshot{}}); err != nil {
		t.Fatal(err)
	}
	apply()
	want(1, 1, 1, "a resync drops what was pending")

	// The slice was deleted (the resync's snapshot lacks it): a new slice
	// of that name with a newer trigger time is measured.
	t3 := now.Add(-time.Millisecond)
	step(slice(t3))
	apply()
	want(2, 1, 1, "new trigger time")
	if l.HandlesEvent(&controller.ChangeEvent{Key: kubestate.Key{Resource: kubestate.ResService}}) {
		t.Error("services are no EndpointSlices")
	}
}

func TestQuantile(t *testing.T) {
	w := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0.5: 5, 0.99: 10, 0.1: 1, 0: 1} {
		if got := quantile(w, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
