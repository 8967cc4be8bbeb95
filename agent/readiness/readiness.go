package readiness

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"contiv.dev/vpp/agent/holdwake"
	"contiv.dev/vpp/agent/ownaddrs"
	"contiv.dev/vpp/plugins/controller"
)

// Tracker tells whether the agent's view of VPP is what VPP holds, and
// why not. The agent is ready when the controller has applied its first
// full snapshot, VPP is connected, no full reprogram is owed to a VPP that
// was lost (disconnected, restarted or reconnected) — the reprogram counts
// as done once applied and once every interface feature it left pending
// has been applied too (a restarted VPP re-creates its interfaces late) —
// and no interface feature has waited longer than the grace for its
// interface. The agent adds this node's own addresses (Addrs, package
// ownaddrs). Grace, Pending and Held are set before the Tracker is used.
type Tracker struct {
	// Grace is how long an interface's features may wait for it before
	// the agent is not ready.
	Grace time.Duration
	// Pending lists the interfaces whose features, and the FIB tables
	// whose drop routes, wait for VPP to create them, with since when;
	// Held counts the NAT44 mappings that wait for the features of the
	// node's interfaces (features first). Either may be nil: none.
	Pending func() []Waiting
	Held    func() int

	mu sync.Mutex
	// gen counts the times VPP was lost; an apply that started in an
	// older generation cannot clear lost.
	gen  uint64
	lost bool
	// lostWhy says how VPP was lost.
	lostWhy string
	// reprogrammed is set once a full apply succeeded after the loss;
	// lost clears when nothing is pending any more.
	reprogrammed bool

	// Addrs follows this node's own VPP addresses to their apply.
	Addrs ownaddrs.Tracker
}

// Waiting is one interface whose features wait for it, or (What "FIB
// table") a table whose routes wait for it.
type Waiting struct {
	Name  string
	Since time.Time
	// What is what waits is for; "" is an interface.
	What string
}

// what is what w waits for, "interface" by default.
func (w Waiting) what() string {
	if w.What == "" {
		return "interface"
	}
	return w.What
}

// VPPLost records that VPP's state can no longer be trusted until a full
// reprogram has been applied: it disconnected, restarted or reconnected.
func (r *Tracker) VPPLost(why string) {
	r.mu.Lock()
	r.gen++
	r.lost, r.reprogrammed = true, false
	r.lostWhy = why
	r.mu.Unlock()
}

// generation is the current loss generation, taken before an apply.
func (r *Tracker) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// applied records a finished apply: a full one that succeeded, started
// after VPP was last lost, makes VPP trusted again.
func (r *Tracker) applied(gen uint64, full bool, err error) {
	if !full || err != nil {
		return
	}
	r.mu.Lock()
	if gen == r.gen && r.lost {
		r.reprogrammed = true
	}
	r.mu.Unlock()
}

// Reasons lists why the agent is not ready (none: ready), given whether the
// controller has applied its first snapshot and VPP is connected.
func (r *Tracker) Reasons(ctlReady, connected bool, now time.Time) []string {
	var out []string
	if !ctlReady {
		out = append(out, "waiting for the first full sync")
	}
	if !connected {
		out = append(out, "VPP not connected")
	}
	var pending []Waiting
	if r.Pending != nil {
		pending = r.Pending()
	}
	held := 0
	if r.Held != nil {
		held = r.Held()
	}
	r.mu.Lock()
	if r.lost && r.reprogrammed && len(pending) == 0 && held == 0 {
		r.lost, r.lostWhy = false, ""
	}
	lost, why, reprogrammed := r.lost, r.lostWhy, r.reprogrammed
	r.mu.Unlock()
	for _, w := range pending {
		d := now.Sub(w.Since)
		switch {
		case lost && reprogrammed:
			out = append(out, fmt.Sprintf("VPP %s: waiting for it to re-create %s %s (%s)", why, w.what(), w.Name, d.Round(100*time.Millisecond)))
		case d > r.Grace:
			out = append(out, fmt.Sprintf("waiting for %s %s for %s", w.what(), w.Name, d.Round(100*time.Millisecond)))
		}
	}
	if held > 0 {
		out = append(out, fmt.Sprintf("%d NAT44 mappings wait for the features of the node's interfaces (features go first)", held))
	}
	if lost && !reprogrammed && connected {
		out = append(out, "VPP "+why+": waiting for the full reprogram to be applied")
	}
	return out
}

// Observer tells the Tracker how each apply of the renderer went; with a
// dataplane that counts cut sessions, it logs what each apply cut. It
// observes the controller's apply step (controller.ApplyObserver).
type Observer struct {
	Tracker *Tracker
	// Cuts, when set, counts the sessions the dataplane cut; Log is where
	// each apply that cut some says so.
	Cuts SessionCounter
	Log  *slog.Logger
	// Hold, when set, is armed after every apply with when the NAT44
	// renderer's hold of mapping operations runs out (package holdwake).
	Hold *holdwake.Waker
	// FullApplied, when set, is told of every full apply, failed or not:
	// the state it applies is built either way.
	FullApplied func()

	// gen, own and before are the loss generation, the own addresses the
	// processor had read and the sessions cut, as the apply started.
	gen    uint64
	own    []netip.Addr
	before uint64
}

// SessionCounter is a dataplane that counts the NAT sessions its
// configuration changes cut (the simulated VPP keeps sessions).
type SessionCounter interface {
	SessionsCut() uint64
}

var _ controller.ApplyObserver = (*Observer)(nil)

// ApplyStarting implements controller.ApplyObserver.
func (a *Observer) ApplyStarting(bool) {
	a.gen = a.Tracker.generation()
	a.own = a.Tracker.Addrs.SeenNow()
	if a.Cuts != nil {
		a.before = a.Cuts.SessionsCut()
	}
}

// Applied implements controller.ApplyObserver.
func (a *Observer) Applied(full bool, err error) {
	a.Tracker.applied(a.gen, full, err)
	if a.Hold != nil {
		a.Hold.Arm()
	}
	if err == nil {
		a.Tracker.Addrs.AppliedNow(a.own)
	}
	if full && a.FullApplied != nil {
		a.FullApplied()
	}
	if a.Cuts != nil {
		if cut := a.Cuts.SessionsCut() - a.before; cut > 0 {
			a.Log.Warn("NAT44 apply cut established sessions (simulated VPP's accounting)", "sessionsCut", cut, "full", full)
		}
	}
}
