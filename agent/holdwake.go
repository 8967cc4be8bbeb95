package agent

import (
	"sync"
	"time"

	"contiv.dev/vpp/plugins/controller"
)

// holdWaker makes the controller apply again when the NAT44 renderer's
// hold of mapping operations (features before mappings, after a VPP
// restart: servicerenderer/nat44 hold.go) reaches its bound without an
// interface event having made it apply first.
type holdWaker struct {
	until func() time.Time // the renderer's HoldUntil
	push  func(controller.Event)

	mu    sync.Mutex
	timer *time.Timer
	at    time.Time
	done  bool
}

// holdExpired is the event the waker pushes: no handler takes it in, and
// the batch it makes applies what the renderer held.
type holdExpired struct{}

// EventName implements controller.Event.
func (holdExpired) EventName() string { return "nat44-hold-expired" }

// arm sets the timer to the renderer's bound, or stops it when nothing is
// held; called after every apply.
func (w *holdWaker) arm() {
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
	w.timer = time.AfterFunc(time.Until(until)+time.Millisecond, func() { w.push(holdExpired{}) })
}

// stop stops the timer for good.
func (w *holdWaker) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
