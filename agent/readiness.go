package agent

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"contiv.dev/vpp/plugins/controller"
)

// readiness tells whether the agent's view of VPP is what VPP holds, and
// why not. The agent is ready when the controller has applied its first
// full snapshot, VPP is connected, no full reprogram is owed to a VPP that
// was lost (disconnected, restarted or reconnected) — the reprogram counts
// as done once applied and once every interface feature it left pending
// has been applied too (a restarted VPP re-creates its interfaces late) —
// and no interface feature has waited longer than the grace for its
// interface. Agent.notReady adds this node's own addresses (ownaddrs.go).
type readiness struct {
	grace time.Duration
	// pending lists the interfaces whose features, and the FIB tables
	// whose drop routes, wait for VPP to create them, with since when;
	// held counts the NAT44 mappings that
	// wait for the features of the node's interfaces (features first).
	pending func() []waiting
	held    func() int

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

	// addrs follows this node's own VPP addresses to their apply.
	addrs ownAddrs
}

// waiting is one interface whose features wait for it, or (What "FIB
// table") a table whose routes wait for it.
type waiting struct {
	Name  string
	Since time.Time
	// What is what waits is for; "" is an interface.
	What string
}

// what is what w waits for, "interface" by default.
func (w waiting) what() string {
	if w.What == "" {
		return "interface"
	}
	return w.What
}

// vppLost records that VPP's state can no longer be trusted until a full
// reprogram has been applied: it disconnected, restarted or reconnected.
func (r *readiness) vppLost(why string) {
	r.mu.Lock()
	r.gen++
	r.lost, r.reprogrammed = true, false
	r.lostWhy = why
	r.mu.Unlock()
}

// generation is the current loss generation, taken before an apply.
func (r *readiness) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// applied records a finished apply: a full one that succeeded, started
// after VPP was last lost, makes VPP trusted again.
func (r *readiness) applied(gen uint64, full bool, err error) {
	if !full || err != nil {
		return
	}
	r.mu.Lock()
	if gen == r.gen && r.lost {
		r.reprogrammed = true
	}
	r.mu.Unlock()
}

// reasons lists why the agent is not ready (none: ready), given whether the
// controller has applied its first snapshot and VPP is connected.
func (r *readiness) reasons(ctlReady, connected bool, now time.Time) []string {
	var out []string
	if !ctlReady {
		out = append(out, "waiting for the first full sync")
	}
	if !connected {
		out = append(out, "VPP not connected")
	}
	var pending []waiting
	if r.pending != nil {
		pending = r.pending()
	}
	held := 0
	if r.held != nil {
		held = r.held()
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
		case d > r.grace:
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

// readyObserver tells readiness how each apply of the renderer went; with
// a dataplane that counts cut sessions, it logs what each apply cut. It
// observes the controller's apply step (controller.ApplyObserver).
type readyObserver struct {
	r    *readiness
	cuts sessionCounter // nil: not counted
	log  *slog.Logger
	// hold, when set, is armed after every apply with when the NAT44
	// renderer's hold of mapping operations runs out (holdwake.go).
	hold *holdWaker
	// fullApplied, when set, is told of every full apply, failed or not:
	// the state it applies is built either way.
	fullApplied func()

	// gen, own and before are the loss generation, the own addresses the
	// processor had read and the sessions cut, as the apply started.
	gen    uint64
	own    []netip.Addr
	before uint64
}

var _ controller.ApplyObserver = (*readyObserver)(nil)

// ApplyStarting implements controller.ApplyObserver.
func (a *readyObserver) ApplyStarting(bool) {
	a.gen = a.r.generation()
	a.own = a.r.addrs.seenNow()
	if a.cuts != nil {
		a.before = a.cuts.SessionsCut()
	}
}

// Applied implements controller.ApplyObserver.
func (a *readyObserver) Applied(full bool, err error) {
	a.r.applied(a.gen, full, err)
	if a.hold != nil {
		a.hold.arm()
	}
	if err == nil {
		a.r.addrs.appliedNow(a.own)
	}
	if full && a.fullApplied != nil {
		a.fullApplied()
	}
	if a.cuts != nil {
		if cut := a.cuts.SessionsCut() - a.before; cut > 0 {
			a.log.Warn("NAT44 apply cut established sessions (simulated VPP's accounting)", "sessionsCut", cut, "full", full)
		}
	}
}

// ready is true once the first full sync is applied, VPP is connected and
// holds what the agent programmed, this node's own VPP addresses are
// applied, and no interface waits too long.
func (a *Agent) ready() bool { return len(a.notReady()) == 0 }

// startupHealth fails /healthz once the agent has not been ready within
// controller.startupTimeout of its start, so that its DaemonSet restarts
// it (the log says why); once ready, the start is over for good.
func (a *Agent) startupHealth(now time.Time) error {
	if a.everReady.Load() {
		return nil
	}
	if a.ready() {
		a.everReady.Store(true)
		return nil
	}
	started := a.startedAt.Load()
	limit := a.cfg.Controller.StartupTimeout.Std()
	if started == 0 || now.Sub(time.Unix(0, started)) <= limit {
		return nil
	}
	return fmt.Errorf("not ready %s after start (controller.startupTimeout): %s", limit, strings.Join(a.notReady(), "; "))
}

// notReady says why the agent is not ready; empty when it is.
func (a *Agent) notReady() []string {
	if !a.built.Load() {
		return []string{fmt.Sprintf("waiting for VPP to show which interface holds the node IP %s (nodeConfig.mainInterface.name is not set)", a.nodeIP().Addr())}
	}
	// A held listing or a watch the agent cannot follow keeps the last
	// applied state; readiness names why instead of "waiting for the
	// first full sync".
	held, unfollowed := a.ctl.Held(), a.ctl.NotFollowing()
	ctlReady := a.ctl.Ready() || ((held != "" || unfollowed != "") && a.ctl.Applied())
	out := a.rd.reasons(ctlReady, a.conn.Status().Connected, time.Now())
	if why := a.owner.reason(); why != "" {
		out = append(out, why)
	}
	if why := a.podsNotBack(); why != "" {
		out = append(out, why)
	}
	if held != "" {
		out = append(out, "keeping the last state: "+held)
	}
	if unfollowed != "" {
		out = append(out, unfollowed)
	}
	if ctlReady {
		if why := ownAddrsReason(a.rd.addrs.missing(), a.nodes.WriteStatus()); why != "" {
			out = append(out, why)
		}
	}
	return out
}
