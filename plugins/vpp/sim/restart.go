package sim

import (
	"slices"
	"time"
)

// RestartOptions shape a simulated VPP restart.
type RestartOptions struct {
	// InterfacesAfter is how long after the restart VPP's startup
	// configuration re-creates the interfaces: until then only local0
	// exists (a real VPP answers the API ~0.3 s after start and creates
	// its interfaces ~2 s later). Zero re-creates them at once.
	InterfacesAfter time.Duration
}

// Restart simulates a VPP restart with the interfaces back at once:
// RestartWith(RestartOptions{}).
func (v *VPP) Restart() { v.RestartWith(RestartOptions{}) }

// RestartWith simulates a VPP restart: all NAT44, cnat and FIB state is lost,
// the process ID changes and the current client connection breaks (its
// calls fail with ErrConnectionReset until it reconnects; its
// want_interface_events registration is gone). Every interface but
// local0 vanishes and is re-created, with the same index, name, tag and
// MAC, after o.InterfacesAfter; each re-created interface sends an event
// (admin up, link up) to a client that registered on the new connection.
// Call counters and fault injection are kept.
func (v *VPP) RestartWith(o RestartOptions) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.restartLocked(o)
	v.log.Warn("simulated VPP restarted: NAT44 and FIB state cleared", "pid", v.pid,
		"interfaces_after", o.InterfacesAfter)
}

func (v *VPP) restartLocked(o RestartOptions) {
	// Interfaces still pending from an earlier restart come back too.
	pending := v.startup
	v.startup = nil
	for _, i := range v.sortedIfaces() {
		if i.index != 0 && !i.dynamic {
			pending = append(pending, i)
		}
	}
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	v.nat = newNATState()
	v.loseSessionsLocked() // sessions.go
	v.cnat = newCnatState()
	v.loseCnatSessionsLocked() // cnat_sessions.go
	v.fib.reset()
	v.acls.reset()
	v.pods.reset()
	if v.aclPlugin != v.aclNext {
		v.aclPlugin = v.aclNext
		v.buildTable()
	}
	v.ifaces = map[uint32]*iface{0: newLocal0()}
	v.freeIf = nil
	// MEASURED (VPP 25.02, records-e2evpp/cni-nat44.jsonl): indices are
	// handed out in creation order: interfaces the API creates before the
	// startup configuration has run take the lowest ones, and the startup
	// configuration's come after them (finishStartupLocked).
	v.nextIf = 1
	v.pid++
	if v.sess != nil {
		v.sess.reset = true
	}
	v.startup = pending
	// The new process's main thread has no request of the old one.
	v.busyUntil, v.startupDue = time.Time{}, false
	if o.InterfacesAfter <= 0 || v.closed {
		v.finishStartupLocked()
		return
	}
	pid := v.pid
	v.timer = time.AfterFunc(o.InterfacesAfter, func() { v.startupTime(pid) })
}

// startupTime is the moment the startup configuration of the process pid
// runs (RestartOptions.InterfacesAfter).
func (v *VPP) startupTime(pid uint32) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pid != pid || v.closed {
		return // another restart (or Close) came first
	}
	v.startupLocked()
}

// startupLocked runs the startup configuration now or, while the main
// thread is busy with a request's cost (cost.go), once that request is
// answered: VPP runs it in a process of its main thread (vlib's
// startup-config process, suspended 2 s after the start), which does not
// run while the thread is busy with an API call. ASSUMPTION: it runs
// before the next request VPP takes (VPP's order between a resumed
// process and the API's queue after a long call was not observed).
func (v *VPP) startupLocked() {
	if time.Now().Before(v.busyUntil) {
		v.startupDue = true
		return
	}
	v.finishStartupLocked()
}

// mainThreadFree is called once a request whose cost kept the main thread
// busy has been answered: a startup configuration that came due
// meanwhile runs now.
func (v *VPP) mainThreadFree() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.startupDue && !v.closed && !time.Now().Before(v.busyUntil) {
		v.finishStartupLocked()
	}
}

// SetACLPlugin edits the startup configuration: from the next restart on
// VPP loads acl_plugin.so (its messages in the message table) or not. A
// running VPP keeps the plugins it started with.
func (v *VPP) SetACLPlugin(loaded bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.aclNext = loaded
}

// FinishStartup runs the rest of the startup configuration now: it
// re-creates the tables (CreateTable) and the interfaces a restart
// removed and has not re-created yet (tests use it in place of a long
// InterfacesAfter). While the main thread is busy with a request's cost
// (cost.go), it runs once that request is answered.
func (v *VPP) FinishStartup() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	v.startupLocked()
}

func (v *VPP) finishStartupLocked() {
	v.startupDue = false
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	pending := v.startup
	v.startup = nil
	for vrf := range v.fib.startup {
		v.fib.tables[vrf] = true // before the interfaces put in them
	}
	slices.SortFunc(pending, func(a, b *iface) int { return int(a.index) - int(b.index) })
	for _, i := range pending {
		if v.ifaceByName(i.name) != nil {
			continue
		}
		s := i.spec()
		// The startup configuration (or the CNI) sets them up.
		s.AdminDown = false
		v.createLocked(v.allocIndexLocked(), s)
	}
}

// Close stops the simulated VPP's timers: interfaces a RestartWith has
// not re-created yet stay away (later restarts re-create them at once).
// The kernel ends of its taps are removed, as when the real VPP exits
// (tap.go). The client connection is left to its owner.
func (v *VPP) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	v.startupDue = false
	v.pods.closeTaps()
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
}
