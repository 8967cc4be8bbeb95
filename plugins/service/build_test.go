package service

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/kubestate"
)

// svcM is a ClusterIP service default/<name> on 10.96.0.10 with port http
// TCP 80, changed by the mods.
func svcM(name string, mods ...func(*kubestate.Service)) *kubestate.Service {
	s := &kubestate.Service{
		Namespace: "default", Name: name, Type: "ClusterIP",
		ClusterIPs: []string{"10.96.0.10"},
		Ports:      []kubestate.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

// sliceM is EndpointSlice default/<name> of service svc, IPv4, port http
// TCP 8080, holding eps.
func sliceM(svc, name string, eps ...kubestate.Endpoint) *kubestate.EndpointSlice {
	return &kubestate.EndpointSlice{
		Namespace: "default", Name: name, ServiceName: svc, AddressType: "IPv4",
		Ports:     []kubestate.EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}},
		Endpoints: eps,
	}
}

// ready is a ready endpoint at ip targeting pod (none when pod is "").
func ready(ip, pod string) kubestate.Endpoint {
	e := kubestate.EndpointFields{Addresses: []string{ip}, Ready: true, Serving: true}
	if pod != "" {
		e.TargetKind, e.TargetName = "Pod", pod
	}
	return e.Endpoint()
}

// terminating is a terminating endpoint at ip, still serving when serving.
func terminating(ip string, serving bool) kubestate.Endpoint {
	return kubestate.EndpointFields{Addresses: []string{ip}, Serving: serving, Terminating: true}.Endpoint()
}

func notReady(ip string) kubestate.Endpoint {
	return kubestate.EndpointFields{Addresses: []string{ip}}.Endpoint()
}

// servingOnly is an endpoint serving but neither ready nor terminating (a
// pod failing its readiness probe reports it so): it takes no traffic.
func servingOnly(ip string) kubestate.Endpoint {
	return kubestate.EndpointFields{Addresses: []string{ip}, Serving: true}.Endpoint()
}

// onNode is e on node.
func onNode(e kubestate.Endpoint, node string) kubestate.Endpoint {
	e.Edit(func(f *kubestate.EndpointFields) { f.NodeName = node })
	return e
}

func withSlice(s *kubestate.EndpointSlice, f func(*kubestate.EndpointSlice)) *kubestate.EndpointSlice {
	f(s)
	return s
}

func testView() *nodeView {
	n := testNode()
	v := nodeView{name: n.name, id: n.id, ips: slices.Clone(n.ips), podNet: n.podNet, allPods: n.allPods}
	slices.SortFunc(v.ips, netip.Addr.Compare)
	return &v
}

// TestBuild has one case per semantic rule of the derivation (SPEC 5) and
// per kind of bad input (SPEC 14).
func TestBuild(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		svc    *kubestate.Service
		slices []*kubestate.EndpointSlice
		want   string // formatService, "" when not rendered
		skips  string // formatSkips
		pods   []string
	}{{
		name:   "ready endpoints only",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", ready("10.1.2.5", ""), notReady("10.1.2.6"), ready("10.1.3.5", ""))},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
    backend 10.1.3.5:8080 ready serving
`,
	}, {
		name:   "terminating endpoints are left out while one is ready",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", terminating("10.1.2.5", true), ready("10.1.3.5", ""))},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.3.5:8080 ready serving
`,
	}, {
		name:   "fallback to serving and terminating endpoints when none is ready",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", terminating("10.1.2.5", true), terminating("10.1.2.6", false), notReady("10.1.2.7"))},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 serving terminating
`,
	}, {
		name:   "an endpoint serving but neither ready nor terminating is not used",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", ready("10.1.2.5", ""), servingOnly("10.1.2.6"))},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
`,
	}, {
		name:   "an endpoint serving but neither ready nor terminating is no fallback either",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", servingOnly("10.1.2.6"), terminating("10.1.2.7", true))},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.7:8080 serving terminating
`,
	}, {
		name:   "an endpoint serving but neither ready nor terminating alone gives no backend",
		svc:    svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", servingOnly("10.1.2.6"))},
		want:   "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "locality follows the endpoint's nodeName; the address decides only without one",
		svc:  svcM("web", func(s *kubestate.Service) { s.InternalTrafficPolicy = "Local" }),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a",
			onNode(ready("10.1.9.5", ""), "node-1"), // outside this node's pod subnet, on this node
			onNode(ready("10.1.1.6", ""), "node-2"), // inside it, on another node
			ready("10.1.1.7", ""), ready("10.1.2.8", ""))},
		want: `svc default/web cluster=10.96.0.10 itp=Local
  port http TCP 80
    backend 10.1.1.6:8080 ready serving
    backend 10.1.1.7:8080 local ready serving
    backend 10.1.2.8:8080 ready serving
    backend 10.1.9.5:8080 local ready serving
    localBackend 10.1.1.7:8080 local ready serving
    localBackend 10.1.9.5:8080 local ready serving
`,
	}, {
		name:   "service without slices is rendered without backends",
		svc:    svcM("web"),
		want:   "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
		slices: nil,
	}, {
		name: "slices are merged; an endpoint listed twice counts once, its ready copy wins",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{
			sliceM("web", "web-a", ready("10.1.2.5", ""), terminating("10.1.2.9", true)),
			sliceM("web", "web-b", ready("10.1.2.9", ""), ready("10.1.2.5", "")),
		},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
    backend 10.1.2.9:8080 ready serving
`,
	}, {
		name: "externalTrafficPolicy Local restricts only external frontends: all backends stay for cluster IPs",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Type, s.ExternalTrafficPolicy, s.Ports[0].NodePort = "NodePort", "Local", 30080
		}),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", ready("10.1.1.5", "web-1"), ready("10.1.2.5", ""))},
		want: `svc default/web cluster=10.96.0.10 etp=Local
  port http TCP 80 nodePort=30080
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
    localBackend 10.1.1.5:8080 local ready serving
`,
		pods: []string{"default/web-1"},
	}, {
		name:   "internalTrafficPolicy Local restricts cluster IPs to this node's endpoints",
		svc:    svcM("web", func(s *kubestate.Service) { s.InternalTrafficPolicy = "Local" }),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", ready("10.1.1.5", ""), ready("10.1.2.5", ""))},
		want: `svc default/web cluster=10.96.0.10 itp=Local
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
    localBackend 10.1.1.5:8080 local ready serving
`,
	}, {
		name: "Local policy falls back to this node's terminating endpoints while remote ones are ready",
		svc:  svcM("web", func(s *kubestate.Service) { s.Type, s.ExternalTrafficPolicy = "LoadBalancer", "Local" }),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a",
			terminating("10.1.1.5", true), ready("10.1.2.5", ""))},
		want: `svc default/web cluster=10.96.0.10 etp=Local
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
    localBackend 10.1.1.5:8080 local serving terminating
`,
	}, {
		name:   "Local policy without local endpoints has no local backends",
		svc:    svcM("web", func(s *kubestate.Service) { s.InternalTrafficPolicy = "Local" }),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a", ready("10.1.2.5", ""))},
		want:   "svc default/web cluster=10.96.0.10 itp=Local\n  port http TCP 80\n    backend 10.1.2.5:8080 ready serving\n",
	}, {
		name: "ClientIP affinity defaults to 10800 s",
		svc:  svcM("web", func(s *kubestate.Service) { s.SessionAffinity = "ClientIP" }),
		want: "svc default/web cluster=10.96.0.10 affinity=10800\n  port http TCP 80\n",
	}, {
		name: "ClientIP affinity with its timeout",
		svc:  svcM("web", func(s *kubestate.Service) { s.SessionAffinity, s.Rare().SessionAffinityTimeout = "ClientIP", 60 }),
		want: "svc default/web cluster=10.96.0.10 affinity=60\n  port http TCP 80\n",
	}, {
		name: "affinity None has no timeout",
		svc:  svcM("web", func(s *kubestate.Service) { s.SessionAffinity, s.Rare().SessionAffinityTimeout = "None", 60 }),
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "ports matched by name; the backend port comes from the slice; ports sorted by name",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Ports = []kubestate.ServicePort{{Name: "metrics", Protocol: "TCP", Port: 9090}, {Name: "http", Protocol: "TCP", Port: 80}}
		}),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a", ready("10.1.2.5", "")), func(s *kubestate.EndpointSlice) {
			s.Ports = []kubestate.EndpointPort{{Name: "metrics", Protocol: "TCP", Port: 9100}, {Name: "http", Protocol: "TCP", Port: 8080}}
		})},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
  port metrics TCP 9090
    backend 10.1.2.5:9100 ready serving
`,
	}, {
		name: "a slice port of the same name but another protocol does not match",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a", ready("10.1.2.5", "")), func(s *kubestate.EndpointSlice) {
			s.Ports[0].Protocol = "UDP"
		})},
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "local and host-network backends",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a",
			ready("10.1.1.5", "web-1"),      // this node's pod subnet
			ready("10.1.2.5", "web-2"),      // another node's pod
			ready("192.168.16.1", "host-1"), // host network, this node's VPP IP
			ready("10.20.0.1", ""),          // host network, this node's management IP
			ready("192.168.16.2", "host-2"), // host network, another node
		), func(s *kubestate.EndpointSlice) {
			s.Endpoints[0].Edit(func(f *kubestate.EndpointFields) { f.TargetNamespace = "default" })
		})},
		want: `svc default/web cluster=10.96.0.10
  port http TCP 80
    backend 10.1.1.5:8080 local ready serving
    backend 10.1.2.5:8080 ready serving
    backend 10.20.0.1:8080 local host ready serving
    backend 192.168.16.1:8080 local host ready serving
    backend 192.168.16.2:8080 host ready serving
`,
		pods: []string{"default/host-1", "default/web-1"},
	}, {
		name:  "headless service skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.ClusterIPs = []string{"None"} }),
		skips: "default/web service/default/web headless\n",
	}, {
		name:  "ExternalName service skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.Type, s.ClusterIPs = "ExternalName", nil }),
		skips: "default/web service/default/web external-name\n",
	}, {
		name:  "service of another proxy skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.Rare().ProxyName = "kpng" }),
		skips: "default/web service/default/web other-proxy: \"kpng\"\n",
	}, {
		name: "SCTP port skipped with a reason, never rendered as UDP",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Ports = append(s.Ports, kubestate.ServicePort{Name: "sig", Protocol: "SCTP", Port: 3868})
		}),
		want:  "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
		skips: "default/web service/default/web port=sig sctp-unsupported: protocol \"SCTP\"\n",
	}, {
		name: "unknown protocol skipped",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Ports = append(s.Ports, kubestate.ServicePort{Name: "x", Protocol: "QUIC", Port: 443})
		}),
		want:  "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
		skips: "default/web service/default/web port=x unknown-protocol: protocol \"QUIC\"\n",
	}, {
		name: "ports 0 and above 65535 skipped, nodePort too",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Type = "NodePort"
			s.Ports = append(s.Ports,
				kubestate.ServicePort{Name: "zero", Protocol: "TCP", Port: 0},
				kubestate.ServicePort{Name: "big", Protocol: "UDP", Port: 65536},
				kubestate.ServicePort{Name: "np", Protocol: "UDP", Port: 53, NodePort: 70000})
		}),
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
		skips: `default/web service/default/web port=big invalid-port: port 65536
default/web service/default/web port=np invalid-port: nodePort 70000
default/web service/default/web port=zero invalid-port: port 0
`,
	}, {
		name: "duplicate port names: the later port skipped; duplicate protocol and port too",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Ports = append(s.Ports,
				kubestate.ServicePort{Name: "http", Protocol: "UDP", Port: 81},
				kubestate.ServicePort{Name: "alt", Protocol: "TCP", Port: 80},
				kubestate.ServicePort{Name: "dns", Protocol: "UDP", Port: 80})
		}),
		want: "svc default/web cluster=10.96.0.10\n  port dns UDP 80\n  port http TCP 80\n",
		skips: `default/web service/default/web port=alt duplicate-port: TCP 80 used by an earlier port
default/web service/default/web port=http duplicate-port: name used by an earlier port
`,
	}, {
		name:  "no usable port: service skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.Ports[0].Protocol = "SCTP" }),
		skips: "default/web service/default/web no-ports\ndefault/web service/default/web port=http sctp-unsupported: protocol \"SCTP\"\n",
	}, {
		name: "invalid IPs skipped, the rest kept",
		svc: svcM("web", func(s *kubestate.Service) {
			s.ClusterIPs = []string{"10.96.0.300", "10.96.0.10"}
			s.Rare().ExternalIPs = []string{"1.2.3.4", "bogus"}
		}),
		want: "svc default/web cluster=10.96.0.10 external=1.2.3.4\n  port http TCP 80\n",
		skips: `default/web service/default/web invalid-ip: clusterIP "10.96.0.300"
default/web service/default/web invalid-ip: externalIP "bogus"
`,
	}, {
		name:  "no usable frontend IP: service skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.ClusterIPs = []string{"x"} }),
		skips: "default/web service/default/web invalid-ip: clusterIP \"x\"\ndefault/web service/default/web no-frontend\n",
	}, {
		name:  "unknown type skipped",
		svc:   svcM("web", func(s *kubestate.Service) { s.Type = "Magic" }),
		skips: "default/web service/default/web invalid-value: type \"Magic\"\n",
	}, {
		name:  "unknown policy value: Cluster, reported",
		svc:   svcM("web", func(s *kubestate.Service) { s.ExternalTrafficPolicy = "Nearby" }),
		want:  "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
		skips: "default/web service/default/web invalid-value: externalTrafficPolicy \"Nearby\" (Cluster used)\n",
	}, {
		name: "dual-stack cluster IPs, sorted",
		svc:  svcM("web", func(s *kubestate.Service) { s.ClusterIPs = []string{"fd00:96::10", "10.96.0.10"} }),
		slices: []*kubestate.EndpointSlice{
			sliceM("web", "web-v4", ready("10.1.2.5", "")),
			withSlice(sliceM("web", "web-v6", ready("fd00:1::5", "")), func(s *kubestate.EndpointSlice) { s.AddressType = "IPv6" }),
		},
		want: `svc default/web cluster=10.96.0.10,fd00:96::10
  port http TCP 80
    backend 10.1.2.5:8080 ready serving
    backend [fd00:1::5]:8080 host ready serving
`,
	}, {
		name: "external and LoadBalancer IPs merged, sorted, without duplicates",
		svc: svcM("web", func(s *kubestate.Service) {
			s.Type = "LoadBalancer"
			s.Rare().ExternalIPs = []string{"5.5.5.5", "1.1.1.1"}
			s.Rare().LBIngressIPs = []string{"3.3.3.3", "1.1.1.1"}
		}),
		want: "svc default/web cluster=10.96.0.10 external=1.1.1.1,3.3.3.3,5.5.5.5\n  port http TCP 80\n",
	}, {
		name: "LoadBalancer ingress IPs ignored when the type is no longer LoadBalancer",
		svc:  svcM("web", func(s *kubestate.Service) { s.Rare().LBIngressIPs = []string{"3.3.3.3"} }),
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "nodePort only for NodePort and LoadBalancer services",
		svc:  svcM("web", func(s *kubestate.Service) { s.Ports[0].NodePort = 30080 }),
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "FQDN slices ignored",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a", ready("example.com", "")), func(s *kubestate.EndpointSlice) {
			s.AddressType = "FQDN"
		})},
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n",
	}, {
		name: "invalid endpoint addresses skipped with a reason, the rest kept",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{sliceM("web", "web-a",
			ready("10.1.2.5", ""), ready("10.1.2.500", ""), ready("fd00::1", ""), kubestate.EndpointFields{Ready: true}.Endpoint())},
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n    backend 10.1.2.5:8080 ready serving\n",
		skips: `default/web endpointslice/default/web-a invalid-endpoint: address "10.1.2.500"
default/web endpointslice/default/web-a invalid-endpoint: address fd00::1 in an IPv4 slice
default/web endpointslice/default/web-a invalid-endpoint: endpoint without address
`,
	}, {
		name: "unusable addresses skipped, held as addresses or as text alike",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a",
			ready("0.0.0.0", ""), ready("::", ""), ready("::ffff:10.1.2.3", ""), ready("fe80::1%eth0", ""),
			ready("FD00::7", ""), ready("fd00::8", "")), func(s *kubestate.EndpointSlice) { s.AddressType = "" })},
		want: "svc default/web cluster=10.96.0.10\n  port http TCP 80\n" +
			"    backend [fd00::7]:8080 host ready serving\n    backend [fd00::8]:8080 host ready serving\n",
		skips: `default/web endpointslice/default/web-a invalid-endpoint: address "0.0.0.0"
default/web endpointslice/default/web-a invalid-endpoint: address "::"
default/web endpointslice/default/web-a invalid-endpoint: address "::ffff:10.1.2.3"
default/web endpointslice/default/web-a invalid-endpoint: address "fe80::1%eth0"
`,
	}, {
		name: "invalid slice port skipped",
		svc:  svcM("web"),
		slices: []*kubestate.EndpointSlice{withSlice(sliceM("web", "web-a", ready("10.1.2.5", "")), func(s *kubestate.EndpointSlice) {
			s.Ports[0].Port = 0
		}), sliceM("web", "web-b", ready("10.1.2.6", ""))},
		want:  "svc default/web cluster=10.96.0.10\n  port http TCP 80\n    backend 10.1.2.6:8080 ready serving\n",
		skips: "default/web endpointslice/default/web-a port=http invalid-port: endpoint port 0\n",
	}, {
		name: "creation time kept for frontend conflicts",
		svc:  svcM("web", func(s *kubestate.Service) { s.Created = created }),
		want: "svc default/web cluster=10.96.0.10 created=2025-03-01T12:00:00Z\n  port http TCP 80\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := encodeAll(t, tc.svc, tc.slices)
			d := build(tc.svc, tc.slices, testView(), nil)
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
			var pods []string
			for _, k := range d.pods {
				pods = append(pods, k.ID())
			}
			if !slices.Equal(pods, tc.pods) {
				t.Errorf("local pods %v, want %v", pods, tc.pods)
			}
			if after := encodeAll(t, tc.svc, tc.slices); after != before {
				t.Errorf("build modified its input")
			}
			// The same input gives the same output, in any slice order.
			rev := slices.Clone(tc.slices)
			slices.Reverse(rev)
			if d2 := build(tc.svc, rev, testView(), nil); !d2.out.Equal(d.out) || !slices.Equal(d2.skips, d.skips) {
				t.Errorf("output depends on the order of slices")
			}
		})
	}
}

func encodeAll(t *testing.T, objs ...any) string {
	var b strings.Builder
	for _, o := range objs {
		j, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
	}
	return b.String()
}

// TestParseDottedAgreesWithNetip: the fast IPv4 path accepts only what
// netip.ParseAddr accepts, as the same address.
func TestParseDottedAgreesWithNetip(t *testing.T) {
	in := []string{"10.1.2.3", "0.0.0.0", "255.255.255.255", "256.1.1.1", "01.1.1.1", "1.1.1.00", "1.1.1", "1.1.1.1.",
		".1.1.1", "1..1.1", "1.1.1.1.1", "1.1.1.1 ", "", "a.b.c.d", "fd00::1", "::ffff:10.1.2.3", "10.1.2.3%eth0", "1.1.1.0x1", "0.0.0.1"}
	rnd := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789.:x "
	for range 20000 {
		b := make([]byte, rnd.IntN(17))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		in = append(in, string(b))
		// Fields of one to four digits: leading zeros, values past 255.
		f := make([]string, 3+rnd.IntN(3))
		for i := range f {
			f[i] = strconv.Itoa(rnd.IntN(300))
			if rnd.IntN(8) == 0 {
				f[i] = "0" + f[i]
			}
		}
		in = append(in, strings.Join(f, "."))
	}
	accepted := 0
	for _, s := range in {
		got, ok := parseDotted(s)
		if !ok {
			continue
		}
		accepted++
		want, err := netip.ParseAddr(s)
		if err != nil || got != want {
			t.Fatalf("parseDotted(%q) = %v; netip.ParseAddr: %v, %v", s, got, want, err)
		}
	}
	if accepted < 100 {
		t.Fatalf("only %d inputs took the fast path", accepted)
	}
}
