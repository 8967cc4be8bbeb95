package rest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// FuzzRequestPath sends request lines (method and target, as a client
// writes them) through the server's handler. The server parses no query
// parameters anywhere (nor do the agent's and reflector's views): the path
// is the only input it interprets. Invariants: a 200 only for a known
// endpoint and GET or HEAD, a view's 200 is its JSON, an unknown view is a
// 404 naming it, and nothing answers 5xx but /readyz (not ready here).
func FuzzRequestPath(f *testing.F) {
	for _, target := range []string{
		"/v1/", "/v1/services", "/v1/status", "/v1/nope", "/v1/services?x=1&y", "/v1", "/v1//services",
		"/v1/../healthz", "/v1/%73ervices", "/healthz", "/readyz", "/metrics", "*", "http://agent/v1/status",
		"/v1/services/", "/v1/services%2F", "/%2e%2e/v1/",
	} {
		f.Add("GET", target)
	}
	f.Add("HEAD", "/v1/status")
	f.Add("POST", "/v1/services")
	f.Add("OPTIONS", "*")
	views := map[string]any{"services": []string{"default/web"}, "status": map[string]int{"queue": 3}}
	s := New(Params{
		Views: map[string]Source{
			"services": func() any { return views["services"] },
			"status":   func() any { return views["status"] },
		},
		Ready:    func() bool { return false },
		Gatherer: prometheus.NewRegistry(),
	})
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, target string) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: agent\r\n\r\n"
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // net/http answers 400 before any handler runs
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code, body, p := rec.Code, rec.Body.String(), req.URL.Path
		getOrHead := req.Method == http.MethodGet || req.Method == http.MethodHead
		switch {
		case code >= 500 && !(code == http.StatusServiceUnavailable && p == "/readyz"):
			t.Fatalf("%s %q: %d %q", method, target, code, body)
		case code != http.StatusOK:
			// Every GET under /v1/ reaches the views' handler (the mux
			// matches escaped segments: /v1%2F is not under /v1/).
			if code == http.StatusNotFound && req.Method == http.MethodGet && strings.HasPrefix(req.URL.EscapedPath(), "/v1/") &&
				!strings.Contains(body, "unknown view "+p) {
				t.Fatalf("%s %q: 404 %q does not name the view", method, target, body)
			}
			return
		case !getOrHead:
			t.Fatalf("%s %q: 200 for a %s", method, target, req.Method)
		}
		switch p {
		case "/healthz", "/metrics":
			return
		case "/v1/":
			if req.Method == http.MethodGet && !json.Valid([]byte(body)) {
				t.Fatalf("%q: index is not JSON: %q", target, body)
			}
			return
		}
		name, ok := strings.CutPrefix(p, "/v1/")
		v, known := views[name]
		if !ok || !known {
			t.Fatalf("%s %q: 200 for path %q", method, target, p)
		}
		if req.Method == http.MethodHead {
			return
		}
		want, _ := json.Marshal(v)
		var got any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%q: view is not JSON: %q", target, body)
		}
		if norm, _ := json.Marshal(got); string(norm) != string(want) {
			t.Fatalf("%q: view %s, want %s", target, norm, want)
		}
	})
}
