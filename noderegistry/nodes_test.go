package noderegistry

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"contiv.dev/vpp/kubestate"
)

func vppNode(name string, id uint32, vpp, mgmt []string) *kubestate.VppNode {
	return &kubestate.VppNode{Name: name, ID: id, VppIPs: vpp, MgmtIPs: mgmt}
}

func k8sNode(name string, addrs ...string) *kubestate.Node {
	n := &kubestate.Node{Name: name}
	for _, a := range addrs {
		typ, ip, _ := strings.Cut(a, "=")
		n.Addresses = append(n.Addresses, kubestate.NodeAddress{Type: typ, Address: ip})
	}
	return n
}

func describe(c Change, changed bool) string {
	if !changed {
		return "no change"
	}
	return c.String()
}

func TestNodesChanges(t *testing.T) {
	tab := NewNodes()
	steps := []struct {
		name  string
		apply func() (Change, bool, error)
		want  string
	}{
		{"k8s node without record: not a node yet",
			func() (Change, bool, error) {
				return tab.SetK8sNode("a", k8sNode("a", "InternalIP=10.0.0.1", "Hostname=a"))
			},
			"no change"},
		{"join: the record appears, with the k8s mgmt IP",
			func() (Change, bool, error) { return tab.SetRecord("a", vppNode("a", 1, nil, nil)) },
			"node a: none -> id=1 vpp=[] mgmt=[10.0.0.1]"},
		{"VPP IP published",
			func() (Change, bool, error) {
				return tab.SetRecord("a", vppNode("a", 1, []string{"192.168.16.1/24"}, []string{"10.0.0.1"}))
			},
			"node a: id=1 vpp=[] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1]"},
		{"same record again: no-op",
			func() (Change, bool, error) {
				return tab.SetRecord("a", vppNode("a", 1, []string{"192.168.16.1/24"}, []string{"10.0.0.1"}))
			},
			"no change"},
		{"IPv6 VPP IP published (given first): kept after the IPv4 one",
			func() (Change, bool, error) {
				return tab.SetRecord("a", vppNode("a", 1, []string{"2001:db8:16::1/64", "192.168.16.1/24"}, []string{"10.0.0.1"}))
			},
			"node a: id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24 2001:db8:16::1/64] mgmt=[10.0.0.1]"},
		{"IPv6 VPP IP withdrawn",
			func() (Change, bool, error) {
				return tab.SetRecord("a", vppNode("a", 1, []string{"192.168.16.1/24"}, []string{"10.0.0.1"}))
			},
			"node a: id=1 vpp=[192.168.16.1/24 2001:db8:16::1/64] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1]"},
		{"mgmt IP change on the k8s node",
			func() (Change, bool, error) {
				return tab.SetK8sNode("a", k8sNode("a", "InternalIP=10.0.0.2", "ExternalIP=1.2.3.4"))
			},
			"node a: id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1] -> id=1 vpp=[192.168.16.1/24] mgmt=[1.2.3.4 10.0.0.2]"},
		{"k8s node deleted: the published mgmt IPs remain",
			func() (Change, bool, error) { return tab.SetK8sNode("a", nil) },
			"node a: id=1 vpp=[192.168.16.1/24] mgmt=[1.2.3.4 10.0.0.2] -> id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1]"},
		{"leave: the record is deleted",
			func() (Change, bool, error) { return tab.SetRecord("a", nil) },
			"node a: id=1 vpp=[192.168.16.1/24] mgmt=[10.0.0.1] -> none"},
		{"leave again: no-op",
			func() (Change, bool, error) { return tab.SetRecord("a", nil) },
			"no change"},
	}
	for _, st := range steps {
		c, changed, err := st.apply()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := describe(c, changed); got != st.want {
			t.Fatalf("%s:\n got %s\nwant %s", st.name, got, st.want)
		}
	}
}

func TestNodesBadValues(t *testing.T) {
	tab := NewNodes()
	c, changed, err := tab.SetRecord("b", vppNode("b", 2, []string{"10.0.0.1", "192.168.16.2/24"}, []string{"x"}))
	if err == nil || !strings.Contains(err.Error(), `node b: VPP IP "10.0.0.1"`) || !strings.Contains(err.Error(), `management IP "x"`) {
		t.Fatalf("err = %v, want the bad values named", err)
	}
	if got := describe(c, changed); got != "node b: none -> id=2 vpp=[192.168.16.2/24] mgmt=[]" {
		t.Fatalf("the good values were lost: %s", got)
	}
	_, changed, err = tab.SetRecord("c", vppNode("c", 0, nil, nil))
	if !errors.Is(err, ErrCorrupt) || changed || tab.Len() != 1 {
		t.Fatalf("ID 0: changed=%v err=%v len=%d", changed, err, tab.Len())
	}
	_, _, err = tab.SetK8sNode("b", k8sNode("b", "InternalIP=10.0.0.300"))
	if err == nil || !strings.Contains(err.Error(), "10.0.0.300") {
		t.Fatalf("err = %v", err)
	}
}

func TestNodesResetAndAll(t *testing.T) {
	tab := NewNodes()
	var recs []*kubestate.VppNode
	for i := 5; i >= 1; i-- {
		recs = append(recs, vppNode(fmt.Sprintf("n%d", i), uint32(i), nil, []string{"10.9.9.9"}))
	}
	recs = append(recs, vppNode("zero", 0, nil, nil))
	err := tab.Reset(recs, []*kubestate.Node{k8sNode("n2", "InternalIP=10.0.0.2"), k8sNode("other", "InternalIP=10.0.0.9")})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want the ID-0 record reported", err)
	}
	all := tab.All()
	var got []string
	for _, n := range all {
		got = append(got, fmt.Sprintf("%s:%d:%s", n.Name, n.ID, strings.Join(n.MgmtIPs, ",")))
	}
	want := "n1:1:10.9.9.9 n2:2:10.0.0.2 n3:3:10.9.9.9 n4:4:10.9.9.9 n5:5:10.9.9.9"
	if strings.Join(got, " ") != want {
		t.Fatalf("All:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// Copies: changing them does not change the table.
	all[0].MgmtIPs[0] = "changed"
	if n, _ := tab.Get("n1"); n.MgmtIPs[0] != "10.9.9.9" {
		t.Fatal("All returned the table's own slices")
	}
	if rec, _ := tab.Record("n2"); rec.MgmtIPs[0] != "10.9.9.9" {
		t.Fatalf("Record %+v: want the published mgmt IPs", rec)
	}
	if ips, ok := tab.K8sMgmtIPs("other"); !ok || len(ips) != 1 || ips[0].String() != "10.0.0.9" {
		t.Fatalf("K8sMgmtIPs %v %v", ips, ok)
	}
	if _, ok := tab.Get("other"); ok {
		t.Fatal("a k8s node without a record is in the table")
	}
}
