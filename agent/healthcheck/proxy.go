package healthcheck

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// DefaultProxyTimeout is how long a change may wait for its apply
// before the proxy counts as unhealthy (kube-proxy: twice its 30 s sync
// period).
const DefaultProxyTimeout = 60 * time.Second

// Proxy is the node-level health of the proxy, kube-proxy's
// /healthz and /livez: healthy while VPP is connected and no change the
// controller took in has waited longer than the timeout for a successful
// apply. As a controller handler it notes when changes arrive (every
// event) and whether this node's Node carries the cluster autoscaler's
// to-be-deleted taint (KEP-3836: /healthz then fails so that load
// balancers drain the node; /livez does not); as an observer of the apply
// step it notes when one succeeds.
type Proxy struct {
	timeout   time.Duration
	connected func() bool
	now       func() time.Time
	node      string // this node's name
	// healthzTotal and livezTotal count the answers of /healthz and /livez
	// by status code (kube-proxy's metrics of the same names).
	healthzTotal, livezTotal *prometheus.CounterVec

	mu sync.Mutex
	// lastUpdated is when an apply last succeeded.
	lastUpdated time.Time
	// pendingSince is when the oldest change not yet applied was taken in;
	// zero when none waits.
	pendingSince time.Time
	// draining is set while this node's Node carries
	// kubestate.TaintToBeDeleted.
	draining bool
}

var (
	_ controller.Handler       = (*Proxy)(nil)
	_ controller.ApplyObserver = (*Proxy)(nil)
)

// NewProxy is the proxy health of node: unhealthy once a change waited
// longer than timeout (0: DefaultProxyTimeout) or while connected (nil:
// always) says VPP is not.
func NewProxy(node string, timeout time.Duration, connected func() bool) *Proxy {
	if timeout <= 0 {
		timeout = DefaultProxyTimeout
	}
	total := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"code"})
	}
	p := &Proxy{node: node, timeout: timeout, connected: connected, now: time.Now,
		healthzTotal: total("kubeproxy_proxy_healthz_total", "Answers of the proxy's /healthz (kube-proxy's meaning), by HTTP status code."),
		livezTotal:   total("kubeproxy_proxy_livez_total", "Answers of the proxy's /livez (kube-proxy's meaning), by HTTP status code."),
	}
	// Every series exists from the start, at zero.
	for _, code := range []string{"200", "503"} {
		p.healthzTotal.WithLabelValues(code)
		p.livezTotal.WithLabelValues(code)
	}
	return p
}

// Collectors are the answer counters of /healthz and /livez.
func (p *Proxy) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.healthzTotal, p.livezTotal}
}

// Name implements controller.Handler.
func (p *Proxy) Name() string { return "proxy-health" }

// HandlesEvent implements controller.Handler: every event but the
// shutdown is a change that waits for an apply.
func (p *Proxy) HandlesEvent(ev controller.Event) bool {
	_, shutdown := ev.(*controller.ShutdownEvent)
	return !shutdown
}

// Update implements controller.Handler.
func (p *Proxy) Update(_ context.Context, ev controller.Event) error {
	if c, ok := ev.(*controller.ChangeEvent); ok && c.Key == p.nodeKey() {
		p.nodeChanged(c.New)
	}
	p.queued()
	return nil
}

// Resync implements controller.Handler.
func (p *Proxy) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	if ev.State != nil {
		p.nodeChanged(ev.State.Objects[p.nodeKey()])
	}
	p.queued()
	return nil
}

func (p *Proxy) nodeKey() kubestate.Key {
	return kubestate.Key{Resource: kubestate.ResNode, Name: p.node}
}

// nodeChanged takes in this node's Node (nil: absent).
func (p *Proxy) nodeChanged(o kubestate.Object) {
	n, _ := o.(*kubestate.Node)
	p.mu.Lock()
	p.draining = n != nil && n.HasTaint(kubestate.TaintToBeDeleted)
	p.mu.Unlock()
}

func (p *Proxy) queued() {
	p.mu.Lock()
	if p.pendingSince.IsZero() {
		p.pendingSince = p.now()
	}
	p.mu.Unlock()
}

// ApplyStarting implements controller.ApplyObserver.
func (p *Proxy) ApplyStarting(bool) {}

// Applied implements controller.ApplyObserver: a successful apply is the
// proxy's last update.
func (p *Proxy) Applied(_ bool, err error) {
	if err != nil {
		return
	}
	p.mu.Lock()
	p.lastUpdated, p.pendingSince = p.now(), time.Time{}
	p.mu.Unlock()
}

// ProxyStatus is the body of /healthz and /livez (kube-proxy's
// lastUpdated and currentTime, plus why it is unhealthy).
type ProxyStatus struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	VPPConnected bool      `json:"vppConnected"`
	// PendingSince is when the oldest change waiting for an apply came.
	PendingSince time.Time `json:"pendingSince,omitzero"`
	// Healthy tells whether the proxy programs its changes (/livez).
	Healthy bool `json:"healthy"`
	// NodeEligible is false while the node carries the cluster
	// autoscaler's to-be-deleted taint: /healthz then fails (kube-proxy's
	// field of the same name).
	NodeEligible bool `json:"nodeEligible"`
}

// Status tells whether the proxy is healthy, and the body telling why.
func (p *Proxy) Status() ProxyStatus {
	p.mu.Lock()
	s := ProxyStatus{LastUpdated: p.lastUpdated, PendingSince: p.pendingSince, CurrentTime: p.now(), NodeEligible: !p.draining}
	p.mu.Unlock()
	s.VPPConnected = p.connected == nil || p.connected()
	s.Healthy = s.VPPConnected && (s.PendingSince.IsZero() || s.CurrentTime.Sub(s.PendingSince) <= p.timeout)
	return s
}

// Healthy tells whether the proxy is healthy.
func (p *Proxy) Healthy() bool { return p.Status().Healthy }

// Handler serves /healthz and /livez: 200 when healthy, 503 otherwise.
// /healthz also fails while the node is not eligible (being deleted by
// the cluster autoscaler), /livez does not: a draining proxy is alive.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	serve := func(total *prometheus.CounterVec, drains bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			s := p.Status()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			code := http.StatusOK
			if !s.Healthy || drains && !s.NodeEligible {
				code = http.StatusServiceUnavailable
			}
			total.WithLabelValues(strconv.Itoa(code)).Inc()
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(s)
		}
	}
	mux.HandleFunc("/healthz", serve(p.healthzTotal, true))
	mux.HandleFunc("/livez", serve(p.livezTotal, false))
	return mux
}

// proxyRetry is the wait between attempts to open the proxy health
// listener.
const proxyRetry = 5 * time.Second

// Serve listens on addr until ctx ends. A listener that cannot be opened
// (the port is taken) is logged and tried again, as kube-proxy does: the
// agent works without it.
func (p *Proxy) Serve(ctx context.Context, log *slog.Logger, addr string) {
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
		case <-time.After(proxyRetry):
		}
	}
}
