package kubestate

import (
	"fmt"
	"strings"
)

// Prefix is the versioned root of every key the project writes to etcd.
const Prefix = "/contiv/v1/"

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
	if r == ResVppNode {
		return Prefix + "nodesync/node/"
	}
	return Prefix + "k8s/" + string(r) + "/"
}

// Key identifies one stored object. Namespace is empty for cluster-scoped
// resources.
type Key struct {
	Resource  Resource
	Namespace string
	Name      string
}

// String is the etcd key of k.
func (k Key) String() string {
	if k.Resource.Namespaced() {
		return k.Resource.KeyPrefix() + k.Namespace + "/" + k.Name
	}
	return k.Resource.KeyPrefix() + k.Name
}

// ID is "namespace/name", or "name" for cluster-scoped objects.
func (k Key) ID() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// ParseKey parses an etcd key written by this package.
func ParseKey(s string) (Key, error) {
	for _, r := range Resources {
		p := r.KeyPrefix()
		if !strings.HasPrefix(s, p) {
			continue
		}
		rest := s[len(p):]
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
