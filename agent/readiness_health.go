package agent

import (
	"log/slog"
	"sync"
	"time"
)

// healthWatch logs the agent's /healthz verdicts as they change: the
// reason once when health turns bad, and once more when it recovers (the
// answer's body alone says why, and only to whoever asked). The kubelet
// restarts the agent after its liveness probe failed failureThreshold
// times: the log then holds the reason.
type healthWatch struct {
	log *slog.Logger

	mu sync.Mutex
	// bad is the reason of the last bad verdict; "" while healthy.
	bad string
}

// observe takes in one verdict (nil: healthy).
func (w *healthWatch) observe(err error) {
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	w.mu.Lock()
	was := w.bad
	w.bad = reason
	w.mu.Unlock()
	switch {
	case was == "" && reason != "":
		w.log.Error("/healthz fails: the kubelet restarts the agent once its liveness probe has failed failureThreshold times", "reason", reason)
	case was != "" && reason == "":
		w.log.Info("/healthz healthy again", "was", was)
	}
}

// reason is the reason of the last bad verdict, "" when it was good.
func (w *healthWatch) reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}

// healthz is /healthz's verdict at now (startupHealth), taken in by the
// agent's health watch.
func (a *Agent) healthz(now time.Time) error {
	err := a.startupHealth(now)
	a.health.observe(err)
	return err
}

// logStopped logs that the agent stopped, with the reason /healthz failed
// for when it did at its last answer (the kubelet's liveness probe stops
// an agent for it).
func (a *Agent) logStopped() {
	if why := a.health.reason(); why != "" {
		a.log.Warn("agent stopped while /healthz failed", "reason", why)
		return
	}
	a.log.Info("agent stopped")
}
