package service

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// scenario is one file of testdata/: steps of Kubernetes changes, each with
// the state every renderer must hold afterwards.
//
// The node is always node-1 (ID 1, own IPs 192.168.16.1 and 10.20.0.1, pod
// subnet 10.1.1.0/24 of 10.1.0.0/16); its main NIC is eth0.
type scenario struct {
	// Config overrides the interface names (main eth0, no overlay).
	Config *struct {
		Main             string   `json:"main"`
		Others           []string `json:"others"`
		HostInterconnect string   `json:"hostInterconnect"`
		VXLANBVI         string   `json:"vxlanBVI"`
	} `json:"config"`
	// Interfaces are the pod interfaces the CNI made before the first step:
	// tag ("<namespace>/<pod>") → VPP interface name.
	Interfaces map[string]string `json:"interfaces"`
	Steps      []step            `json:"steps"`
}

// step is applied in this order: Apply, Delete, NodeIPs, PodInterfaces,
// Resync. Expect is the renderers' state (the format of dumpState) and
// Skipped what Skipped reports (formatSkips); both are checked against a
// fresh resync of the same cluster state too.
type step struct {
	Name string `json:"name"`
	// Apply is Kubernetes YAML: objects created or replaced, in order.
	Apply string `json:"apply"`
	// Delete names objects: "<resource> <namespace>/<name>".
	Delete []string `json:"delete"`
	// NodeIPs, when set, are this node's new own addresses (a NodeUpdate).
	NodeIPs []string `json:"nodeIPs"`
	// PodInterfaces set ("" removes) pod interfaces, each followed by a
	// PodInterfaceEvent.
	PodInterfaces map[string]string `json:"podInterfaces"`
	// Resync restarts: a full resync of the processor.
	Resync  bool   `json:"resync"`
	Expect  string `json:"expect"`
	Skipped string `json:"skipped"`
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) { runScenario(t, f) })
	}
}

func runScenario(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := yaml.UnmarshalStrict(b, &sc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	r := newRig(t)
	if c := sc.Config; c != nil {
		r.cfg = Config{MainInterface: c.Main, OtherInterfaces: c.Others, HostInterconnect: c.HostInterconnect, VXLANBVI: c.VXLANBVI}
		r.p, r.rec = r.processor()
	}
	for tag, name := range sc.Interfaces {
		r.ifaces[tag] = name
	}
	r.resync()
	for i, st := range sc.Steps {
		objs, err := kubestate.LoadYAML(strings.NewReader(st.Apply))
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, st.Name, err)
		}
		r.put(objs...)
		for _, d := range st.Delete {
			r.del(r.stored(parseObjectName(t, d)))
		}
		if st.NodeIPs != nil {
			r.node.ips = nil
			for _, s := range st.NodeIPs {
				r.node.ips = append(r.node.ips, netip.MustParseAddr(s))
			}
			r.apply(&controller.NodeUpdate{Name: r.node.name, New: &kubestate.VppNode{Name: r.node.name, ID: r.node.id}})
		}
		for tag, name := range st.PodInterfaces {
			if name == "" {
				delete(r.ifaces, tag)
			} else {
				r.ifaces[tag] = name
			}
			ns, pod, _ := strings.Cut(tag, "/")
			r.apply(&PodInterfaceEvent{Namespace: ns, Name: pod})
		}
		if st.Resync {
			r.p, r.rec = r.processor()
			r.resync()
		}
		if got := r.check(); got != st.Expect {
			t.Errorf("step %d (%s): state\n%s\nwant\n%s", i+1, st.Name, got, st.Expect)
		}
		if got := formatSkips(r.p.Skipped()); got != st.Skipped {
			t.Errorf("step %d (%s): skipped\n%s\nwant\n%s", i+1, st.Name, got, st.Skipped)
		}
	}
}

// stored is the key k is stored under: a pod's holds its node.
func (r *rig) stored(k kubestate.Key) kubestate.Key {
	if k.Resource == kubestate.ResPod {
		for sk := range r.state {
			if sk.Resource == kubestate.ResPod && sk.ID() == k.ID() {
				return sk
			}
		}
	}
	return k
}

// parseObjectName parses "<resource> <namespace>/<name>".
func parseObjectName(t *testing.T, s string) kubestate.Key {
	t.Helper()
	res, id, ok := strings.Cut(s, " ")
	ns, name, ok2 := strings.Cut(id, "/")
	if !ok || !ok2 {
		t.Fatalf("delete %q: want \"<resource> <namespace>/<name>\"", s)
	}
	return kubestate.Key{Resource: kubestate.Resource(res), Namespace: ns, Name: name}
}
