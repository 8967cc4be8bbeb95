package nat44_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// The integration tests run the renderer through the agent's real VPP
// client (govpp messages) against the simulated VPP, which enforces
// NAT44-ED's rules, and check behaviour with its translation oracle. The
// client's connection runs goroutines: goleak checks they all end.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var addr = netip.MustParseAddr

type simEnv struct {
	t    *testing.T
	vpp  *sim.VPP
	conn *vpp.Conn
	nat  *vpp.NAT44
	cfg  nat44.Config
}

func newSimEnv(t *testing.T) *simEnv {
	t.Helper()
	// Traffic: a packet meets every load-balanced mapping after every
	// call, so a mapping VPP 25.02 would crash on crashes the test.
	return newSimEnvWith(t, sim.Options{Traffic: true})
}

func newSimEnvWith(t *testing.T, opts sim.Options) *simEnv {
	t.Helper()
	e := &simEnv{t: t, vpp: sim.New(opts)}
	for _, name := range []string{"GbE", "VXLAN-BVI", "VPP-Host", "master-tap1", "master-tap2"} {
		if _, err := e.vpp.AddInterface(name, ""); err != nil {
			t.Fatal(err)
		}
	}
	// The ACL plugin is optional, as in the agent.
	e.conn = vpp.New(vpp.Config{Adapter: e.vpp, HealthInterval: 10 * time.Millisecond,
		RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond, OptionalPlugins: []vpp.Plugin{vpp.ACLPlugin()}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); e.conn.Close() })
	e.conn.Start(ctx)
	e.waitConnected()
	e.nat = vpp.NewNAT44(e.conn, vpp.NewInterfaces(e.conn, nil), nil)
	e.cfg = nat44.Config{
		MainVRF: 0, PodVRF: 1, Overlay: true, LocalEndpointWeight: 2,
		NATLoopback: addr("10.1.1.254"), PodSubnet: netip.MustParsePrefix("10.1.1.0/24"),
		SNAT:         nat44.SNAT{Interface: "GbE", IP: addr("192.168.16.10")},
		SessionLimit: 10000, Timeouts: nat44.Timeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60},
		TagPrefix: nat44.DefaultTagPrefix, ExternalIPTenantVRF: nat44.DefaultExternalIPTenantVRF,
		ServiceCIDR: netip.MustParsePrefix("10.96.0.0/12"),
	}
	return e
}

// resynced is a renderer that took in data and applied it in full.
func (e *simEnv) resynced(data *servicerenderer.ResyncData) *nat44.Renderer {
	e.t.Helper()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		e.t.Fatal(err)
	}
	e.apply(r, true)
	return r
}

// openSessions establishes a connection for each packet (source ports from
// 40000 on), as clients of live traffic.
func (e *simEnv) openSessions(ps ...sim.Packet) []sim.Session {
	e.t.Helper()
	var out []sim.Session
	for i, p := range ps {
		s, err := e.vpp.OpenSession(p, uint16(40000+i))
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func (e *simEnv) waitConnected() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.conn.WaitConnected(ctx); err != nil {
		e.t.Fatalf("WaitConnected: %v", err)
	}
}

func (e *simEnv) renderer() *nat44.Renderer {
	e.t.Helper()
	r, err := nat44.New(nat44.Params{Config: e.cfg, VPP: e.nat, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// apply runs Apply and fails on an error or a failed object.
func (e *simEnv) apply(r *nat44.Renderer, full bool) {
	e.t.Helper()
	if err := r.Apply(context.Background(), full); err != nil {
		e.t.Fatalf("Apply(full=%v): %v", full, err)
	}
	if fs := r.Failures(); len(fs) != 0 {
		e.t.Fatalf("failures: %+v", fs)
	}
}

// inSync checks that the simulated VPP holds the renderer's desired state.
func (e *simEnv) inSync(r *nat44.Renderer) {
	e.t.Helper()
	if got, want := e.vpp.Snapshot().Lines(), r.Desired().Lines(); !slices.Equal(got, want) {
		e.t.Errorf("simulated VPP holds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func backend(ip string, port uint16, local bool) servicerenderer.Backend {
	return servicerenderer.Backend{IP: servicerenderer.IPOf(addr(ip)), Port: port, Local: local, Ready: true, Serving: true}
}

// svc is a TCP service on port 80 with the given backends, which are
// local when in 10.1.1.0/24.
func svc(name, clusterIP string, backends ...string) *servicerenderer.ContivService {
	var bs []servicerenderer.Backend
	for _, b := range backends {
		bs = append(bs, backend(b, 8080, strings.HasPrefix(b, "10.1.1.")))
	}
	slices.SortFunc(bs, func(a, b servicerenderer.Backend) int { return a.IP.Compare(&b.IP) })
	var local []servicerenderer.Backend
	for _, b := range bs {
		if b.Local {
			local = append(local, b)
		}
	}
	return &servicerenderer.ContivService{
		ID:         servicerenderer.ServiceID{Namespace: "default", Name: name},
		ClusterIPs: []netip.Addr{addr(clusterIP)},
		Ports:      []servicerenderer.Port{{Name: "http", Protocol: servicerenderer.TCP, Port: 80, Backends: bs, LocalBackends: local}},
	}
}

func remote(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("10.1.%d.2", 2+i))
	}
	return out
}

// cluster is the test's cluster state: web (10 backends, one local;
// NodePort and external IP), local-only (external policy Local), dns (one
// backend), empty (no endpoints).
func cluster() *servicerenderer.ResyncData {
	web := svc("web", "10.96.0.1", append([]string{"10.1.1.3"}, remote(9)...)...)
	web.Ports[0].NodePort = 30080
	web.ExternalIPs = []netip.Addr{addr("20.20.20.20")}
	local := svc("local-only", "10.96.0.2", "10.1.1.4", "10.1.2.2")
	local.ExternalIPs = []netip.Addr{addr("20.20.20.21")}
	local.ExternalPolicy = servicerenderer.PolicyLocal
	dns := svc("dns", "10.96.0.10", "10.1.2.9")
	empty := svc("empty", "10.96.0.9")
	fe, be := servicerenderer.RoleFrontend, servicerenderer.RoleBackend
	return &servicerenderer.ResyncData{
		Services: []*servicerenderer.ContivService{dns, empty, local, web},
		Interfaces: map[string]servicerenderer.InterfaceRole{
			"GbE": fe, "VXLAN-BVI": fe | be, "VPP-Host": fe | be, "master-tap1": fe | be, "master-tap2": fe | be,
		},
		Node: servicerenderer.LocalNode{Name: "node-1", ID: 1, IPs: []netip.Addr{addr("192.168.16.10")}},
	}
}

func TestSimulatedVPPTranslatesAsSpecified(t *testing.T) {
	e := newSimEnv(t)
	r := e.renderer()
	if err := r.Resync(cluster()); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	e.inSync(r)

	client := addr("8.8.8.8")
	type reach struct {
		ip   string
		prob float64
		src  string
	}
	tests := []struct {
		name    string
		packet  sim.Packet
		verdict sim.Verdict
		expect  []reach // nil: not checked
	}{{
		name:    "external IP under Cluster: every backend, local weighted 2, source twice-NATed",
		packet:  sim.Packet{Src: client, Dst: addr("20.20.20.20"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"},
		verdict: sim.Translated,
		expect: append([]reach{{"10.1.1.3", 2.0 / 11, "10.1.1.254"}}, func() []reach {
			var rs []reach
			for _, ip := range remote(9) {
				rs = append(rs, reach{ip, 1.0 / 11, "10.1.1.254"})
			}
			return rs
		}()...),
	}, {
		name:    "NodePort on this node's address under Cluster: twice-NATed",
		packet:  sim.Packet{Src: client, Dst: addr("192.168.16.10"), Proto: sim.TCP, DstPort: 30080, Ingress: "GbE"},
		verdict: sim.Translated,
	}, {
		name:    "external IP under Local: local backend only, client address kept",
		packet:  sim.Packet{Src: client, Dst: addr("20.20.20.21"), Proto: sim.TCP, DstPort: 80, Ingress: "GbE"},
		verdict: sim.Translated,
		expect:  []reach{{"10.1.1.4", 1, "8.8.8.8"}},
	}, {
		name:    "cluster IP under external policy Local: every backend",
		packet:  sim.Packet{Src: addr("10.1.1.3"), Dst: addr("10.96.0.2"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap1"},
		verdict: sim.Translated,
		expect:  []reach{{"10.1.1.4", 2.0 / 3, "10.1.1.3"}, {"10.1.2.2", 1.0 / 3, "10.1.1.3"}},
	}, {
		name:    "a pod reaching itself through its service: source rewritten (self-twice-NAT)",
		packet:  sim.Packet{Src: addr("10.1.1.4"), Dst: addr("10.96.0.2"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap2"},
		verdict: sim.Translated,
		expect:  []reach{{"10.1.1.4", 2.0 / 3, "10.1.1.254"}, {"10.1.2.2", 1.0 / 3, "10.1.1.4"}},
	}, {
		name:    "one backend: load-balanced with the never-picked placeholder",
		packet:  sim.Packet{Src: addr("10.1.1.3"), Dst: addr("10.96.0.10"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap1"},
		verdict: sim.Translated,
		expect:  []reach{{"10.1.2.9", 1, "10.1.1.3"}},
	}, {
		name:    "service without endpoints: passes untranslated (forwarding on)",
		packet:  sim.Packet{Src: addr("10.1.1.3"), Dst: addr("10.96.0.9"), Proto: sim.TCP, DstPort: 80, Ingress: "master-tap1"},
		verdict: sim.NotTranslated,
	}, {
		name:    "plain pod-to-pod traffic: untranslated",
		packet:  sim.Packet{Src: addr("10.1.2.2"), Dst: addr("10.1.1.3"), Proto: sim.TCP, DstPort: 8080, Ingress: "VXLAN-BVI"},
		verdict: sim.NotTranslated,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.vpp.Translate(tc.packet)
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s (%s), want %s", res.Verdict, res.Reason, tc.verdict)
			}
			if tc.verdict == sim.Translated && tc.expect == nil {
				for _, b := range res.Backends {
					if b.Src != addr("10.1.1.254") {
						t.Errorf("backend %v sees source %v, want the NAT loopback", b.IP, b.Src)
					}
				}
				if len(res.Backends) != 10 {
					t.Errorf("%d backends", len(res.Backends))
				}
			}
			if tc.expect == nil {
				return
			}
			// The placeholder (probability 0) is never picked.
			res.Backends = slices.DeleteFunc(res.Backends, func(b sim.Reach) bool { return b.Probability == 0 })
			if len(res.Backends) != len(tc.expect) {
				t.Fatalf("backends %+v, want %+v", res.Backends, tc.expect)
			}
			for i, want := range tc.expect {
				got := res.Backends[i]
				if got.IP != addr(want.ip) || math.Abs(got.Probability-want.prob) > 1e-9 || got.Src != addr(want.src) {
					t.Errorf("backend %d: %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

func TestSimulatedVPPRestartsAndChanges(t *testing.T) {
	e := newSimEnv(t)
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)

	// The agent restarts: nothing is written.
	before := e.vpp.Writes()
	r = e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if w := e.vpp.Writes() - before; w != 0 {
		t.Errorf("agent restart wrote %d times", w)
	}

	// One endpoint more, then one less, on the 10-backend service: one call each.
	web := data.Services[3]
	more := svc("web", "10.96.0.1", append([]string{"10.1.1.3"}, remote(10)...)...)
	more.Ports[0].NodePort, more.ExternalIPs = web.Ports[0].NodePort, web.ExternalIPs
	calls := func(step string, f func() error, want int) {
		t.Helper()
		before := e.vpp.Writes()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		e.apply(r, false)
		if w := e.vpp.Writes() - before; w != want {
			t.Errorf("%s: %d writes, want %d", step, w, want)
		}
	}
	// web has 3 frontends (cluster, external, NodePort): 3 in-place calls.
	calls("11th endpoint", func() error { return r.UpdateService(web, more) }, 3)
	calls("back to 10", func() error { return r.UpdateService(more, web) }, 3)
	e.inSync(r)

	// 2 backends to 1 and back: VPP's rules hold (the simulator enforces them).
	two := data.Services[2]
	one := svc("local-only", "10.96.0.2", "10.1.1.4")
	one.ExternalIPs, one.ExternalPolicy = two.ExternalIPs, two.ExternalPolicy
	calls("2 -> 1 backends", func() error { return r.UpdateService(two, one) }, 2) // cluster IP: delete LB + add static
	calls("1 -> 2 backends", func() error { return r.UpdateService(one, two) }, 2)
	e.inSync(r)

	// VPP restarts: once the connection reports it back, the agent's
	// resync reprograms everything.
	e.vpp.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for st := e.conn.Status(); st.Restarts == 0 || !st.Connected; st = e.conn.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("VPP restart not seen: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	e.inSync(r)
	if len(e.vpp.Snapshot().Mappings) != 6 {
		t.Errorf("%d mappings after the VPP restart", len(e.vpp.Snapshot().Mappings))
	}
}

func TestSimulatedVPPFaultsConverge(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("reply-lost=%v", lost), func(t *testing.T) {
			e := newSimEnv(t)
			e.vpp.SetFaults(sim.Faults{Rate: 0.1, Seed: 7, AfterApply: lost})
			r := e.renderer()
			data := cluster()
			if err := r.Resync(data); err != nil {
				t.Fatal(err)
			}
			failed := 0
			for range 100 {
				if err := r.Apply(context.Background(), true); err == nil {
					break
				}
				failed++
			}
			if failed == 0 {
				t.Fatal("no call failed")
			}
			e.vpp.SetFaults(sim.Faults{})
			if fs := r.Failures(); len(fs) != 0 {
				t.Errorf("failures: %+v", fs)
			}
			e.inSync(r)
			before := e.vpp.Writes()
			e.apply(r, true)
			if w := e.vpp.Writes() - before; w != 0 {
				t.Errorf("converged state still wrote %d times", w)
			}
		})
	}
}

// TestSimulatedVPPManyBackends walks one service through backend counts
// that cross every limit of VPP 25.02 (at most 255 locals in one call, at
// least 2 locals in a load-balanced mapping, never only probability-0
// ones): the simulated VPP crashes where the real one does, and it must
// never crash; what it holds is always what the renderer wants, and a full
// apply afterwards writes nothing.
func TestSimulatedVPPManyBackends(t *testing.T) {
	e := newSimEnv(t)
	r := e.renderer()
	data := cluster()
	data.Services = nil
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	var prev *servicerenderer.ContivService
	for _, n := range []int{0, 1000, 1, 600, 2, 256, 255, 3, 1, 0, 300} {
		var ips []string
		for i := range n {
			ips = append(ips, fmt.Sprintf("10.2.%d.%d", i/250, 1+i%250))
		}
		s := svc("big", "10.96.0.100", ips...)
		var err error
		if prev == nil {
			err = r.AddService(s)
		} else {
			err = r.UpdateService(prev, s)
		}
		if err != nil {
			t.Fatal(err)
		}
		prev = s
		e.apply(r, false)
		if c := e.vpp.Crashes(); c != 0 {
			t.Fatalf("%d backends: the simulated VPP 25.02 crashed: %s", n, e.vpp.LastCrash())
		}
		e.inSync(r)
		want := 0
		if n > 0 {
			// One backend rides with the placeholder; past 255 a subset
			// (the probabilities sum within VPP's u8).
			want = min(max(n, 2), nat44.MaxProbabilitySum)
		}
		if s := e.vpp.Skews(); s != 0 {
			t.Fatalf("%d backends: %d calls left a mapping summing past 255", n, s)
		}
		got := 0
		for _, m := range e.vpp.Snapshot().Mappings {
			if m.IP == addr("10.96.0.100") {
				got = len(m.Locals)
			}
		}
		if got != want {
			t.Errorf("%d backends: VPP holds a mapping with %d locals, want %d", n, got, want)
		}
	}
	e.vpp.ResetCalls()
	e.apply(r, true)
	if w := e.vpp.Writes(); w != 0 {
		t.Errorf("a full apply after the walk made %d writes: %v", w, e.vpp.CallCounts())
	}
}
