package holdwake

import (
	"sync"
	"time"

	"contiv.dev/vpp/plugins/controller"
)

// Waker makes the controller apply again when the NAT44 renderer's
// hold of mapping operations (features before mappings, after a VPP
// restart: servicerenderer/nat44 hold.go) reaches its bound without an
// interface event having made it apply first.
type Waker struct {
	until func() time.Time // the renderer's HoldUntil
	push  func(controller.Event)

	mu    sync.Mutex
	timer *time.Timer
	at    time.Time
	done  bool
}

// New returns a waker for a renderer whose hold runs out at until() (the
// zero time: nothing is held) that pushes its event with push.
func New(until func() time.Time, push func(controller.Event)) *Waker {
	return &Waker{until: until, push: push}
}

// Expired is the event the waker pushes: no handler takes it in, and the
// batch it makes applies what the renderer held.
type Expired struct{}

// EventName implements controller.Event.
func (Expired) EventName() string { return "nat44-hold-expired" }

// Arm sets the timer to the renderer's bound, or stops it when nothing is
// held; called after every apply.
func (w *Waker) Arm() {
	until := w.until()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || until.Equal(w.at) {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.at = until
	if until.IsZero() {
		return
	}
	// A moment past the bound, so that the apply finds it passed.
	w.timer = time.AfterFunc(time.Until(until)+time.Millisecond, func() { w.push(Expired{}) })
}

// Stop stops the timer for good.
func (w *Waker) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
