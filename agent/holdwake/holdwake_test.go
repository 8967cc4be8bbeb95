package holdwake

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/controller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHoldWaker: when the renderer's hold has a bound, the waker pushes
// an event once it has passed (nothing else may make the controller
// apply); re-arming with the same bound sets no second timer, and nothing
// held stops it.
func TestHoldWaker(t *testing.T) {
	var mu sync.Mutex
	until := time.Now().Add(5 * time.Millisecond)
	pushed := make(chan controller.Event, 4)
	w := New(func() time.Time { mu.Lock(); defer mu.Unlock(); return until },
		func(ev controller.Event) { pushed <- ev })
	defer w.Stop()
	w.Arm()
	w.Arm()
	select {
	case ev := <-pushed:
		if _, ok := ev.(Expired); !ok || time.Now().Before(until) {
			t.Errorf("pushed %T at the wrong moment", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event once the hold's bound passed")
	}
	select {
	case <-pushed:
		t.Error("two events for one bound")
	case <-time.After(50 * time.Millisecond):
	}

	mu.Lock()
	until = time.Now().Add(20 * time.Millisecond)
	mu.Unlock()
	w.Arm()
	mu.Lock()
	until = time.Time{} // the hold ended by an interface event
	mu.Unlock()
	w.Arm()
	select {
	case <-pushed:
		t.Error("an event after the hold ended")
	case <-time.After(100 * time.Millisecond):
	}
}
