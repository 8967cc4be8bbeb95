package sim

// crashLocked simulates VPP dying on a request or a packet that crashes
// the real VPP 25.02 (FACTS §1): the request gets no answer, the client
// connection is lost (calls fail with ErrConnectionReset until it
// reconnects) and VPP comes back as after a restart, with a new PID, no
// NAT44 or FIB state and its interfaces re-created at once. Called with
// v.mu held.
func (v *VPP) crashLocked(reason string) {
	v.crashes++
	v.lastCrash = reason
	v.log.Error("SIMULATED VPP CRASHED: the real VPP 25.02 dies here; state lost, connection broken",
		"reason", reason, "crashes", v.crashes, "old_pid", v.pid)
	v.restartLocked(RestartOptions{})
}

// Crashes returns how many times the simulated VPP crashed.
func (v *VPP) Crashes() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.crashes
}

// LastCrash says why the simulated VPP crashed last ("" if never).
func (v *VPP) LastCrash() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastCrash
}
