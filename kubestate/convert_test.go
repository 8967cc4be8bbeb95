package kubestate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

func objMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func TestFromService(t *testing.T) {
	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name string
		in   *corev1.Service
		want *Service
	}{{
		name: "defaults",
		in:   &corev1.Service{ObjectMeta: objMeta("ns", "a"), Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.5", Ports: []corev1.ServicePort{{Port: 80}}}},
		want: &Service{
			Namespace: "ns", Name: "a", Type: "ClusterIP", ClusterIPs: []string{"10.96.0.5"},
			Ports:                 []ServicePort{{Protocol: "TCP", Port: 80, TargetPort: "80"}},
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
		},
	}, {
		name: "clusterIPs win over clusterIP",
		in: &corev1.Service{ObjectMeta: objMeta("ns", "a"), Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5", "fd00::5"},
		}},
		want: &Service{
			Namespace: "ns", Name: "a", Type: "ClusterIP", ClusterIPs: []string{"10.96.0.5", "fd00::5"},
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
		},
	}, {
		name: "headless",
		in:   &corev1.Service{ObjectMeta: objMeta("ns", "h"), Spec: corev1.ServiceSpec{ClusterIP: "None"}},
		want: &Service{
			Namespace: "ns", Name: "h", Type: "ClusterIP", ClusterIPs: []string{"None"},
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
		},
	}, {
		name: "load balancer with everything",
		in: &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: "lb", CreationTimestamp: metav1.NewTime(created.In(time.FixedZone("x", 3600))),
				Labels: map[string]string{LabelServiceProxyName: "other", "app": "x"},
			},
			Spec: corev1.ServiceSpec{
				Type:       corev1.ServiceTypeLoadBalancer,
				ClusterIPs: []string{"10.96.0.7"}, ExternalIPs: []string{"192.0.2.1"},
				Ports: []corev1.ServicePort{
					{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("web"), NodePort: 30080},
					{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353), NodePort: 30053},
				},
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyLocal),
				SessionAffinity:       corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr[int32](60)}},
			},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: "203.0.113.1"}, {Hostname: "lb.example.com"}, {IP: "203.0.113.2"},
			}}},
		},
		want: &Service{
			Namespace: "ns", Name: "lb", Type: "LoadBalancer",
			ClusterIPs: []string{"10.96.0.7"},
			Ports: []ServicePort{
				{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web", NodePort: 30080},
				{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: "5353", NodePort: 30053},
			},
			ExternalTrafficPolicy: "Local", InternalTrafficPolicy: "Local",
			SessionAffinity: "ClientIP",
			Created:         created,
			ServiceRare:     &ServiceRare{ExternalIPs: []string{"192.0.2.1"}, LBIngressIPs: []string{"203.0.113.1", "203.0.113.2"}, SessionAffinityTimeout: 60, ProxyName: "other"},
		},
	}, {
		name: "ClientIP affinity without timeout gets the default",
		in: &corev1.Service{ObjectMeta: objMeta("ns", "a"), Spec: corev1.ServiceSpec{
			SessionAffinity:       corev1.ServiceAffinityClientIP,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{}},
		}},
		want: &Service{
			Namespace: "ns", Name: "a", Type: "ClusterIP",
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster",
			SessionAffinity: "ClientIP",
			ServiceRare:     &ServiceRare{SessionAffinityTimeout: 10800},
		},
	}, {
		name: "load balancer parity fields: health check port, source ranges, ipMode, traffic distribution",
		in: &corev1.Service{ObjectMeta: objMeta("ns", "lb"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.8",
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort:      32000,
			LoadBalancerSourceRanges: []string{"198.51.100.0/24", "203.0.113.7/32"},
			TrafficDistribution:      ptr(corev1.ServiceTrafficDistributionPreferClose),
		}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "203.0.113.1", IPMode: ptr(corev1.LoadBalancerIPModeProxy)},
			{IP: "203.0.113.2", IPMode: ptr(corev1.LoadBalancerIPModeVIP)},
			{IP: "203.0.113.3"},
		}}}},
		want: &Service{
			Namespace: "ns", Name: "lb", Type: "LoadBalancer", ClusterIPs: []string{"10.96.0.8"},
			ExternalTrafficPolicy: "Local", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
			ServiceRare: &ServiceRare{LBIngressIPs: []string{"203.0.113.2", "203.0.113.3"}, LBProxyIPs: []string{"203.0.113.1"},
				HealthCheckNodePort: 32000, LoadBalancerSourceRanges: []string{"198.51.100.0/24", "203.0.113.7/32"}, TrafficDistribution: "PreferClose"},
		},
	}, {
		name: "source ranges of a service that is no LoadBalancer are not kept",
		in: &corev1.Service{ObjectMeta: objMeta("ns", "np"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.9", LoadBalancerSourceRanges: []string{"198.51.100.0/24"},
		}},
		want: &Service{
			Namespace: "ns", Name: "np", Type: "NodePort", ClusterIPs: []string{"10.96.0.9"},
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
		},
	}, {
		name: "ExternalName",
		in: &corev1.Service{ObjectMeta: objMeta("ns", "ext"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com",
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr[int32](5)}},
		}},
		want: &Service{
			Namespace: "ns", Name: "ext", Type: "ExternalName",
			ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromService(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.Created.Location() != time.UTC {
				t.Errorf("created %v not in UTC", got.Created)
			}
		})
	}
}

func TestFromServiceCopies(t *testing.T) {
	in := &corev1.Service{ObjectMeta: objMeta("ns", "a"), Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.0.0.1"}, ExternalIPs: []string{"192.0.2.1"}}}
	got, err := FromService(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Spec.ClusterIPs[0], in.Spec.ExternalIPs[0] = "x", "y"
	if got.ClusterIPs[0] != "10.0.0.1" || got.ExternalIPs()[0] != "192.0.2.1" {
		t.Errorf("conversion shares slices with its input: %+v", got)
	}
}

func TestFromEndpointSlice(t *testing.T) {
	trigger := time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC)
	mk := func(annotations map[string]string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: "web-abc", Labels: map[string]string{LabelServiceName: "web"},
				Annotations: annotations,
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{
				{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr[int32](8080)},
				{Protocol: ptr(corev1.ProtocolUDP), Port: ptr[int32](53)},
				{}, // every field unset: all ports, TCP
			},
			Endpoints: eps,
		}
	}
	wantPorts := []EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}, {Protocol: "UDP", Port: 53}, {Protocol: "TCP"}}
	ep := func(c discoveryv1.EndpointConditions) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.1.1.2"}, Conditions: c}
	}
	tests := []struct {
		name        string
		in          *discoveryv1.EndpointSlice
		wantEPs     []Endpoint
		wantTrigger time.Time
	}{{
		name: "all conditions unset: ready and serving",
		in:   mk(nil, ep(discoveryv1.EndpointConditions{})),
		wantEPs: []Endpoint{
			EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true}.Endpoint(),
		},
	}, {
		name:    "not ready, serving unset: not serving",
		in:      mk(nil, ep(discoveryv1.EndpointConditions{Ready: ptr(false)})),
		wantEPs: []Endpoint{EndpointFields{Addresses: []string{"10.1.1.2"}}.Endpoint()},
	}, {
		name: "terminating but serving",
		in:   mk(nil, ep(discoveryv1.EndpointConditions{Ready: ptr(false), Serving: ptr(true), Terminating: ptr(true)})),
		wantEPs: []Endpoint{
			EndpointFields{Addresses: []string{"10.1.1.2"}, Serving: true, Terminating: true}.Endpoint(),
		},
	}, {
		name: "ready unset, serving false",
		in:   mk(nil, ep(discoveryv1.EndpointConditions{Serving: ptr(false)})),
		wantEPs: []Endpoint{
			EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true}.Endpoint(),
		},
	}, {
		name: "node, target and trigger time",
		in: mk(map[string]string{AnnotationTriggerTime: "2024-01-02T04:04:05.6+01:00"}, discoveryv1.Endpoint{
			Addresses: []string{"10.1.2.3", "10.1.2.4"}, NodeName: ptr("node-2"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web-1", UID: "u"},
		}),
		wantEPs: []Endpoint{EndpointFields{
			Addresses: []string{"10.1.2.3", "10.1.2.4"}, Ready: true, Serving: true, NodeName: "node-2",
			TargetKind: "Pod", TargetNamespace: "ns", TargetName: "web-1",
		}.Endpoint()},
		wantTrigger: trigger,
	}, {
		name: "topology hints",
		in: mk(nil, discoveryv1.Endpoint{
			Addresses: []string{"10.1.1.2"},
			Hints: &discoveryv1.EndpointHints{
				ForZones: []discoveryv1.ForZone{{Name: "zone-a"}, {Name: "zone-b"}},
				ForNodes: []discoveryv1.ForNode{{Name: "node-1"}},
			},
		}),
		wantEPs: []Endpoint{EndpointFields{
			Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true,
			HintZones: []string{"zone-a", "zone-b"}, HintNodes: []string{"node-1"},
		}.Endpoint()},
	}, {
		name:    "unparsable trigger time is ignored",
		in:      mk(map[string]string{AnnotationTriggerTime: "yesterday"}, ep(discoveryv1.EndpointConditions{Ready: ptr(true)})),
		wantEPs: []Endpoint{EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true}.Endpoint()},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEndpointSlice(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			want := &EndpointSlice{
				Namespace: "ns", Name: "web-abc", ServiceName: "web", AddressType: "IPv4",
				Ports: wantPorts, Endpoints: tt.wantEPs, TriggerTime: tt.wantTrigger,
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestFromPodNodeNamespace(t *testing.T) {
	tests := []struct {
		name string
		in   runtime.Object
		want Object
	}{{
		name: "pod with podIPs",
		in: &corev1.Pod{
			ObjectMeta: objMeta("ns", "p"), Spec: corev1.PodSpec{NodeName: "node-1"},
			Status: corev1.PodStatus{PodIP: "10.1.1.2", PodIPs: []corev1.PodIP{{IP: "10.1.1.2"}, {IP: "fd00::2"}}, HostIP: "192.168.16.1"},
		},
		want: &Pod{Namespace: "ns", Name: "p", NodeName: "node-1", IPs: []string{"10.1.1.2", "fd00::2"}, HostIP: "192.168.16.1"},
	}, {
		name: "pod with podIP only, host network",
		in: &corev1.Pod{
			ObjectMeta: objMeta("ns", "p"), Spec: corev1.PodSpec{NodeName: "node-1", HostNetwork: true},
			Status: corev1.PodStatus{PodIP: "192.168.16.1", HostIP: "192.168.16.1"},
		},
		want: &Pod{Namespace: "ns", Name: "p", NodeName: "node-1", IPs: []string{"192.168.16.1"}, HostIP: "192.168.16.1", HostNetwork: true},
	}, {
		name: "pending pod",
		in:   &corev1.Pod{ObjectMeta: objMeta("ns", "p")},
		want: &Pod{Namespace: "ns", Name: "p"},
	}, {
		name: "node",
		in: &corev1.Node{
			ObjectMeta: objMeta("", "node-1"),
			Spec:       corev1.NodeSpec{PodCIDR: "10.1.1.0/24", PodCIDRs: []string{"10.1.1.0/24", "fd00:1::/64"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "192.168.16.1"}, {Type: corev1.NodeHostName, Address: "node-1"},
			}},
		},
		want: &Node{
			Name: "node-1", PodCIDRs: []string{"10.1.1.0/24", "fd00:1::/64"},
			Addresses: []NodeAddress{{Type: "InternalIP", Address: "192.168.16.1"}, {Type: "Hostname", Address: "node-1"}},
		},
	}, {
		name: "node with a zone",
		in:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3", Labels: map[string]string{LabelTopologyZone: "zone-a"}}},
		want: &Node{Name: "node-3", Zone: "zone-a"},
	}, {
		name: "node with podCIDR only",
		in:   &corev1.Node{ObjectMeta: objMeta("", "node-2"), Spec: corev1.NodeSpec{PodCIDR: "10.1.2.0/24"}},
		want: &Node{Name: "node-2", PodCIDRs: []string{"10.1.2.0/24"}},
	}, {
		name: "node being deleted by the cluster autoscaler",
		in: &corev1.Node{ObjectMeta: objMeta("", "node-4"), Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: TaintToBeDeleted, Value: "1732560000", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}},
		}}},
		want: &Node{Name: "node-4", Taints: []Taint{
			{Key: TaintToBeDeleted, Value: "1732560000", Effect: "NoSchedule"},
			{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"},
		}},
	}, {
		name: "namespace",
		in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}},
		want: &Namespace{Name: "shop", Labels: map[string]string{"team": "a"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromK8s(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestFromK8sErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      runtime.Object
		wantErr error
		wantMsg string
	}{
		{"unsupported kind", &appsv1.Deployment{ObjectMeta: objMeta("ns", "d")}, ErrUnsupported, "*v1.Deployment ns/d"},
		{"unsupported kind with type meta", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap"}, ObjectMeta: objMeta("ns", "c")}, ErrUnsupported, "ConfigMap ns/c"},
		{"nil", nil, ErrUnsupported, "nil object"},
		{"typed nil", (*corev1.Service)(nil), ErrInvalid, "nil Service"},
		{"typed nil of another kind", (*appsv1.Deployment)(nil), ErrUnsupported, "nil *v1.Deployment"},
		{"service without name", &corev1.Service{ObjectMeta: objMeta("ns", "")}, ErrInvalid, "Service \"ns/\": no name"},
		{"service without namespace", &corev1.Service{ObjectMeta: objMeta("", "s")}, ErrInvalid, "Service s: no namespace"},
		{"slice without name", &discoveryv1.EndpointSlice{ObjectMeta: objMeta("ns", "")}, ErrInvalid, "EndpointSlice"},
		{"pod without namespace", &corev1.Pod{ObjectMeta: objMeta("", "p")}, ErrInvalid, "Pod p: no namespace"},
		{"node without name", &corev1.Node{}, ErrInvalid, "Node \"\": no name"},
		{"node with namespace", &corev1.Node{ObjectMeta: objMeta("ns", "n")}, ErrInvalid, "cluster-scoped"},
		{"namespace without name", &corev1.Namespace{}, ErrInvalid, "Namespace"},
		{"slash in name", &corev1.Pod{ObjectMeta: objMeta("ns", "a/b")}, ErrInvalid, "'/'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromK8s(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not name %q", err, tt.wantMsg)
			}
		})
	}
}
