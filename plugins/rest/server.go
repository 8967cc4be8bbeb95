package rest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source produces the JSON-encodable value of one view, read at request
// time; an *Error when the view does not apply.
type Source func() any

// Error is a Source's answer when its view does not apply to the
// program's current state (e.g. a renderer's view while another renderer
// runs): the server answers Status with the JSON {"error": Message}.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Params configures the server.
type Params struct {
	Logger *slog.Logger
	// Addr is the listen address, e.g. ":9999".
	Addr string
	// Views maps a path under /v1/ (e.g. "services") to its source.
	Views map[string]Source
	// Ready tells /readyz whether the program is ready; nil means always.
	Ready func() bool
	// NotReady is /readyz's answer while not ready; default "not ready".
	NotReady string
	// Why, when set, says why the program is not ready: its lines follow
	// NotReady in /readyz's answer.
	Why func() []string
	// Healthy, when set, decides /healthz: an error makes it answer 500.
	Healthy func(*http.Request) error
	// Gatherer serves /metrics; nil means no metrics endpoint.
	Gatherer prometheus.Gatherer
}

// Server is the agent's HTTP server.
type Server struct {
	p   Params
	mux *http.ServeMux
}

// New builds a server; Run starts it.
func New(p Params) *Server {
	s := &Server{p: p, mux: http.NewServeMux()}
	if p.NotReady == "" {
		p.NotReady = "not ready"
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if p.Healthy != nil {
			if err := p.Healthy(r); err != nil {
				http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if p.Ready != nil && !p.Ready() {
			msg := p.NotReady
			if p.Why != nil {
				for _, why := range p.Why() {
					msg += "\n" + why
				}
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if p.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(p.Gatherer, promhttp.HandlerOpts{}))
	}
	names := make([]string, 0, len(p.Views))
	for name, src := range p.Views {
		names = append(names, name)
		s.mux.HandleFunc("GET /v1/"+name, func(w http.ResponseWriter, _ *http.Request) {
			v := src()
			if e, ok := v.(*Error); ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(e.Status)
				_ = json.NewEncoder(w).Encode(e)
				return
			}
			writeJSON(w, v)
		})
	}
	s.mux.HandleFunc("GET /v1/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/" {
			http.Error(w, "unknown view "+r.URL.Path, http.StatusNotFound)
			return
		}
		writeJSON(w, map[string][]string{"views": names})
	})
	return s
}

// Handler is the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.mux }

// Run serves until ctx is cancelled, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.p.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is cancelled.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
