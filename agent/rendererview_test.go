package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.fd.io/govpp/api"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
)

// rivalYAML is a service that claims shop/catalog's external IP and port,
// created after it: it loses the frontend.
const rivalYAML = `apiVersion: v1
kind: Service
metadata: {namespace: shop, name: rival, creationTimestamp: "2025-03-01T10:00:00Z"}
spec:
  type: ClusterIP
  clusterIP: 10.96.20.21
  clusterIPs: [10.96.20.21]
  externalIPs: [198.51.100.20]
  ports: [{name: http, protocol: TCP, port: 8080, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {namespace: shop, name: rival-1, labels: {kubernetes.io/service-name: rival}}
addressType: IPv4
ports: [{name: http, protocol: TCP, port: 8080}]
endpoints: [{addresses: [10.1.1.20], conditions: {ready: true}, nodeName: node-1}]
`

// addCartEndpoint adds a remote endpoint to shop/cart in etcd.
func addCartEndpoint(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	listing, err := kubestate.List(ctx, cli, kubestate.ResEndpointSlice)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range listing.Objects {
		if s := o.(*kubestate.EndpointSlice); s.Name == "cart-m3p7x" {
			next := *s
			next.Endpoints = append(slices.Clone(s.Endpoints), kubestate.EndpointFields{Addresses: []string{"10.1.2.9"}, Ready: true, Serving: true, NodeName: "node-2"}.Endpoint())
			if err := kubestate.NewWriter(cli, nil).Put(ctx, &next); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("cart slice not in etcd")
}

// getRendererView reads /v1/renderer through the agent's HTTP handler.
func getRendererView(t *testing.T, a *Agent) restapi.RendererView {
	t.Helper()
	rec := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/renderer", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/renderer = %d %s", rec.Code, rec.Body)
	}
	var v restapi.RendererView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("GET /v1/renderer: %v\n%s", err, rec.Body)
	}
	return v
}

// TestRendererView: under either renderer /v1/renderer names it and
// reports, in one shape, its counters, the frontend shop/rival contests
// with shop/catalog, and, after a VPP restart whose interfaces come back
// late, the interfaces and the FIB table the configuration waits for —
// the ones readiness names.
func TestRendererView(t *testing.T) {
	for _, renderer := range []string{contivconf.RendererNAT44, contivconf.RendererCNAT} {
		t.Run(renderer, func(t *testing.T) {
			srv := etcdtest.Start(t)
			dir := t.TempDir()
			cluster, err := os.ReadFile("../deploy/examples/cluster.yaml")
			if err != nil {
				t.Fatal(err)
			}
			load := filepath.Join(dir, "cluster.yaml")
			if err := os.WriteFile(load, append(cluster, "\n---\n"+rivalYAML...), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := contivconf.Defaults()
			cfg.Renderer = renderer
			cfg.VPP.PendingInterfaceGrace = contivconf.Duration(time.Hour)
			vpp := sim.New(sim.Options{})
			r := start(t, testConfigFrom(t, cfg, srv.Endpoint(), dir), vpp, load)

			var v restapi.RendererView
			waitFor(t, "the rival's conflict in /v1/renderer", func() bool {
				v = getRendererView(t, r.a)
				return len(v.Conflicts) > 0
			})
			if v.Renderer != renderer {
				t.Errorf("renderer %q, want %q", v.Renderer, renderer)
			}
			if s := v.Stats; s.Applies == 0 || s.FullApplies == 0 || s.Calls == 0 || s.Invalid != 0 {
				t.Errorf("stats %+v", s)
			}
			if (v.Stats.Writes != nil) != (renderer == contivconf.RendererCNAT) {
				t.Errorf("writes %v: cnat counts them, nat44 does not", v.Stats.Writes)
			}
			if c := v.Counts; c.Desired == 0 || c.Applied != c.Desired || c.Failures != 0 || c.Pending != 0 || c.Held != 0 {
				t.Errorf("counts %+v", c)
			}
			want := restapi.RendererConflict{Frontend: "198.51.100.20:8080/TCP",
				Winner: sr.ServiceID{Namespace: "shop", Name: "catalog"}, Losers: []sr.ServiceID{{Namespace: "shop", Name: "rival"}}}
			if len(v.Conflicts) != 1 || v.Counts.Conflicts != 1 || !strings.Contains(v.Conflicts[0].Frontend, want.Frontend) ||
				v.Conflicts[0].Winner != want.Winner || !slices.Equal(v.Conflicts[0].Losers, want.Losers) {
				t.Errorf("conflicts %+v, want one like %+v", v.Conflicts, want)
			}

			// VPP refuses, as invalid, the change a new cart endpoint makes.
			vpp.SetFaults(sim.Faults{Rate: 1, Retval: api.INVALID_VALUE, Match: func(m api.Message) bool {
				n := m.GetMessageName()
				return strings.Contains(n, "static_mapping") || n == "cnat_translation_update"
			}})
			addCartEndpoint(t, srv.Client())
			waitFor(t, "the refused cart change in /v1/renderer", func() bool {
				v = getRendererView(t, r.a)
				// Failures and counters are read apart: a view taken while
				// the apply records the refusal may show one before the other.
				return len(v.Failures) > 0 && v.Stats.Invalid > 0
			})
			vpp.SetFaults(sim.Faults{})
			cart := sr.ServiceID{Namespace: "shop", Name: "cart"}
			for _, f := range v.Failures {
				if !strings.Contains(f.Object, "10.96.10.30:8080/TCP") || f.Op == "" || !strings.Contains(f.Error, "-7") ||
					(renderer == contivconf.RendererNAT44 && (f.Service == nil || *f.Service != cart)) {
					t.Errorf("failure %+v: want the cart frontend's refused call", f)
				}
			}
			if v.Counts.Failures != len(v.Failures) || v.Stats.Invalid == 0 {
				t.Errorf("counts %+v, stats %+v with %d failures", v.Counts, v.Stats, len(v.Failures))
			}

			// VPP restarts; its interfaces and table 1 come back much later.
			vpp.RestartWith(sim.RestartOptions{InterfacesAfter: time.Hour})
			defer vpp.Close()
			waitFor(t, "the reprogram applied, pending interfaces and table 1 in /v1/renderer", func() bool {
				reprogrammed := strings.Contains(strings.Join(r.a.notReady(), "\n"), "waiting for it to re-create")
				v = getRendererView(t, r.a)
				return reprogrammed && len(v.Pending) > 0 && len(v.PendingTables) > 0
			})
			notReady := strings.Join(r.a.notReady(), "\n")
			for _, p := range v.Pending {
				if p.Since.IsZero() || p.Waits == "" || !strings.Contains(notReady, "interface "+p.Name+" ") {
					t.Errorf("pending %+v: readiness says\n%s", p, notReady)
				}
			}
			for _, pt := range v.PendingTables {
				if pt.Since.IsZero() || len(pt.Routes) == 0 || !strings.Contains(notReady, "FIB table "+strconv.Itoa(int(pt.VRF))) {
					t.Errorf("pending table %+v: readiness says\n%s", pt, notReady)
				}
			}
			if v.Counts.Pending != len(v.Pending) || v.Counts.PendingTables != len(v.PendingTables) {
				t.Errorf("counts %+v for %d pending, %d pending tables", v.Counts, len(v.Pending), len(v.PendingTables))
			}
		})
	}
}
