package ksr

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/plugins/rest"
)

// HTTP is the reflector's HTTP server:
//
//	/healthz    200 while the process works; 500 when, as leader, it has
//	            not renewed its lease for longer than the lease duration
//	/readyz     200 for a follower that saw a leader within the lease
//	            duration, and for a leader whose mark and sweep completed
//	            and whose writes succeed; else 503 with the reasons
//	/metrics    Prometheus metrics of g (absent when g is nil)
//	/v1/status  Status as JSON
func (r *Reflector) HTTP(addr string, g prometheus.Gatherer) *rest.Server {
	var healthy func(*http.Request) error
	if r.watchdog != nil {
		healthy = r.watchdog.Check
	}
	return rest.New(rest.Params{
		Logger:   r.log,
		Addr:     addr,
		Ready:    r.Ready,
		NotReady: "not ready:",
		Why:      func() []string { return r.notReady(time.Now()) },
		Healthy:  healthy,
		Views:    map[string]rest.Source{"status": func() any { return r.Status() }},
		Gatherer: g,
	})
}
