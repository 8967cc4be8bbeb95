package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// dashboard is the part of a Grafana dashboard the test reads: every
// query of every panel (rows included) and of the template variables.
type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
	Templ  struct {
		List []struct {
			Name  string          `json:"name"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// queries lists every PromQL expression of d, each with where it is.
func (d *dashboard) queries() map[string]string {
	out := map[string]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, t := range p.Targets {
				out[p.Title+"#"+string(rune('A'+i))] = t.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templ.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			out["variable "+v.Name] = q.Query
		}
	}
	return out
}

var (
	// Parts of PromQL that hold no metric name: strings, label matchers,
	// ranges, grouping clauses.
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\boffset\s+\S+`)
	// A token: a number (kept apart so that 1e9 is no name) or a name.
	promToken    = regexp.MustCompile(`\d[\d.eE+-]*|[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// metricNames returns the metric names a PromQL expression (or a Grafana
// label_values query) names: the names that are neither functions,
// keywords, label names nor numbers.
func metricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, "")
	e = promRanges.ReplaceAllString(e, "")
	e = promGrouping.ReplaceAllString(e, "")
	if strings.HasPrefix(e, "label_values(") { // label_values(metric, label)
		e = strings.TrimSuffix(strings.TrimPrefix(e, "label_values("), ")")
		e, _, _ = strings.Cut(e, ",")
	}
	var names []string
	for _, tok := range promToken.FindAllString(e, -1) {
		tok = strings.TrimSpace(tok)
		if tok[0] >= '0' && tok[0] <= '9' || strings.HasSuffix(tok, "(") || promKeywords[tok] {
			continue
		}
		names = append(names, tok)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.99, sum by (le, ip_family) (rate(a_bucket{instance=~"$i", x="y}"}[$__rate_interval])))`: {"a_bucket"},
		`max by (instance) (b{i="1"} - c) > 0`:                     {"b", "c"},
		`time() - max(d) * 1e9 and on (instance) e offset 5m`:      {"d", "e"},
		`label_values(kubeproxy_sync_proxy_rules_total, instance)`: {"kubeproxy_sync_proxy_rules_total"},
		`sum (rate(f [5m]))`:                                       {"f"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// exported runs an agent (simulated VPP, test etcd) and returns the names
// its /metrics serves, histograms' and summaries' series included, and
// its metric families.
func exported(t *testing.T) (names, families map[string]bool) {
	t.Helper()
	e := etcdtest.Start(t)
	if _, err := kubestate.MarkSynced(context.Background(), e.Client(), "test", 0); err != nil { // as a reflector's sweep
		t.Fatal(err)
	}
	cfg := contivconf.Defaults()
	cfg.NodeName = "node-1"
	cfg.Etcd.Endpoints = []string{e.Endpoint()}
	cfg.VPP.Simulate = contivconf.SimulateAlways
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.HTTP.ProxyHealthAddress = agent.ProxyHealthOff
	cfg.NodeSync.StateFile = filepath.Join(t.TempDir(), "node-id")
	cfg.Log.Level = contivconf.LogLevelError
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: agent.Simulated(sim.New(sim.Options{})), LogOutput: io.Discard})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second) // bounds a hung test only
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("agent not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	w := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", w.Code)
	}
	names, families = map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`).FindAllStringSubmatch(w.Body.String(), -1) {
		names[m[1]], families[m[1]] = true, true
		switch m[2] {
		case "histogram":
			names[m[1]+"_bucket"], names[m[1]+"_sum"], names[m[1]+"_count"] = true, true, true
		case "summary":
			names[m[1]+"_sum"], names[m[1]+"_count"] = true, true
		}
	}
	return names, families
}

// Every query of the Grafana dashboard names only metrics a running agent
// exports, and at least one; the dashboard covers kube-proxy's metrics.
func TestGrafanaDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("grafana", "contiv-vpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana/contiv-vpp.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard without uid or title")
	}
	qs := d.queries()
	if len(qs) == 0 {
		t.Fatal("dashboard has no query")
	}
	have, families := exported(t)
	used := map[string]bool{}
	for where, expr := range qs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !have[n] {
				t.Errorf("%s: %q names %s, which the agent does not export", where, expr, n)
			}
		}
	}
	for f := range families {
		if !strings.HasPrefix(f, "kubeproxy_") {
			continue
		}
		if !used[f] && !used[f+"_bucket"] && !used[f+"_count"] && !used[f+"_sum"] {
			t.Errorf("kube-proxy's %s is exported but on no panel", f)
		}
	}
}
