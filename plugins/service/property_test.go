package service

import (
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// A small universe, so that random events keep hitting the same objects.
var (
	propNamespaces = []string{"a", "b"}
	propServices   = []string{"s1", "s2", "s3"}
	propSlices     = []string{"x1", "x2", "x3", "x4"}
	propPods       = []string{"p1", "p2"}
	propAddrs      = []string{
		"10.1.1.2", "10.1.1.3", "10.1.1.2", "10.1.1.3", "10.1.1.2", // this node's pods
		"10.1.2.2",                  // another node's pod
		"192.168.16.1", "10.20.0.1", // this node's own addresses (at first)
		"192.168.16.2", // another node's address
		"fd00::5", "bad",
	}
	propTimes = []time.Time{{}, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
)

// The generators favour valid, matching objects (listed first, and more
// than once) so that services, slices and pods keep meeting; the rest are
// the invalid and unusual inputs.

func genService(t *rapid.T) *kubestate.Service {
	port := rapid.Custom(func(t *rapid.T) kubestate.ServicePort {
		return kubestate.ServicePort{
			Name:     rapid.SampledFrom([]string{"http", "http", "", "dns"}).Draw(t, "name"),
			Protocol: rapid.SampledFrom([]string{"TCP", "TCP", "TCP", "UDP", "SCTP", "", "XX"}).Draw(t, "protocol"),
			Port:     rapid.SampledFrom([]int32{80, 80, 80, 53, 0, 70000}).Draw(t, "port"),
			NodePort: rapid.SampledFrom([]int32{0, 30000, -1}).Draw(t, "nodePort"),
		}
	})
	rare := new(kubestate.ServiceRare)
	s := &kubestate.Service{
		Namespace:  rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "ns"),
		Name:       rapid.SampledFrom(propServices).Draw(t, "name"),
		Type:       rapid.SampledFrom([]string{"ClusterIP", "NodePort", "ClusterIP", "LoadBalancer", "", "ExternalName", "Weird"}).Draw(t, "type"),
		ClusterIPs: rapid.SampledFrom([][]string{{"10.96.0.1"}, {"10.96.0.2"}, {"10.96.0.1"}, {"10.96.0.1", "fd00:96::1"}, {"None"}, nil, {"bad"}}).Draw(t, "clusterIPs"),
	}
	rare.ExternalIPs = rapid.SampledFrom([][]string{nil, nil, {"1.1.1.1"}, {"2.2.2.2", "1.1.1.1"}, {"x"}}).Draw(t, "externalIPs")
	rare.LBIngressIPs = rapid.SampledFrom([][]string{nil, {"3.3.3.3"}, {"1.1.1.1"}}).Draw(t, "lbIPs")
	s.Ports = rapid.SliceOfN(port, 1, 3).Draw(t, "ports")
	s.ExternalTrafficPolicy = rapid.SampledFrom([]string{"", "Cluster", "Local", "Bad"}).Draw(t, "etp")
	s.InternalTrafficPolicy = rapid.SampledFrom([]string{"", "Cluster", "Local"}).Draw(t, "itp")
	s.SessionAffinity = rapid.SampledFrom([]string{"", "None", "ClientIP"}).Draw(t, "affinity")
	rare.SessionAffinityTimeout = rapid.SampledFrom([]int32{0, 60, 100000}).Draw(t, "timeout")
	rare.ProxyName = rapid.SampledFrom([]string{"", "", "", "", "other"}).Draw(t, "proxy")
	s.Created = rapid.SampledFrom(propTimes).Draw(t, "created")
	if rare.ExternalIPs != nil || rare.LBIngressIPs != nil || rare.SessionAffinityTimeout != 0 || rare.ProxyName != "" {
		s.ServiceRare = rare
	}
	return s
}

// genSlice draws a slice; for svc (when not nil) it usually matches the
// service: same namespace, service name and port names and protocols.
func genSlice(t *rapid.T, svc *kubestate.Service) *kubestate.EndpointSlice {
	ns := rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "ns")
	port := rapid.Custom(func(t *rapid.T) kubestate.EndpointPort {
		return kubestate.EndpointPort{
			Name:     rapid.SampledFrom([]string{"http", "http", "", "dns"}).Draw(t, "name"),
			Protocol: rapid.SampledFrom([]string{"TCP", "TCP", "UDP", ""}).Draw(t, "protocol"),
			Port:     rapid.SampledFrom([]int32{8080, 8080, 53, 0}).Draw(t, "port"),
		}
	})
	endpoint := rapid.Custom(func(t *rapid.T) kubestate.EndpointFields {
		e := kubestate.EndpointFields{
			Addresses:   rapid.SliceOfN(rapid.SampledFrom(propAddrs), 0, 2).Draw(t, "addresses"),
			Ready:       rapid.SampledFrom([]bool{true, true, true, false}).Draw(t, "ready"),
			Serving:     rapid.Bool().Draw(t, "serving"),
			Terminating: rapid.Bool().Draw(t, "terminating"),
			NodeName:    rapid.SampledFrom([]string{"", "", "node-1", "node-2"}).Draw(t, "nodeName"),
		}
		if pod := rapid.SampledFrom(append(slices.Clone(propPods), "")).Draw(t, "pod"); pod != "" {
			e.TargetKind, e.TargetName = "Pod", pod
			e.TargetNamespace = rapid.SampledFrom([]string{"", "", ns, "a"}).Draw(t, "podNamespace")
		}
		return e
	})
	s := &kubestate.EndpointSlice{
		Namespace:   ns,
		Name:        rapid.SampledFrom(propSlices).Draw(t, "name"),
		ServiceName: rapid.SampledFrom(append(slices.Clone(propServices), "")).Draw(t, "service"),
		AddressType: rapid.SampledFrom([]string{"IPv4", "IPv4", "", "IPv6", "FQDN", "bad"}).Draw(t, "addressType"),
		Ports:       rapid.SliceOfN(port, 0, 2).Draw(t, "ports"),
	}
	endpoints := rapid.SliceOfN(endpoint, 0, 4).Draw(t, "endpoints")
	if svc != nil && rapid.SampledFrom([]bool{true, true, true, false}).Draw(t, "matching") {
		s.Namespace, s.ServiceName, s.AddressType = svc.Namespace, svc.Name, "IPv4"
		s.Ports = nil
		for _, p := range svc.Ports {
			s.Ports = append(s.Ports, kubestate.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: 8080})
		}
		for i := range endpoints {
			if endpoints[i].TargetNamespace != "" {
				endpoints[i].TargetNamespace = svc.Namespace
			}
		}
	}
	if endpoints != nil {
		s.Endpoints = make([]kubestate.Endpoint, len(endpoints))
		for i, f := range endpoints {
			s.Endpoints[i] = f.Endpoint()
		}
	}
	return s
}

func genPod(t *rapid.T) *kubestate.Pod {
	return &kubestate.Pod{
		Namespace:   rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "ns"),
		Name:        rapid.SampledFrom(propPods).Draw(t, "name"),
		NodeName:    rapid.SampledFrom([]string{"node-1", "node-1", "node-1", "node-2", ""}).Draw(t, "node"),
		IPs:         []string{rapid.SampledFrom(propAddrs).Draw(t, "ip")},
		HostNetwork: rapid.SampledFrom([]bool{false, false, true}).Draw(t, "hostNetwork"),
	}
}

// TestIncrementalEqualsResync: after any sequence of events, what the
// renderers were told incrementally equals what a fresh processor hands
// them in one resync of the final state (rig.check, after every step), and
// no input object is ever modified.
func TestIncrementalEqualsResync(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newRig(t)
		if rapid.Bool().Draw(t, "overlay") {
			r.cfg = Config{MainInterface: "eth0", OtherInterfaces: []string{"eth1"}, HostInterconnect: "tap0", VXLANBVI: "bvi0"}
			r.p, r.rec = r.processor()
		}
		type seen struct {
			o    kubestate.Object
			json string
		}
		var inputs []seen
		remember := func(o kubestate.Object) kubestate.Object {
			j, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, seen{o, string(j)})
			return o
		}
		// The CNI made every pod's interface; "pod interface" events toggle them.
		// Some the agent's pod manager wired (known before their Pod
		// objects).
		for _, ns := range propNamespaces {
			for _, name := range propPods {
				r.ifaces[ns+"/"+name] = "tap-" + ns + "-" + name
				r.wired[ns+"/"+name] = rapid.Bool().Draw(t, "wired "+ns+"/"+name)
			}
		}
		r.resync()
		t.Repeat(map[string]func(*rapid.T){
			"service": func(t *rapid.T) { r.put(remember(genService(t))) },
			"slice": func(t *rapid.T) {
				var svcs []*kubestate.Service
				for _, k := range slices.SortedFunc(maps.Keys(r.state), compareKeys) {
					if s, ok := r.state[k].(*kubestate.Service); ok {
						svcs = append(svcs, s)
					}
				}
				var svc *kubestate.Service
				if len(svcs) > 0 {
					svc = rapid.SampledFrom(svcs).Draw(t, "for")
				}
				r.put(remember(genSlice(t, svc)))
			},
			"slice, Prev not the object held": func(t *rapid.T) {
				// A Prev the processor was not given (equal, or not):
				// found through the index of slices all the same.
				s := remember(genSlice(t, nil))
				ev := &controller.ChangeEvent{Key: s.Key(), Prev: genSlice(t, nil), New: s}
				if held := r.state[s.Key()]; held != nil && rapid.Bool().Draw(t, "copy") {
					raw, err := kubestate.Encode(held)
					if err != nil {
						t.Fatal(err)
					}
					if ev.Prev, err = kubestate.Decode(held.Key(), raw); err != nil {
						t.Fatal(err)
					}
				}
				r.state[s.Key()] = s
				r.apply(ev)
			},
			"pod": func(t *rapid.T) { r.put(remember(genPod(t))) },
			"delete": func(t *rapid.T) {
				if len(r.state) == 0 {
					t.Skip("nothing to delete")
				}
				keys := slices.SortedFunc(maps.Keys(r.state), compareKeys)
				r.del(rapid.SampledFrom(keys).Draw(t, "key"))
			},
			"own addresses": func(t *rapid.T) {
				ips := rapid.SliceOfN(rapid.SampledFrom([]string{"192.168.16.1", "192.168.16.2", "10.20.0.1", "10.1.1.3"}), 0, 3).Draw(t, "ips")
				r.node.ips = nil
				for _, ip := range ips {
					r.node.ips = append(r.node.ips, netip.MustParseAddr(ip))
				}
				if rapid.Bool().Draw(t, "move pod subnet") {
					r.node.podNet = rapid.SampledFrom([]netip.Prefix{netip.MustParsePrefix("10.1.1.0/24"), netip.MustParsePrefix("10.1.2.0/24")}).Draw(t, "podNet")
				}
				r.node.id = uint32(rapid.IntRange(1, 2).Draw(t, "id"))
				r.apply(&controller.NodeUpdate{Name: r.node.name, New: &kubestate.VppNode{Name: r.node.name, ID: r.node.id}})
			},
			"other node": func(t *rapid.T) {
				r.apply(&controller.NodeUpdate{Name: "node-2", New: &kubestate.VppNode{Name: "node-2", ID: 2}})
			},
			"pod interface": func(t *rapid.T) {
				ns := rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "ns")
				name := rapid.SampledFrom(propPods).Draw(t, "name")
				tag := ns + "/" + name
				if _, ok := r.ifaces[tag]; ok {
					delete(r.ifaces, tag)
				} else {
					// Sometimes two pods share a name: the roles must add up.
					r.ifaces[tag] = rapid.SampledFrom([]string{"tap-" + ns + "-" + name, "tap-shared", "eth0"}).Draw(t, "ifName")
				}
				r.apply(&PodInterfaceEvent{Namespace: ns, Name: name})
			},
			"cni add or del": func(t *rapid.T) {
				// The pod manager's record made or removed, then its
				// PodInterfaceEvent (plugins/pods).
				ns := rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "ns")
				name := rapid.SampledFrom(propPods).Draw(t, "name")
				r.wired[ns+"/"+name] = !r.wired[ns+"/"+name]
				r.apply(&PodInterfaceEvent{Namespace: ns, Name: name})
			},
			"resync": func(t *rapid.T) { r.resync() },
			"":       func(t *rapid.T) { r.check() },
		})
		for _, in := range inputs {
			if j, _ := json.Marshal(in.o); string(j) != in.json {
				t.Fatalf("input %s was modified:\n%s\nnow\n%s", in.o.Key(), in.json, j)
			}
		}
	})
}
