package agent

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

const sourceRangesManifest = `
apiVersion: v1
kind: Node
metadata:
  name: node-1
spec:
  podCIDR: 10.1.1.0/24
---
apiVersion: v1
kind: Service
metadata:
  namespace: shop
  name: gw
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.80
  loadBalancerSourceRanges: [198.51.100.0/24]
  ports:
  - {name: http, port: 80, targetPort: 8080, nodePort: 30800}
status:
  loadBalancer:
    ingress:
    - ip: 203.0.113.80
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: shop
  name: gw-a
  labels: {kubernetes.io/service-name: gw}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.1.2.8]
  nodeName: node-2
`

// TestAgentWithoutACLPlugin: on a VPP whose startup configuration does not
// load acl_plugin.so the agent connects, programs its services and is
// ready; the service's source ranges are reported as NOT enforced (skip,
// metric, /v1/status) and no ACL call is made. VPP restarted with the
// plugin: the ranges are enforced and the report is gone.
func TestAgentWithoutACLPlugin(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(manifest, []byte(sourceRangesManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	v := sim.New(sim.Options{NoACLPlugin: true})
	r := start(t, testConfig(t, srv.Endpoint(), dir), v, manifest)

	trace := func(src string) sim.Verdict {
		return v.Trace(sim.Packet{Ingress: simulatedMainNIC, Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr("203.0.113.80"),
			Proto: sim.TCP, DstPort: 80}).Verdict
	}
	notEnforced := func() []service.Skip {
		return slices.DeleteFunc(r.a.Processor().Skipped(), func(s service.Skip) bool { return s.Reason != service.ReasonSourceRangesNotEnforced })
	}
	metric := func() string {
		rec := httptest.NewRecorder()
		r.a.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, "contiv_service_source_ranges_not_enforced ") {
				return l
			}
		}
		return "(missing)"
	}

	// Programmed, not enforced, reported.
	for _, src := range []string{"198.51.100.7", "192.0.2.9"} {
		if got := trace(src); got != sim.Translated {
			t.Errorf("without the ACL plugin: %s -> LB IP: %v, want translated", src, got)
		}
	}
	if skips := notEnforced(); len(skips) != 1 || !strings.Contains(skips[0].Detail, "acl_plugin.so") {
		t.Errorf("not-enforced report: %+v", skips)
	}
	if got := metric(); got != "contiv_service_source_ranges_not_enforced 1" {
		t.Errorf("metric: %s", got)
	}
	if st := r.a.conn.Status(); !slices.Equal(st.MissingPlugins, []string{vpp.ACLPluginName}) {
		t.Errorf("status: missing plugins %v", st.MissingPlugins)
	}
	for name, n := range v.CallCounts() {
		if strings.HasPrefix(name, "acl_") && n > 0 {
			t.Errorf("%d %s calls to a VPP without the ACL plugin", n, name)
		}
	}

	// VPP restarted with the plugin: enforced, no longer reported.
	v.SetACLPlugin(true)
	v.Restart()
	waitFor(t, "source ranges enforced", func() bool { return trace("192.0.2.9") == sim.Dropped })
	waitFor(t, "ready again", r.a.Ready)
	if got := trace("198.51.100.7"); got != sim.Translated {
		t.Errorf("with the ACL plugin: allowed source -> LB IP: %v", got)
	}
	if skips := notEnforced(); len(skips) != 0 {
		t.Errorf("still reported: %+v", skips)
	}
	if got := metric(); got != "contiv_service_source_ranges_not_enforced 0" {
		t.Errorf("metric: %s", got)
	}
	if st := r.a.conn.Status(); len(st.MissingPlugins) != 0 {
		t.Errorf("status: missing plugins %v", st.MissingPlugins)
	}
}
