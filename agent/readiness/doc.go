// Package readiness tells whether the agent's view of VPP is what VPP
// holds, and why not, and logs the agent's /healthz verdicts as they
// change. It is for the agent's wiring: the Tracker is told when VPP is
// lost, the Observer watches the controller's apply step, and the agent
// adds what only it knows (the controller, the ownership gate). The
// contract: the Tracker's Reasons is empty only once the first full sync
// is applied, VPP is connected, a full reprogram is applied after every
// loss of VPP with every interface and FIB table it waited for back, and
// no interface waits longer than the grace; HealthWatch logs a bad verdict
// once when health turns bad and once more when it recovers.
package readiness
