package workload

import (
	"net/netip"
	"strconv"

	"contiv.dev/vpp/kubestate"
)

// Fixed dimensions of W(N).
const (
	Nodes        = 100
	ThisNode     = 1
	JoiningNode  = 101
	EndpointsPer = 10
	ChurnChanges = 1000
	// ExtraPod is the pod index of the churn's 11th endpoint.
	ExtraPod  = 245
	Namespace = "bench"
)

// NodeName names node k (1-based).
func NodeName(k int) string { return "node-" + strconv.Itoa(k) }

// VppIP is node k's VPP address (host k of 192.168.16.0/24).
func VppIP(k int) netip.Addr { return netip.AddrFrom4([4]byte{192, 168, 16, byte(k)}) }

// MgmtIP is node k's management address (host k of 10.20.0.0/24).
func MgmtIP(k int) netip.Addr { return netip.AddrFrom4([4]byte{10, 20, 0, byte(k)}) }

// ClusterIP is the i-th address of 10.96.0.0/12.
func ClusterIP(i int) netip.Addr {
	v := uint32(10)<<24 | uint32(96)<<16 + uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// EndpointIP is 10.1.<node>.<pod+2>.
func EndpointIP(node, pod int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 1, byte(node), byte(pod + 2)})
}

// ServiceName names service i.
func ServiceName(i int) string { return "svc-" + strconv.Itoa(i) }

// Endpoint j of service i: its node and pod index.
func endpointPlace(i, j int) (node, pod int) {
	return (10*i+j)%Nodes + 1, ((10*i + j) / 100) % 240
}

// Workload is W(N) in its base state.
type Workload struct {
	N        int
	Nodes    []*kubestate.Node
	VppNodes []*kubestate.VppNode
	Services []*kubestate.Service
	Slices   []*kubestate.EndpointSlice
	// Pods are the pods running on this node (node 1) that endpoints
	// target: those of the base endpoints, and pod 245, which the churn's
	// 11th endpoint of every service s with s mod 10 = 9 targets.
	Pods []*kubestate.Pod
}

// New builds W(n).
func New(n int) *Workload {
	w := &Workload{N: n}
	for k := 1; k <= Nodes; k++ {
		n, v := node(k)
		w.Nodes = append(w.Nodes, n)
		w.VppNodes = append(w.VppNodes, v)
	}
	localPods := map[int]bool{}
	for i := range n {
		w.Services = append(w.Services, service(i))
		w.Slices = append(w.Slices, Slice(i, EndpointsPer, false))
		for j := range EndpointsPer {
			if nd, p := endpointPlace(i, j); nd == ThisNode && !localPods[p] {
				localPods[p] = true
				w.Pods = append(w.Pods, pod(p))
			}
		}
	}
	if n >= 10 {
		w.Pods = append(w.Pods, pod(ExtraPod))
	}
	return w
}

func node(k int) (*kubestate.Node, *kubestate.VppNode) {
	name := NodeName(k)
	return &kubestate.Node{
			Name:      name,
			PodCIDRs:  []string{"10.1." + strconv.Itoa(k) + ".0/24"},
			Addresses: []kubestate.NodeAddress{{Type: "InternalIP", Address: MgmtIP(k).String()}},
		}, &kubestate.VppNode{
			Name:    name,
			ID:      uint32(k),
			VppIPs:  []string{VppIP(k).String() + "/24"},
			MgmtIPs: []string{MgmtIP(k).String()},
		}
}

// JoinNode is node 101 joining after the churn.
func JoinNode() (*kubestate.Node, *kubestate.VppNode) { return node(JoiningNode) }

// IsNodePort tells whether service i is of type NodePort (i mod 10 = 5).
func IsNodePort(i int) bool { return i%10 == 5 }

func service(i int) *kubestate.Service {
	s := &kubestate.Service{
		Namespace:             Namespace,
		Name:                  ServiceName(i),
		Type:                  "ClusterIP",
		ClusterIPs:            []string{ClusterIP(i).String()},
		Ports:                 []kubestate.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}},
		ExternalTrafficPolicy: "Cluster",
		InternalTrafficPolicy: "Cluster",
		SessionAffinity:       "None",
	}
	if IsNodePort(i) {
		s.Type = "NodePort"
		s.Ports[0].NodePort = int32(30000 + i/10)
	}
	return s
}

func pod(p int) *kubestate.Pod {
	return &kubestate.Pod{
		Namespace: Namespace,
		Name:      "pod-" + strconv.Itoa(ThisNode) + "-" + strconv.Itoa(p),
		NodeName:  NodeName(ThisNode),
		IPs:       []string{EndpointIP(ThisNode, p).String()},
		HostIP:    MgmtIP(ThisNode).String(),
	}
}

// Slice is service i's EndpointSlice with its first count base endpoints
// and, when extra is set, the churn's 11th endpoint.
func Slice(i, count int, extra bool) *kubestate.EndpointSlice {
	s := &kubestate.EndpointSlice{
		Namespace:   Namespace,
		Name:        ServiceName(i) + "-abcde",
		ServiceName: ServiceName(i),
		AddressType: "IPv4",
		Ports:       []kubestate.EndpointPort{{Name: "http", Protocol: "TCP", Port: 8080}},
	}
	add := func(nd, p int) {
		s.Endpoints = append(s.Endpoints, kubestate.EndpointFields{
			Addresses:       []string{EndpointIP(nd, p).String()},
			Ready:           true,
			Serving:         true,
			NodeName:        NodeName(nd),
			TargetKind:      "Pod",
			TargetNamespace: Namespace,
			TargetName:      "pod-" + strconv.Itoa(nd) + "-" + strconv.Itoa(p),
		}.Endpoint())
	}
	for j := range count {
		add(endpointPlace(i, j))
	}
	if extra {
		add((10*i+10)%Nodes+1, ExtraPod)
	}
	return s
}

// Objects is every object of the base state by key.
func (w *Workload) Objects() map[kubestate.Key]kubestate.Object {
	m := make(map[kubestate.Key]kubestate.Object, 2*Nodes+2*w.N+len(w.Pods))
	put := func(o kubestate.Object) { m[o.Key()] = o }
	for i := range w.Nodes {
		put(w.Nodes[i])
		put(w.VppNodes[i])
	}
	for i := range w.Services {
		put(w.Services[i])
		put(w.Slices[i])
	}
	for _, p := range w.Pods {
		put(p)
	}
	return m
}

// Change is one churn step: service S's slice goes from Prev to New.
type Change struct {
	K    int
	S    int
	Prev *kubestate.EndpointSlice
	New  *kubestate.EndpointSlice
}

// Churn returns the 1000 changes of BENCH.md, in order, starting from the
// base state.
func (w *Workload) Churn() []Change {
	changed := map[int]*kubestate.EndpointSlice{}
	out := make([]Change, 0, ChurnChanges)
	for k := range ChurnChanges {
		s := (7919*k + 13) % w.N
		prev := w.Slices[s]
		if c, ok := changed[s]; ok {
			prev = c
		}
		var next *kubestate.EndpointSlice
		switch {
		case changed[s] != nil:
			next = w.Slices[s]
			delete(changed, s)
		case k%2 == 0:
			next = Slice(s, EndpointsPer, true)
			changed[s] = next
		default:
			next = Slice(s, EndpointsPer-1, false)
			changed[s] = next
		}
		out = append(out, Change{K: k, S: s, Prev: prev, New: next})
	}
	return out
}
