package service

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// hinted is a ready endpoint at ip with the given zone and node hints.
func hinted(ip string, zones, nodes []string) kubestate.Endpoint {
	e := ready(ip, "")
	if zones != nil || nodes != nil {
		e.Edit(func(f *kubestate.EndpointFields) { f.HintZones, f.HintNodes = zones, nodes })
	}
	return e
}

func zones(z ...string) []string { return z }

// TestTopology: kube-proxy's use of hints (pkg/proxy topology): hints only
// when every ready endpoint is hinted and one is for this node or zone;
// node hints before zone hints; the Local policies ignore them.
func TestTopology(t *testing.T) {
	const a, b = "zone-a", "zone-b"
	cases := []struct {
		name  string
		zone  string
		svc   *kubestate.Service
		slice *kubestate.EndpointSlice
		want  string
	}{{
		name: "every endpoint hinted, one for this zone: this zone's endpoints only",
		zone: a,
		svc:  svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil),
			hinted("10.1.3.5", zones(a, b), nil)),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.3.5:8080 ready serving
`,
	}, {
		name:  "one ready endpoint without hints: all endpoints",
		zone:  a,
		svc:   svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), ready("10.1.2.5", "")),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name:  "an unhinted endpoint that is not ready does not disable hints",
		zone:  a,
		svc:   svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil), notReady("10.1.2.6")),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
`,
	}, {
		name:  "no endpoint for this zone: all endpoints",
		zone:  "zone-c",
		svc:   svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil)),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name:  "node without a zone label: zone hints ignored",
		zone:  "",
		svc:   svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil)),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name: "node hints (PreferSameNode) win over zone hints",
		zone: a,
		svc:  svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), zones("node-1")), hinted("10.1.2.5", zones(a), zones("node-2")),
			hinted("10.1.3.5", zones(b), zones("node-3"))),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
`,
	}, {
		name: "node hints without one for this node: zone hints used",
		zone: a,
		svc:  svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.2.5", zones(a), zones("node-2")),
			hinted("10.1.3.5", zones(b), zones("node-3"))),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name: "terminating endpoints are not considered for hints and the ready ones in the zone are kept",
		zone: a,
		svc:  svcM("web"),
		slice: sliceM("web", "web", hinted("10.1.2.5", zones(a), nil), hinted("10.1.3.5", zones(b), nil),
			terminating("10.1.1.9", true)),
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name: "externalTrafficPolicy Local: local backends ignore hints, cluster IP backends follow them",
		zone: b,
		svc: svcM("web", func(s *kubestate.Service) {
			s.Type, s.Ports[0].NodePort, s.ExternalTrafficPolicy = "NodePort", 30080, "Local"
		}),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil)),
		want: `svc default/web cluster=10.96.0.10 etp=Local
  port http TCP 80 nodePort=30080
    backend 10.1.2.5:8080 ready serving
    localBackend 10.1.1.5:8080 local ready serving
`,
	}, {
		name:  "internalTrafficPolicy Local wins over hints for the cluster IP",
		zone:  b,
		svc:   svcM("web", func(s *kubestate.Service) { s.InternalTrafficPolicy = "Local" }),
		slice: sliceM("web", "web", hinted("10.1.1.5", zones(a), nil), hinted("10.1.2.5", zones(b), nil)),
		want: `svc default/web cluster=10.96.0.10 itp=Local
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
    localBackend 10.1.1.5:8080 local ready serving
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := testView()
			v.zone = tc.zone
			d := build(tc.svc, []*kubestate.EndpointSlice{tc.slice}, v, nil)
			if d.out == nil {
				t.Fatal("not rendered")
			}
			if got := formatService(d.out); got != tc.want {
				t.Errorf("service:\n%s\nwant:\n%s", got, tc.want)
			}
			if !d.hinted {
				t.Error("hinted not set: a zone change would not derive the service again")
			}
		})
	}
}

// TestLoadBalancerParity: the health-check NodePort (Local policy only),
// source ranges (kept and reported as not enforced) and ingress IPs with
// ipMode Proxy (not rendered, reported).
func TestLoadBalancerParity(t *testing.T) {
	lb := func(mods ...func(*kubestate.Service)) *kubestate.Service {
		return svcM("lb", append([]func(*kubestate.Service){func(s *kubestate.Service) {
			s.Type, s.Ports[0].NodePort = "LoadBalancer", 30080
			s.Rare().LBIngressIPs = []string{"203.0.113.2"}
		}}, mods...)...)
	}
	cases := []struct {
		name        string
		svc         *kubestate.Service
		want, skips string
	}{{
		name: "health-check NodePort under the Local policy",
		svc:  lb(func(s *kubestate.Service) { s.ExternalTrafficPolicy, s.Rare().HealthCheckNodePort = "Local", 32000 }),
		want: `svc default/lb cluster=10.96.0.10 external=203.0.113.2 etp=Local healthCheckNodePort=32000
  port http TCP 80 nodePort=30080
`,
	}, {
		name: "health-check NodePort ignored under the Cluster policy",
		svc:  lb(func(s *kubestate.Service) { s.Rare().HealthCheckNodePort = 32000 }),
		want: `svc default/lb cluster=10.96.0.10 external=203.0.113.2
  port http TCP 80 nodePort=30080
`,
	}, {
		name: "health-check NodePort out of range",
		svc:  lb(func(s *kubestate.Service) { s.ExternalTrafficPolicy, s.Rare().HealthCheckNodePort = "Local", 70000 }),
		want: `svc default/lb cluster=10.96.0.10 external=203.0.113.2 etp=Local
  port http TCP 80 nodePort=30080
`,
		skips: "default/lb service/default/lb invalid-port: healthCheckNodePort 70000\n",
	}, {
		name: "source ranges kept, sorted, and reported as not enforced; a bad one reported",
		svc: lb(func(s *kubestate.Service) {
			s.Rare().LoadBalancerSourceRanges = []string{"203.0.113.0/24", "198.51.100.7/16", "bad", "203.0.113.0/24"}
		}),
		want: `svc default/lb cluster=10.96.0.10 external=203.0.113.2 sourceRanges=198.51.0.0/16,203.0.113.0/24
  port http TCP 80 nodePort=30080
`,
		skips: "default/lb service/default/lb invalid-value: loadBalancerSourceRanges \"bad\"\n" +
			"default/lb service/default/lb source-ranges-not-enforced: loadBalancerSourceRanges 198.51.0.0/16,203.0.113.0/24 " +
			"NOT enforced: the cnat renderer translates before any input ACL could filter; every source reaches the service\n",
	}, {
		name: "ingress IP with ipMode Proxy is not rendered",
		svc:  lb(func(s *kubestate.Service) { s.Rare().LBProxyIPs = []string{"203.0.113.9"} }),
		want: `svc default/lb cluster=10.96.0.10 external=203.0.113.2
  port http TCP 80 nodePort=30080
`,
		skips: "default/lb service/default/lb ipmode-proxy: loadBalancer ingress IP 203.0.113.9 (ipMode Proxy: the load balancer delivers to the nodes)\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := build(tc.svc, nil, testView(), nil)
			got := ""
			if d.out != nil {
				got = formatService(d.out)
			}
			if got != tc.want {
				t.Errorf("service:\n%s\nwant:\n%s", got, tc.want)
			}
			if s := formatSkips(d.skips); s != tc.skips {
				t.Errorf("skips:\n%s\nwant:\n%s", s, tc.skips)
			}
		})
	}
	if !ReasonIPModeProxy.Ignored() || ReasonSourceRangesNotEnforced.Ignored() {
		t.Error("ipmode-proxy is by design (debug); source-ranges-not-enforced is a warning")
	}
}

// TestZoneChangeTouchesHintedServicesOnly: this node's zone comes from its
// Node object; a change of it derives only the services with hints, and the
// result equals a resync.
func TestZoneChangeTouchesHintedServicesOnly(t *testing.T) {
	r := newRig(t)
	node := func(zone string) *kubestate.Node { return &kubestate.Node{Name: "node-1", Zone: zone} }
	r.state[node("").Key()] = node("zone-a")
	r.state[svcKey("topo")] = svcM("topo", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.1"} })
	r.state[sliceKey("topo")] = sliceM("topo", "topo", hinted("10.1.1.5", zones("zone-a"), nil), hinted("10.1.2.5", zones("zone-b"), nil))
	r.state[svcKey("plain")] = svcM("plain", func(s *kubestate.Service) { s.ClusterIPs = []string{"10.96.0.2"} })
	r.state[sliceKey("plain")] = sliceM("plain", "plain", ready("10.1.1.6", ""), ready("10.1.2.6", ""))
	r.resync()
	if got := r.p.Services()[1]; len(got.Ports[0].Backends) != 1 {
		t.Fatalf("zone-a after resync: %s", formatService(got))
	}
	other := &kubestate.Node{Name: "node-2", Zone: "zone-b"}
	r.put(other)
	builds := r.p.builds
	r.put(node("zone-b"))
	if got := r.p.builds - builds; got != 1 {
		t.Errorf("zone change derived %d services, want 1 (the hinted one)", got)
	}
	wantState(t, r, `svc default/plain cluster=10.96.0.2
  port http TCP 80
    backend 10.1.1.6:8080 local ready serving
    backend 10.1.2.6:8080 ready serving
svc default/topo cluster=10.96.0.1
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
if eth0 frontend,backend
node node-1 id=1 ips=10.20.0.1,192.168.16.1
`)
	builds = r.p.builds
	r.put(node("zone-b")) // same zone: nothing derived
	r.del(node("").Key()) // no zone: hints ignored
	if got := r.p.builds - builds; got != 1 {
		t.Errorf("%d services derived, want 1", got)
	}
	r.check()
}

func TestReasonText(t *testing.T) {
	for r := ReasonHeadless; r <= ReasonSourceRangesNotEnforced; r++ {
		b, _ := r.MarshalText()
		var got Reason
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("%s: got %v, %v", b, got, err)
		}
	}
	var r Reason
	if err := r.UnmarshalText([]byte("nonsense")); err == nil {
		t.Error("unknown name accepted")
	}
}

// TestSourceRangesScope: the LoadBalancer ingress IPs are told apart from
// spec.externalIPs (source ranges apply to them only), and a processor
// whose renderer enforces source ranges does not report them.
func TestSourceRangesScope(t *testing.T) {
	s := svcM("lb", func(s *kubestate.Service) {
		s.Type, s.Ports[0].NodePort = "LoadBalancer", 30080
		s.Rare().LBIngressIPs = []string{"203.0.113.2"}
		s.Rare().ExternalIPs = []string{"198.18.0.1"}
		s.Rare().LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	})
	d := build(s, nil, testView(), nil)
	if got := fmt.Sprint(d.out.LoadBalancerIPs); got != "[203.0.113.2]" {
		t.Errorf("LoadBalancerIPs %s", got)
	}
	if got := fmt.Sprint(d.out.ExternalIPs); got != "[198.18.0.1 203.0.113.2]" {
		t.Errorf("ExternalIPs %s", got)
	}
	for _, enforced := range []bool{false, true} {
		p := &Processor{rangesEnforced: enforced}
		reported := slices.ContainsFunc(p.deriveBase(s).skips, func(k Skip) bool { return k.Reason == ReasonSourceRangesNotEnforced })
		if reported == enforced {
			t.Errorf("enforced=%v: reported as not enforced: %v", enforced, reported)
		}
	}
}

// TestSourceRangesNotEnforcedNow: a renderer that enforces source ranges
// but cannot now (VPP without its ACL plugin) has each service with some
// reported with its reason; once it can, nothing is reported.
func TestSourceRangesNotEnforcedNow(t *testing.T) {
	s := svcM("lb", func(s *kubestate.Service) {
		s.Type, s.Ports[0].NodePort = "LoadBalancer", 30080
		s.Rare().LBIngressIPs = []string{"203.0.113.2"}
		s.Rare().LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	})
	why := "VPP does not load acl_plugin.so"
	p := &Processor{rangesEnforced: true, rangesWhy: func() string { return why }}
	var got []string
	for _, k := range p.deriveBase(s).skips {
		got = append(got, k.Reason.String()+": "+k.Detail)
	}
	if want := []string{"source-ranges-not-enforced: loadBalancerSourceRanges 198.51.100.0/24 NOT enforced: VPP does not load acl_plugin.so"}; !slices.Equal(got, want) {
		t.Errorf("skips %q, want %q", got, want)
	}
	why = ""
	if skips := p.deriveBase(s).skips; len(skips) != 0 {
		t.Errorf("enforced, yet skips %+v", skips)
	}
}

// TestSkipLogSaysWhatHappened: a service whose source ranges are not
// enforced is programmed, so its log line says so and never "skipped"; a
// real skip still says it was skipped.
func TestSkipLogSaysWhatHappened(t *testing.T) {
	var buf bytes.Buffer
	p := &Processor{log: slog.New(slog.NewTextHandler(&buf, nil))}
	id := sr.ServiceID{Namespace: "shop", Name: "lb"}
	p.logSkips(nil, []Skip{{Service: id, Reason: ReasonSourceRangesNotEnforced}})
	if got := buf.String(); strings.Contains(got, "skipped") || !strings.Contains(got, "programmed without its loadBalancerSourceRanges") {
		t.Errorf("source ranges not enforced logged as %q", got)
	}
	buf.Reset()
	p.logSkips(nil, []Skip{{Service: id, Reason: ReasonSCTP, Port: "sctp"}})
	if got := buf.String(); !strings.Contains(got, "service input skipped") {
		t.Errorf("an SCTP port logged as %q", got)
	}
}
