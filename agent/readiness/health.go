package readiness

import (
	"log/slog"
	"sync"
)

// HealthWatch logs the agent's /healthz verdicts as they change: the
// reason once when health turns bad, and once more when it recovers (the
// answer's body alone says why, and only to whoever asked). The kubelet
// restarts the agent after its liveness probe failed failureThreshold
// times: the log then holds the reason.
type HealthWatch struct {
	// Log is where the changes are logged; set before use.
	Log *slog.Logger

	mu sync.Mutex
	// bad is the reason of the last bad verdict; "" while healthy.
	bad string
}

// Observe takes in one verdict (nil: healthy).
func (w *HealthWatch) Observe(err error) {
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
		w.Log.Error("/healthz fails: the kubelet restarts the agent once its liveness probe has failed failureThreshold times", "reason", reason)
	case was != "" && reason == "":
		w.Log.Info("/healthz healthy again", "was", was)
	}
}

// Reason is the reason of the last bad verdict, "" when it was good.
func (w *HealthWatch) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}
