package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// webService is a Service backed by pod web (its address filled in).
const webService = `
apiVersion: v1
kind: Service
metadata: {namespace: default, name: web}
spec:
  clusterIP: 10.96.0.90
  ports:
  - {name: http, port: 80, targetPort: 8080}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: default
  name: web-a
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [%s]
  nodeName: node-1
  targetRef: {kind: Pod, namespace: default, name: web}
`

// TestVPPRestartPodsBackBeforeServicesAndReadiness: with a pod wired by
// the agent and a Service backed by it, VPP restarts. While the pod's
// interface cannot be made again (VPP refuses it), the agent is not ready
// and says why, though its services are reprogrammed; once VPP takes it,
// the pod is back with its address and the agent is ready. After another
// restart the pod's interface is made again before any service is
// reprogrammed (the first af_packet_create_v3 precedes every NAT write).
func TestVPPRestartPodsBackBeforeServicesAndReadiness(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the pod manager's test makes a network namespace and a veth: run it as root")
	}
	dir := t.TempDir()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), dir)
	withCNI(&cfg, dir)
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	h.putYAML(webPod)
	netns := podNetns(t)
	c := unixClient(cfg.CNI.Socket)
	req := cniapi.Request{ContainerID: "restart-" + filepath.Base(dir), Netns: netns, IfName: "eth0", Namespace: "default", Pod: "web"}
	var res cniapi.Result
	if code := post(t, c, cniapi.PathAdd, req, &res); code != http.StatusOK {
		t.Fatalf("ADD answered %d", code)
	}
	defer post(t, unixClient(cfg.CNI.Socket), cniapi.PathDel, req, nil)
	h.putYAML(fmt.Sprintf(webService, res.IP.Addr()))

	// Every write VPP takes, in order; af_packet_create_v3 refused while
	// refuse is set.
	var mu sync.Mutex
	var writes []string
	var refuse atomic.Bool
	h.vpp.SetFaults(sim.Faults{Rate: 1, Retval: api.INVALID_INTERFACE, Match: func(m api.Message) bool {
		mu.Lock()
		writes = append(writes, m.GetMessageName())
		mu.Unlock()
		return refuse.Load() && m.GetMessageName() == "af_packet_create_v3"
	}})
	wrote := func(prefixes ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(writes, func(w string) bool {
			return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(w, p) })
		})
	}
	tagged := func() bool {
		for _, i := range h.vpp.Interfaces() {
			if i.Tag == "default/web" {
				return true
			}
		}
		return false
	}

	refuse.Store(true)
	h.vpp.Restart()
	// The services are reprogrammed, the pod is not back: not ready,
	// saying why (and nothing else left to wait for).
	// (No waitQuiet here: the pod manager's healing resyncs go on.)
	var why []string
	if !until(30*time.Second, func() bool {
		why = h.agent.notReady()
		return wrote("nat44_", "cnat_") && (len(why) == 0 || len(why) == 1 && strings.HasPrefix(why[0], "pods: "))
	}) {
		t.Fatalf("the services were not reprogrammed after the restart: not ready %v", why)
	}
	if tagged() {
		t.Fatal("the pod's interface is back though VPP refuses it")
	}
	if len(why) != 1 || !strings.Contains(why[0], "1 of 1 pods not back in VPP") {
		t.Fatalf("not ready %v with the pod not back in VPP; want only a pods reason saying 1 of 1 pods not back", why)
	}
	if st := statusOf(t, c); st.Ready || !strings.Contains(st.Why, "not back in VPP") {
		t.Errorf("CNI STATUS %+v with the pod not back; want not ready saying why", st)
	}
	refuse.Store(false)
	if !h.eventually(30*time.Second, func() bool { return tagged() && h.agent.ready() }) {
		t.Fatalf("the pod is not back once VPP takes it: tagged %v, not ready %v", tagged(), h.agent.notReady())
	}

	// Another restart: the pod's interface comes before the services.
	mu.Lock()
	writes = nil
	mu.Unlock()
	h.vpp.Restart()
	if !h.eventually(30*time.Second, func() bool { return tagged() && wrote("nat44_", "cnat_") && h.agent.ready() }) {
		t.Fatalf("not back after the second restart: not ready %v", h.agent.notReady())
	}
	mu.Lock()
	defer mu.Unlock()
	pod := slices.Index(writes, "af_packet_create_v3")
	svcAt := slices.IndexFunc(writes, func(w string) bool { return strings.HasPrefix(w, "nat44_") || strings.HasPrefix(w, "cnat_") })
	if pod < 0 || svcAt < pod {
		t.Errorf("after the restart the first service write (#%d) came before the pod's interface (#%d): %v", svcAt, pod, writes)
	}
}

// until polls cond until it holds or limit passes.
func until(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// statusOf asks the CNI socket's STATUS.
func statusOf(t *testing.T, c *http.Client) cniapi.Status {
	t.Helper()
	var st cniapi.Status
	resp, err := c.Get("http://agent" + cniapi.PathStatus)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestVPPRestartPodsWaitForTheStartupConfiguration: VPP restarts and runs
// its startup configuration late. The agent re-creates no pod (no pod
// interface, no gateway loopback) before VPP has made the node's own
// interfaces, and is not ready meanwhile, saying why; once they are made,
// the pod is back and the agent ready.
func TestVPPRestartPodsWaitForTheStartupConfiguration(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: the pod manager's test makes a network namespace and a veth: run it as root")
	}
	dir := t.TempDir()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv.Endpoint(), dir)
	withCNI(&cfg, dir)
	h := newHarness(t, srv.Endpoint(), cfg)
	defer h.close()
	h.putYAML(webPod)
	netns := podNetns(t)
	c := unixClient(cfg.CNI.Socket)
	req := cniapi.Request{ContainerID: "slowstart-" + filepath.Base(dir), Netns: netns, IfName: "eth0", Namespace: "default", Pod: "web"}
	if code := post(t, c, cniapi.PathAdd, req, nil); code != http.StatusOK {
		t.Fatalf("ADD answered %d", code)
	}
	defer post(t, unixClient(cfg.CNI.Socket), cniapi.PathDel, req, nil)
	h.waitQuiet()

	var mu sync.Mutex
	var made []string // the pod's and the gateway's creations VPP took
	h.vpp.SetFaults(sim.Faults{Rate: 1, Match: func(m api.Message) bool {
		if name := m.GetMessageName(); name == "af_packet_create_v3" || name == "create_loopback" {
			mu.Lock()
			made = append(made, name)
			mu.Unlock()
		}
		return false
	}})
	tagged := func() bool {
		for _, i := range h.vpp.Interfaces() {
			if i.Tag == "default/web" {
				return true
			}
		}
		return false
	}
	h.vpp.RestartWith(sim.RestartOptions{InterfacesAfter: time.Hour})
	defer h.vpp.Close()
	var why []string
	if !until(30*time.Second, func() bool {
		why = h.agent.notReady()
		return slices.ContainsFunc(why, func(s string) bool { return strings.Contains(s, "startup configuration has not run yet") })
	}) {
		t.Fatalf("not ready %v before VPP's startup configuration ran; want the pods waiting for it named", why)
	}
	mu.Lock()
	early := slices.Clone(made)
	mu.Unlock()
	if len(early) > 0 || tagged() {
		t.Fatalf("before VPP's startup configuration ran the agent made %v (pod tagged: %v); want nothing", early, tagged())
	}
	h.vpp.FinishStartup()
	if !h.eventually(30*time.Second, func() bool { return tagged() && h.agent.ready() }) {
		t.Fatalf("the pod is not back once VPP's startup configuration ran: tagged %v, not ready %v", tagged(), h.agent.notReady())
	}
}
