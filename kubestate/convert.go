package kubestate

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Errors of the conversion from Kubernetes objects; both mean invalid input
// that no retry will fix.
var (
	// ErrUnsupported is returned for a kind that has no compact model.
	ErrUnsupported = errors.New("unsupported kind")
	// ErrInvalid is returned for an object that cannot be stored, such as
	// one without a name.
	ErrInvalid = errors.New("invalid object")
)

// Well-known labels and annotations read by the conversion.
const (
	// LabelServiceProxyName marks a Service as owned by another proxy.
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	// LabelServiceName names the Service of an EndpointSlice.
	LabelServiceName = "kubernetes.io/service-name"
	// AnnotationTriggerTime is when the change that produced an
	// EndpointSlice happened (RFC 3339).
	AnnotationTriggerTime = "endpoints.kubernetes.io/last-change-trigger-time"
	// LabelTopologyZone is a Node's zone (topology-aware routing).
	LabelTopologyZone = "topology.kubernetes.io/zone"
)

// DefaultSessionAffinityTimeout is the ClientIP affinity timeout, in
// seconds, of a Service that does not set one (the Kubernetes default).
const DefaultSessionAffinityTimeout = 10800

// FromK8s converts a Service, EndpointSlice, Pod, Node or Namespace into its
// compact model. Any other kind is an ErrUnsupported error naming it.
func FromK8s(obj runtime.Object) (Object, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		return FromService(o)
	case *discoveryv1.EndpointSlice:
		return FromEndpointSlice(o)
	case *corev1.Pod:
		return FromPod(o)
	case *corev1.Node:
		return FromNode(o)
	case *corev1.Namespace:
		return FromNamespace(o)
	case nil:
		return nil, fmt.Errorf("nil object: %w", ErrUnsupported)
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("nil %T: %w", obj, ErrUnsupported)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", obj)
	}
	name := ""
	if m, ok := obj.(metav1.Object); ok {
		name = " " + objectID(m.GetNamespace(), m.GetName())
	}
	return nil, fmt.Errorf("%s%s: %w", kind, name, ErrUnsupported)
}

// FromService converts a core/v1 Service, applying the API server's
// defaults to fields left unset (type ClusterIP, protocol TCP, traffic
// policies Cluster, affinity None, ClientIP timeout 10800 s).
func FromService(s *corev1.Service) (*Service, error) {
	if err := checkObject("Service", s, true); err != nil {
		return nil, err
	}
	out := &Service{
		Namespace:             s.Namespace,
		Name:                  s.Name,
		Type:                  string(s.Spec.Type),
		ClusterIPs:            clone(s.Spec.ClusterIPs),
		ExternalTrafficPolicy: string(s.Spec.ExternalTrafficPolicy),
		SessionAffinity:       string(s.Spec.SessionAffinity),
		Created:               timeOf(s.CreationTimestamp),
	}
	rare := ServiceRare{
		ExternalIPs:         clone(s.Spec.ExternalIPs),
		ProxyName:           s.Labels[LabelServiceProxyName],
		HealthCheckNodePort: s.Spec.HealthCheckNodePort,
	}
	// Source ranges apply to LoadBalancer services only (as in kube-proxy).
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		rare.LoadBalancerSourceRanges = clone(s.Spec.LoadBalancerSourceRanges)
	}
	if d := s.Spec.TrafficDistribution; d != nil {
		rare.TrafficDistribution = *d
	}
	if out.Type == "" {
		out.Type = string(corev1.ServiceTypeClusterIP)
	}
	if len(out.ClusterIPs) == 0 && s.Spec.ClusterIP != "" {
		out.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		switch {
		case in.IP == "":
		case in.IPMode != nil && *in.IPMode == corev1.LoadBalancerIPModeProxy:
			rare.LBProxyIPs = append(rare.LBProxyIPs, in.IP)
		default:
			rare.LBIngressIPs = append(rare.LBIngressIPs, in.IP)
		}
	}
	for _, p := range s.Spec.Ports {
		sp := ServicePort{
			Name:     p.Name,
			Protocol: protocol(p.Protocol),
			Port:     p.Port,
			NodePort: p.NodePort,
		}
		if p.TargetPort.IntVal != 0 || p.TargetPort.StrVal != "" {
			sp.TargetPort = p.TargetPort.String()
		} else {
			sp.TargetPort = fmt.Sprint(p.Port) // the API's default
		}
		out.Ports = append(out.Ports, sp)
	}
	if out.ExternalTrafficPolicy == "" {
		out.ExternalTrafficPolicy = string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	out.InternalTrafficPolicy = string(corev1.ServiceInternalTrafficPolicyCluster)
	if p := s.Spec.InternalTrafficPolicy; p != nil && *p != "" {
		out.InternalTrafficPolicy = string(*p)
	}
	if out.SessionAffinity == "" {
		out.SessionAffinity = string(corev1.ServiceAffinityNone)
	}
	if out.SessionAffinity == string(corev1.ServiceAffinityClientIP) {
		rare.SessionAffinityTimeout = DefaultSessionAffinityTimeout
		if c := s.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			rare.SessionAffinityTimeout = *c.ClientIP.TimeoutSeconds
		}
	}
	if !rare.isZero() {
		out.ServiceRare = &rare
	}
	return out, nil
}

// FromEndpointSlice converts a discovery.k8s.io/v1 EndpointSlice. Endpoint
// conditions are resolved as Kubernetes defines them: an unset ready means
// ready, an unset serving means the same as ready, an unset terminating
// means not terminating. An unparsable trigger-time annotation is ignored.
func FromEndpointSlice(s *discoveryv1.EndpointSlice) (*EndpointSlice, error) {
	if err := checkObject("EndpointSlice", s, true); err != nil {
		return nil, err
	}
	out := &EndpointSlice{
		Namespace:   s.Namespace,
		Name:        s.Name,
		ServiceName: s.Labels[LabelServiceName],
		AddressType: string(s.AddressType),
	}
	if v, ok := s.Annotations[AnnotationTriggerTime]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			out.TriggerTime = t.UTC()
		}
	}
	for _, p := range s.Ports {
		ep := EndpointPort{Protocol: string(corev1.ProtocolTCP)}
		if p.Name != nil {
			ep.Name = *p.Name
		}
		if p.Protocol != nil && *p.Protocol != "" {
			ep.Protocol = string(*p.Protocol)
		}
		if p.Port != nil {
			ep.Port = *p.Port
		}
		out.Ports = append(out.Ports, ep)
	}
	for _, e := range s.Endpoints {
		c := e.Conditions
		ready := c.Ready == nil || *c.Ready
		serving := ready
		if c.Serving != nil {
			serving = *c.Serving
		}
		ep := EndpointFields{
			Addresses:   clone(e.Addresses),
			Ready:       ready,
			Serving:     serving,
			Terminating: c.Terminating != nil && *c.Terminating,
		}
		if e.NodeName != nil {
			ep.NodeName = *e.NodeName
		}
		if r := e.TargetRef; r != nil {
			ep.TargetKind, ep.TargetNamespace, ep.TargetName = r.Kind, r.Namespace, r.Name
		}
		if h := e.Hints; h != nil {
			for _, z := range h.ForZones {
				ep.HintZones = append(ep.HintZones, z.Name)
			}
			for _, n := range h.ForNodes {
				ep.HintNodes = append(ep.HintNodes, n.Name)
			}
		}
		out.Endpoints = append(out.Endpoints, ep.Endpoint())
	}
	return out, nil
}

// FromPod converts a core/v1 Pod: where it runs and its addresses.
func FromPod(p *corev1.Pod) (*Pod, error) {
	if err := checkObject("Pod", p, true); err != nil {
		return nil, err
	}
	out := &Pod{
		Namespace:   p.Namespace,
		Name:        p.Name,
		NodeName:    p.Spec.NodeName,
		HostIP:      p.Status.HostIP,
		HostNetwork: p.Spec.HostNetwork,
	}
	for _, ip := range p.Status.PodIPs {
		if ip.IP != "" {
			out.IPs = append(out.IPs, ip.IP)
		}
	}
	if len(out.IPs) == 0 && p.Status.PodIP != "" {
		out.IPs = []string{p.Status.PodIP}
	}
	return out, nil
}

// FromNode converts a core/v1 Node: its pod CIDRs, addresses, zone and
// taints.
func FromNode(n *corev1.Node) (*Node, error) {
	if err := checkObject("Node", n, false); err != nil {
		return nil, err
	}
	out := &Node{Name: n.Name, PodCIDRs: clone(n.Spec.PodCIDRs), Zone: n.Labels[LabelTopologyZone]}
	if len(out.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		out.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	for _, a := range n.Status.Addresses {
		out.Addresses = append(out.Addresses, NodeAddress{Type: string(a.Type), Address: a.Address})
	}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out, nil
}

// FromNamespace converts a core/v1 Namespace: its name and labels.
func FromNamespace(n *corev1.Namespace) (*Namespace, error) {
	if err := checkObject("Namespace", n, false); err != nil {
		return nil, err
	}
	out := &Namespace{Name: n.Name}
	if len(n.Labels) > 0 {
		out.Labels = make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			out.Labels[k] = v
		}
	}
	return out, nil
}

// kubeObject is a pointer to a Kubernetes object (ObjectMeta embedded).
type kubeObject[T any] interface {
	*T
	GetObjectMeta() metav1.Object
}

// checkObject refuses a nil object, then checks its metadata (checkMeta).
func checkObject[T any, P kubeObject[T]](kind string, o P, namespaced bool) error {
	if o == nil {
		return fmt.Errorf("nil %s: %w", kind, ErrInvalid)
	}
	return checkMeta(kind, o.GetObjectMeta().(*metav1.ObjectMeta), namespaced)
}

// checkMeta refuses names that cannot be stored under a key: empty, or
// holding a '/'. Namespaced objects need a namespace too.
func checkMeta(kind string, m *metav1.ObjectMeta, namespaced bool) error {
	id := objectID(m.Namespace, m.Name)
	switch {
	case m.Name == "":
		return fmt.Errorf("%s %q: no name: %w", kind, id, ErrInvalid)
	case namespaced && m.Namespace == "":
		return fmt.Errorf("%s %s: no namespace: %w", kind, m.Name, ErrInvalid)
	case !namespaced && m.Namespace != "":
		return fmt.Errorf("%s %s: cluster-scoped kind with namespace %q: %w", kind, m.Name, m.Namespace, ErrInvalid)
	case containsSlash(m.Name) || containsSlash(m.Namespace):
		return fmt.Errorf("%s %q: '/' in name or namespace: %w", kind, id, ErrInvalid)
	}
	return nil
}

func objectID(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func containsSlash(s string) bool { return strings.ContainsRune(s, '/') }

func protocol(p corev1.Protocol) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(p)
}

func timeOf(t metav1.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// clone copies s; an empty s gives nil so equal objects encode equally.
func clone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
