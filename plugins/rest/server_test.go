package rest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestViewsProbesAndMetrics(t *testing.T) {
	var ready atomic.Bool
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "contiv_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	s := New(Params{
		Views: map[string]Source{
			"services": func() any { return []string{"default/web"} },
		},
		Ready:    ready.Load,
		NotReady: "not ready: first full sync not applied",
		Why:      func() []string { return []string{"waiting for interface tap0 for 4s"} },
		Gatherer: reg,
	})
	h := s.Handler()

	if code, _ := get(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "first full sync") ||
		!strings.Contains(body, "\nwaiting for interface tap0 for 4s") {
		t.Errorf("/readyz before sync = %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after sync = %d", code)
	}
	code, body := get(t, h, "/v1/services")
	var got []string
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || len(got) != 1 || got[0] != "default/web" {
		t.Errorf("/v1/services = %d %q", code, body)
	}
	if code, _ := get(t, h, "/v1/nope"); code != http.StatusNotFound {
		t.Errorf("/v1/nope = %d, want 404", code)
	}
	if _, body := get(t, h, "/v1/"); !strings.Contains(body, "services") {
		t.Errorf("/v1/ index = %q", body)
	}
	if _, body := get(t, h, "/metrics"); !strings.Contains(body, "contiv_test_total 3") {
		t.Errorf("/metrics lacks the counter: %q", body)
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Params{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok\n" {
		t.Errorf("healthz body %q", b)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestViewError: a Source answering an *Error gets its status and a JSON
// body naming the error, on one line.
func TestViewError(t *testing.T) {
	s := New(Params{Views: map[string]Source{
		"nat44": func() any { return &Error{Status: http.StatusConflict, Message: "renderer is cnat"} },
	}})
	code, body := get(t, s.Handler(), "/v1/nat44")
	var e struct{ Error string }
	if code != http.StatusConflict || json.Unmarshal([]byte(body), &e) != nil || e.Error != "renderer is cnat" || strings.Count(body, "\n") != 1 {
		t.Errorf("/v1/nat44 = %d %q", code, body)
	}
}
