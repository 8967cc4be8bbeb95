package agent

import (
	"fmt"
	"strings"
	"time"

	"contiv.dev/vpp/agent/ownaddrs"
)

// The agent's readiness and health, from its parts: the readiness
// tracker (package readiness), the controller, the VPP connection, the
// ownership gate (owner.go) and this node's own addresses (package
// ownaddrs).

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
	out := a.rd.Reasons(ctlReady, a.conn.Status().Connected, time.Now())
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
		if why := ownaddrs.Reason(a.rd.Addrs.Missing(), a.nodes.WriteStatus()); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// healthz is /healthz's verdict at now (startupHealth), taken in by the
// agent's health watch.
func (a *Agent) healthz(now time.Time) error {
	err := a.startupHealth(now)
	a.health.Observe(err)
	return err
}

// logStopped logs that the agent stopped, with the reason /healthz failed
// for when it did at its last answer (the kubelet's liveness probe stops
// an agent for it).
func (a *Agent) logStopped() {
	if why := a.health.Reason(); why != "" {
		a.log.Warn("agent stopped while /healthz failed", "reason", why)
		return
	}
	a.log.Info("agent stopped")
}
