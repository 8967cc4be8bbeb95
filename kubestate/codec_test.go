package kubestate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleObjects has one object of every resource with every field set.
func sampleObjects() []Object {
	return []Object{
		&Service{
			Namespace: "ns", Name: "web", Type: "LoadBalancer",
			ClusterIPs: []string{"10.96.0.7", "fd00::7"},
			Ports: []ServicePort{
				{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web", NodePort: 30080},
				{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: "5353"},
			},
			ExternalTrafficPolicy: "Local", InternalTrafficPolicy: "Cluster",
			SessionAffinity: "ClientIP",
			Created:         time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
			ServiceRare:     &ServiceRare{ExternalIPs: []string{"192.0.2.1"}, LBIngressIPs: []string{"203.0.113.1"}, SessionAffinityTimeout: 60, ProxyName: "other"},
		},
		&EndpointSlice{
			Namespace: "ns", Name: "web-abc", ServiceName: "web", AddressType: "IPv4",
			Ports: []EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}},
			Endpoints: []Endpoint{
				EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true, NodeName: "node-1", TargetKind: "Pod", TargetNamespace: "ns", TargetName: "web-1"}.Endpoint(),
				EndpointFields{Addresses: []string{"10.1.2.2"}, Serving: true, Terminating: true}.Endpoint(),
			},
			TriggerTime: time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC),
		},
		&Pod{Namespace: "ns", Name: "web-1", NodeName: "node-1", IPs: []string{"10.1.1.2"}, HostIP: "192.168.16.1", HostNetwork: true},
		&Node{Name: "node-1", PodCIDRs: []string{"10.1.1.0/24"}, Addresses: []NodeAddress{{Type: "InternalIP", Address: "192.168.16.1"}}, Zone: "z",
			Taints: []Taint{{Key: TaintToBeDeleted, Value: "1732560000", Effect: "NoSchedule"}}},
		&Namespace{Name: "ns", Labels: map[string]string{"a": "b"}},
		&VppNode{Name: "node-1", ID: 1, VppIPs: []string{"192.168.16.1/24"}, MgmtIPs: []string{"10.0.0.1"}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, o := range sampleObjects() {
		b, err := Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		k, err := ParseKey(o.Key().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(k, b)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Errorf("%s: round trip\ngot  %+v\nwant %+v", k, got, o)
		}
		again, err := Encode(got)
		if err != nil || string(again) != string(b) {
			t.Errorf("%s: encoding not stable:\n%s\n%s (%v)", k, b, again, err)
		}
	}
}

func TestDecodeBadValues(t *testing.T) {
	svc := Key{Resource: ResService, Namespace: "ns", Name: "web"}
	tests := []struct {
		name    string
		key     Key
		value   string
		wantErr error
		wantMsg string
	}{
		{"not JSON", svc, "{", nil, "decode /contiv/v1/k8s/service/ns/web"},
		{"wrong type", svc, `{"namespace":"ns","name":"web","ports":[{"port":"80"}]}`, nil, "port"},
		{"value of another key", svc, `{"namespace":"ns","name":"other"}`, nil, "value names /contiv/v1/k8s/service/ns/other"},
		{"oversized", svc, `{"namespace":"ns","name":"web","type":"` + strings.Repeat("x", MaxValueSize) + `"}`, ErrTooLarge, "bytes"},
		{"unknown resource", Key{Resource: "ingress", Name: "x"}, `{}`, ErrUnknownKey, "ingress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.key, []byte(tt.value))
			if err == nil {
				t.Fatalf("decoded %+v, want an error", got)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not name %q", err, tt.wantMsg)
			}
		})
	}
}

func TestDecodeToleratesUnknownFields(t *testing.T) {
	k := Key{Resource: ResPod, Namespace: "ns", Name: "p"}
	got, err := Decode(k, []byte(`{"namespace":"ns","name":"p","ips":["10.1.1.2"],"futureField":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Pod{Namespace: "ns", Name: "p", IPs: []string{"10.1.1.2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
