package kubestate

import (
	"fmt"
	"strings"
)

// Prefix is the versioned root of every key the project writes to etcd.
const Prefix = "/contiv/v1/"

// Layout versions of the tree under Prefix. LayoutKey holds the version
// the tree is in; docs/etcd-layout.md describes the migration.
const (
	// LayoutKey is the layout marker, written with every mark and sweep
	// (and load) of pods.
	LayoutKey = Prefix + "layout"
	// LayoutVersion is the layout this package reads and writes: pods
	// keyed by node (k8s/pod/<node>/<namespace>/<name>). Layout 1, which
	// had no marker, keyed them k8s/pod/<namespace>/<name>.
	LayoutVersion = "2"
)

// UnscheduledNode is the node segment of the key of a pod that has no node
// yet. Kubernetes node names never hold '_', so it names no node.
const UnscheduledNode = "_unscheduled"

// Resource names one kind of stored object.
type Resource string

// The resources stored under Prefix.
const (
	ResService       Resource = "service"
	ResEndpointSlice Resource = "endpointslice"
	ResPod           Resource = "pod"
	ResNode          Resource = "node"
	ResNamespace     Resource = "namespace"
	// ResVppNode is NodeSync's record of a node: its ID and VPP addresses.
	ResVppNode Resource = "vppnode"
)

// Resources lists every resource the agent watches, in a fixed order.
var Resources = []Resource{ResNamespace, ResNode, ResVppNode, ResPod, ResService, ResEndpointSlice}

// Namespaced tells whether objects of r live in a namespace.
func (r Resource) Namespaced() bool {
	switch r {
	case ResService, ResEndpointSlice, ResPod:
		return true
	}
	return false
}

// KeyPrefix is the etcd prefix holding every object of r.
func (r Resource) KeyPrefix() string {
	switch r { // constants: ParseKey tries them for every key it parses
	case ResVppNode:
		return Prefix + "nodesync/node/"
	case ResService:
		return Prefix + "k8s/" + string(ResService) + "/"
	case ResEndpointSlice:
		return Prefix + "k8s/" + string(ResEndpointSlice) + "/"
	case ResPod:
		return Prefix + "k8s/" + string(ResPod) + "/"
	case ResNode:
		return Prefix + "k8s/" + string(ResNode) + "/"
	case ResNamespace:
		return Prefix + "k8s/" + string(ResNamespace) + "/"
	}
	return Prefix + "k8s/" + string(r) + "/"
}

// PodPrefix is the etcd prefix holding the pods of node (the unscheduled
// pods for ""): what an agent watches to see only its own node's pods.
func PodPrefix(node string) string {
	return ResPod.KeyPrefix() + nodeSegment(node) + "/"
}

func nodeSegment(node string) string {
	if node == "" {
		return UnscheduledNode
	}
	return node
}

// Key identifies one stored object. Namespace is empty for cluster-scoped
// resources. Node is set for pods only: the pod's node, empty for a pod
// not scheduled yet (stored under UnscheduledNode).
type Key struct {
	Resource  Resource
	Node      string
	Namespace string
	Name      string
}

// String is the etcd key of k.
func (k Key) String() string {
	switch {
	case k.Resource == ResPod:
		return PodPrefix(k.Node) + k.Namespace + "/" + k.Name
	case k.Resource.Namespaced():
		return k.Resource.KeyPrefix() + k.Namespace + "/" + k.Name
	}
	return k.Resource.KeyPrefix() + k.Name
}

// ID is "namespace/name", or "name" for cluster-scoped objects. A pod's
// node is not part of it.
func (k Key) ID() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// ParseKey parses an etcd key written by this package. A pod key in layout
// 1 (no node segment) is refused with ErrOldLayout.
func ParseKey(s string) (Key, error) {
	for _, r := range Resources {
		p := r.KeyPrefix()
		if !strings.HasPrefix(s, p) {
			continue
		}
		rest := s[len(p):]
		if r == ResPod {
			return parsePodKey(s, rest)
		}
		if r.Namespaced() {
			ns, name, ok := strings.Cut(rest, "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return Key{}, fmt.Errorf("key %q: want %s<namespace>/<name>", s, p)
			}
			return Key{Resource: r, Namespace: ns, Name: name}, nil
		}
		if rest == "" || strings.Contains(rest, "/") {
			return Key{}, fmt.Errorf("key %q: want %s<name>", s, p)
		}
		return Key{Resource: r, Name: rest}, nil
	}
	return Key{}, fmt.Errorf("key %q: %w", s, ErrUnknownKey)
}

// parsePodKey parses rest, the part of pod key s after the pod prefix.
func parsePodKey(s, rest string) (Key, error) {
	var parts [3]string
	n := 0 // segments; 0 when one is empty (malformed), 4 for more than 3
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" {
			n = 0
			break
		}
		if n == len(parts) {
			n++
			break
		}
		parts[n] = seg
		n++
	}
	switch n {
	case 3:
		k := Key{Resource: ResPod, Node: parts[0], Namespace: parts[1], Name: parts[2]}
		if k.Node == UnscheduledNode {
			k.Node = ""
		}
		return k, nil
	case 2:
		return Key{}, fmt.Errorf("key %q: a pod key of layout 1 (%s<namespace>/<name>): %w", s, ResPod.KeyPrefix(), ErrOldLayout)
	}
	return Key{}, fmt.Errorf("key %q: want %s<node>/<namespace>/<name>", s, ResPod.KeyPrefix())
}

// resourceOf is the resource whose prefix key starts with, when one does
// and it takes decodeFast's path.
func resourceOf(key []byte) (Resource, bool) {
	const k8s = Prefix + "k8s/"
	if len(key) <= len(k8s) || string(key[:len(k8s)]) != k8s {
		return "", false
	}
	var r Resource
	switch key[len(k8s)] {
	case 'e':
		r = ResEndpointSlice
	case 's':
		r = ResService
	case 'p':
		r = ResPod
	default:
		return "", false
	}
	p := r.KeyPrefix()
	return r, len(key) > len(p) && string(key[:len(p)]) == p
}

// storedAs tells whether ParseKey parses key as k.
func (k Key) storedAs(key []byte) bool {
	p := k.Resource.KeyPrefix()
	if len(key) < len(p) || string(key[:len(p)]) != p {
		return false
	}
	rest := key[len(p):]
	switch {
	case k.Resource == ResPod:
		if k.Node == UnscheduledNode {
			return false // ParseKey reads that segment as no node
		}
		return segment(&rest, nodeSegment(k.Node)) && segment(&rest, k.Namespace) && last(rest, k.Name)
	case k.Resource.Namespaced():
		return k.Node == "" && segment(&rest, k.Namespace) && last(rest, k.Name)
	}
	return k.Node == "" && k.Namespace == "" && last(rest, k.Name)
}

// segment tells whether *rest starts with s, a segment of a key (not
// empty, no '/'), and a '/'; it cuts them off.
func segment(rest *[]byte, s string) bool {
	b := *rest
	if s == "" || len(b) <= len(s) || b[len(s)] != '/' || string(b[:len(s)]) != s || strings.IndexByte(s, '/') >= 0 {
		return false
	}
	*rest = b[len(s)+1:]
	return true
}

// last tells whether rest is s, the last segment of a key (not empty, no
// '/').
func last(rest []byte, s string) bool {
	return s != "" && string(rest) == s && strings.IndexByte(s, '/') < 0
}
