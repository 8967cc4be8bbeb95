package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"contiv.dev/vpp/plugins/controller"
)

// DefaultProxyHealthAddress is where the node-level proxy health endpoint
// listens unless configured otherwise: kube-proxy's healthz port, which
// cloud load balancers probe.
const DefaultProxyHealthAddress = ":10256"

// DefaultProxyHealthTimeout is how long a change may wait for its apply
// before the proxy counts as unhealthy (kube-proxy: twice its 30 s sync
// period).
const DefaultProxyHealthTimeout = 60 * time.Second

// proxyHealth is the node-level health of the proxy, kube-proxy's
// /healthz and /livez: healthy while VPP is connected and no change the
// controller took in has waited longer than the timeout for a successful
// apply. As a controller handler it notes when changes arrive (every
// event); as the applier it wraps the apply step and notes when one
// succeeds.
type proxyHealth struct {
	inner     controller.Applier
	timeout   time.Duration
	connected func() bool
	now       func() time.Time

	mu sync.Mutex
	// lastUpdated is when an apply last succeeded.
	lastUpdated time.Time
	// pendingSince is when the oldest change not yet applied was taken in;
	// zero when none waits.
	pendingSince time.Time
}

var (
	_ controller.Handler = (*proxyHealth)(nil)
	_ controller.Applier = (*proxyHealth)(nil)
)

func newProxyHealth(inner controller.Applier, timeout time.Duration, connected func() bool) *proxyHealth {
	if timeout <= 0 {
		timeout = DefaultProxyHealthTimeout
	}
	return &proxyHealth{inner: inner, timeout: timeout, connected: connected, now: time.Now}
}

// Name implements controller.Handler.
func (p *proxyHealth) Name() string { return "proxy-health" }

// HandlesEvent implements controller.Handler: every event but the
// shutdown is a change that waits for an apply.
func (p *proxyHealth) HandlesEvent(ev controller.Event) bool {
	_, shutdown := ev.(*controller.ShutdownEvent)
	return !shutdown
}

// Update implements controller.Handler.
func (p *proxyHealth) Update(context.Context, controller.Event) error {
	p.queued()
	return nil
}

// Resync implements controller.Handler.
func (p *proxyHealth) Resync(context.Context, *controller.ResyncEvent) error {
	p.queued()
	return nil
}

func (p *proxyHealth) queued() {
	p.mu.Lock()
	if p.pendingSince.IsZero() {
		p.pendingSince = p.now()
	}
	p.mu.Unlock()
}

// Apply implements controller.Applier.
func (p *proxyHealth) Apply(ctx context.Context, full bool) error {
	if err := p.inner.Apply(ctx, full); err != nil {
		return err
	}
	p.mu.Lock()
	p.lastUpdated, p.pendingSince = p.now(), time.Time{}
	p.mu.Unlock()
	return nil
}

// proxyHealthStatus is the body of /healthz and /livez (kube-proxy's
// lastUpdated and currentTime, plus why it is unhealthy).
type proxyHealthStatus struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	VPPConnected bool      `json:"vppConnected"`
	// PendingSince is when the oldest change waiting for an apply came.
	PendingSince time.Time `json:"pendingSince,omitzero"`
	Healthy      bool      `json:"healthy"`
}

// status tells whether the proxy is healthy, and the body telling why.
func (p *proxyHealth) status() proxyHealthStatus {
	p.mu.Lock()
	s := proxyHealthStatus{LastUpdated: p.lastUpdated, PendingSince: p.pendingSince, CurrentTime: p.now()}
	p.mu.Unlock()
	s.VPPConnected = p.connected == nil || p.connected()
	s.Healthy = s.VPPConnected && (s.PendingSince.IsZero() || s.CurrentTime.Sub(s.PendingSince) <= p.timeout)
	return s
}

// Healthy tells whether the proxy is healthy.
func (p *proxyHealth) Healthy() bool { return p.status().Healthy }

// Handler serves /healthz and /livez: 200 when healthy, 503 otherwise.
// (kube-proxy's /healthz also fails on a node being deleted; the agent's
// node model has no deletion mark, so both answer the same.)
func (p *proxyHealth) Handler() http.Handler {
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, _ *http.Request) {
		s := p.status()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if s.Healthy {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(s)
	}
	mux.HandleFunc("/healthz", serve)
	mux.HandleFunc("/livez", serve)
	return mux
}

// proxyHealthRetry is the wait between attempts to open the proxy health
// listener.
const proxyHealthRetry = 5 * time.Second

// serve listens on addr until ctx ends. A listener that cannot be opened
// (the port is taken) is logged and tried again, as kube-proxy does: the
// agent works without it.
func (p *proxyHealth) serve(ctx context.Context, log *slog.Logger, addr string) {
	logged := ""
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			log.Info("serving the proxy health endpoint", "address", ln.Addr().String())
			srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
			done := make(chan struct{})
			go func() {
				defer close(done)
				<-ctx.Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Warn("proxy health server stopped", "address", addr, "err", err)
			}
			<-done
			return
		}
		if err.Error() != logged {
			log.Warn("cannot serve the proxy health endpoint; trying again", "address", addr, "err", err)
			logged = err.Error()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(proxyHealthRetry):
		}
	}
}
