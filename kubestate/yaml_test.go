package kubestate

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const clusterYAML = "../deploy/examples/cluster.yaml"

func TestLoadYAML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Object
	}{
		{"empty", "", nil},
		{"only separators and comments", "---\n# nothing\n---\n\n---\n", nil},
		{
			name: "namespace defaults to default, defaults applied",
			in: `
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: 10.96.0.9
  ports:
  - port: 80
---
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
`,
			want: []Object{
				&Service{
					Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{"10.96.0.9"},
					Ports:                 []ServicePort{{Protocol: "TCP", Port: 80, TargetPort: "80"}},
					ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: "Cluster", SessionAffinity: "None",
				},
				&Namespace{Name: "shop"},
			},
		},
		{
			name: "v1 List and typed list are flattened",
			in: `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node-1
  spec:
    podCIDR: 10.1.1.0/24
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    namespace: ns
    name: web-a
    labels:
      kubernetes.io/service-name: web
  addressType: IPv4
  endpoints:
  - addresses: [10.1.1.2]
---
apiVersion: v1
kind: PodList
items:
- metadata:
    name: p
  status:
    podIP: 10.1.1.2
`,
			want: []Object{
				&Node{Name: "node-1", PodCIDRs: []string{"10.1.1.0/24"}},
				&EndpointSlice{
					Namespace: "ns", Name: "web-a", ServiceName: "web", AddressType: "IPv4",
					Endpoints: []Endpoint{EndpointFields{Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true}.Endpoint()},
				},
				&Pod{Namespace: "default", Name: "p", IPs: []string{"10.1.1.2"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadYAML(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLoadYAMLErrors(t *testing.T) {
	const good = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ok\n---\n"
	tests := []struct {
		name    string
		in      string
		wantErr error
		wantMsg []string
	}{{
		name:    "unknown kind",
		in:      good + "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  namespace: shop\n  name: web\n",
		wantErr: ErrUnsupported,
		wantMsg: []string{"yaml document 2", "Deployment shop/web", "apps/v1"},
	}, {
		name:    "kind of the scheme without a model",
		in:      good + good + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n",
		wantErr: ErrUnsupported,
		wantMsg: []string{"yaml document 3", "ConfigMap cfg"},
	}, {
		name:    "unknown field",
		in:      good + "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  clusterIp: 10.96.0.1\n",
		wantMsg: []string{"yaml document 2", "Service web", "clusterIp"},
	}, {
		name:    "wrong type",
		in:      "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: eighty\n",
		wantMsg: []string{"yaml document 1", "Service web"},
	}, {
		name:    "bad YAML",
		in:      good + "apiVersion: v1\nkind: Pod\nmetadata: [\n",
		wantMsg: []string{"yaml document 2"},
	}, {
		name:    "no kind",
		in:      "apiVersion: v1\nmetadata:\n  name: x\n",
		wantErr: ErrInvalid,
		wantMsg: []string{"yaml document 1 (x): no kind"},
	}, {
		name:    "no apiVersion",
		in:      good + "kind: Pod\nmetadata:\n  name: x\n",
		wantErr: ErrInvalid,
		wantMsg: []string{"yaml document 2 (Pod x): no apiVersion"},
	}, {
		name:    "old API version",
		in:      "apiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata:\n  name: s\naddressType: IPv4\n",
		wantErr: ErrUnsupported,
		wantMsg: []string{"yaml document 1", "EndpointSlice s", "discovery.k8s.io/v1beta1"},
	}, {
		name:    "no name",
		in:      good + "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: shop\n",
		wantErr: ErrInvalid,
		wantMsg: []string{"yaml document 2", "no name"},
	}, {
		name:    "bad item of a list",
		in:      "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n",
		wantErr: ErrUnsupported,
		wantMsg: []string{"yaml document 1 (List", "item 2", "Secret s"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadYAML(strings.NewReader(tt.in))
			if err == nil {
				t.Fatalf("loaded %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("objects returned with an error: %+v", got)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

// TestExampleCluster checks deploy/examples/cluster.yaml: it loads, has the
// documented content, and is consistent (pod IPs in their node's pod subnet,
// endpoints pointing at the pods they name, every slice's service exists).
func TestExampleCluster(t *testing.T) {
	f, err := os.Open(clusterYAML)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[Resource]int{}
	byKey := map[Key]Object{}
	for _, o := range objs {
		counts[o.Key().Resource]++
		if _, dup := byKey[o.Key()]; dup {
			t.Errorf("%s twice", o.Key())
		}
		byKey[o.Key()] = o
	}
	want := map[Resource]int{ResNamespace: 3, ResNode: 3, ResPod: 19, ResService: 12, ResEndpointSlice: 12}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}

	nodes := map[string]*Node{}
	for _, o := range objs {
		if n, ok := o.(*Node); ok {
			nodes[n.Name] = n
		}
	}
	for i, name := range []string{"node-1", "node-2", "node-3"} {
		n := nodes[name]
		if n == nil {
			t.Fatalf("no %s", name)
		}
		if want := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i + 1), 0}), 24).String(); !slices.Equal(n.PodCIDRs, []string{want}) {
			t.Errorf("%s pod CIDRs %v, want %s", name, n.PodCIDRs, want)
		}
		if len(n.Addresses) == 0 || n.Addresses[0].Type != "InternalIP" {
			t.Errorf("%s has no InternalIP: %v", name, n.Addresses)
		}
	}
	nodeIP := func(n *Node) string { return n.Addresses[0].Address }

	for _, o := range objs {
		switch o := o.(type) {
		case *Pod:
			n := nodes[o.NodeName]
			if n == nil {
				t.Errorf("pod %s on unknown node %q", o.Key().ID(), o.NodeName)
				continue
			}
			if o.HostIP != nodeIP(n) {
				t.Errorf("pod %s host IP %s, node %s has %s", o.Key().ID(), o.HostIP, n.Name, nodeIP(n))
			}
			for _, ip := range o.IPs {
				if o.HostNetwork && ip != nodeIP(n) || !o.HostNetwork && !netip.MustParsePrefix(n.PodCIDRs[0]).Contains(netip.MustParseAddr(ip)) {
					t.Errorf("pod %s IP %s does not fit node %s", o.Key().ID(), ip, n.Name)
				}
			}
		case *EndpointSlice:
			if _, ok := byKey[Key{Resource: ResService, Namespace: o.Namespace, Name: o.ServiceName}]; !ok {
				t.Errorf("slice %s: no service %q", o.Key().ID(), o.ServiceName)
			}
			for _, ep := range o.Endpoints {
				if ep.TargetKind() == "" {
					continue
				}
				p, ok := byKey[Key{Resource: ResPod, Node: ep.NodeName(), Namespace: ep.TargetNamespace(), Name: ep.TargetName()}].(*Pod)
				if !ok {
					t.Errorf("slice %s: no pod %s/%s", o.Key().ID(), ep.TargetNamespace(), ep.TargetName())
					continue
				}
				if p.NodeName != ep.NodeName() || !slices.Equal(p.IPs, ep.Addresses()) {
					t.Errorf("slice %s: endpoint %v does not match pod %+v", o.Key().ID(), ep, p)
				}
			}
		}
	}

	// The features the file promises.
	svc := func(id string) *Service {
		ns, name, _ := strings.Cut(id, "/")
		s, _ := byKey[Key{Resource: ResService, Namespace: ns, Name: name}].(*Service)
		if s == nil {
			t.Fatalf("no service %s", id)
		}
		return s
	}
	if s := svc("shop/frontend"); s.Type != "NodePort" || s.ExternalTrafficPolicy != "Local" || s.Ports[0].NodePort != 30080 {
		t.Errorf("frontend: %+v", s)
	}
	if s := svc("shop/web"); s.Type != "LoadBalancer" || !slices.Equal(s.LBIngressIPs(), []string{"203.0.113.10"}) || len(s.Ports) != 2 {
		t.Errorf("web: %+v", s)
	}
	if s := svc("shop/cart"); s.SessionAffinity != "ClientIP" || s.SessionAffinityTimeout() != 3600 {
		t.Errorf("cart: %+v", s)
	}
	if s := svc("shop/catalog"); !slices.Equal(s.ExternalIPs(), []string{"198.51.100.20"}) {
		t.Errorf("catalog: %+v", s)
	}
	if s := svc("shop/payments"); s.InternalTrafficPolicy != "Local" {
		t.Errorf("payments: %+v", s)
	}
	if s := svc("shop/orders"); !slices.Equal(s.ClusterIPs, []string{"None"}) {
		t.Errorf("orders: %+v", s)
	}
	if s := svc("shop/payments-db"); s.Type != "ExternalName" || len(s.ClusterIPs) != 0 {
		t.Errorf("payments-db: %+v", s)
	}
	if s := svc("shop/legacy"); s.ProxyName() == "" {
		t.Errorf("legacy: %+v", s)
	}
	if s := svc("kube-system/kube-dns"); len(s.Ports) != 3 || s.Ports[0].Protocol != "UDP" {
		t.Errorf("kube-dns: %+v", s)
	}
	if s := svc("default/kubernetes"); !s.Created.Equal(time.Date(2025, 1, 10, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("kubernetes created %v", s.Created)
	}
	checkout := byKey[Key{Resource: ResEndpointSlice, Namespace: "shop", Name: "checkout-p8s2c"}].(*EndpointSlice)
	if eps := checkout.Endpoints; len(eps) != 2 || !eps[0].Ready() || eps[1].Ready() || !eps[1].Serving() || !eps[1].Terminating() {
		t.Errorf("checkout endpoints: %+v", eps)
	}
	if checkout.TriggerTime.IsZero() {
		t.Error("checkout slice has no trigger time")
	}
}

func BenchmarkLoadYAMLExampleCluster(b *testing.B) {
	data, err := os.ReadFile(clusterYAML)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := LoadYAML(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// LoadYAMLFile reads what LoadYAML decodes, and its errors name the file.
func TestLoadYAMLFileNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ns.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := LoadYAMLFile(good)
	if err != nil || len(objs) != 1 || objs[0].Key().Name != "shop" {
		t.Fatalf("LoadYAMLFile = %v, %v; want the namespace shop", objs, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadYAMLFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad file: %v, want an error naming %s and the unknown field", err, bad)
	}
	if _, err := LoadYAMLFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
