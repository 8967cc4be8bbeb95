package nodesync

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
)

// The steps of a Node delete and re-register, in etcd always in this order
// (the reflector deletes the Node, then releases the record; the kubelet
// registers the Node again later). The agent's controller watches Nodes and
// records on separate watches, so it may deliver them in any order, may
// coalesce the delete and the re-create of the Node into one change, or
// into none (the same value put back).
const (
	stepDelete  = iota // the Node deleted
	stepRelease        // the record released (noderegistry.Release)
	stepCreate         // the Node created again
)

// reregister drives one agent's handler through a Node delete and
// re-register with a real etcd: etcd advances to each delivered step (or
// to etcdFirst steps before any delivery), the writer settles after each
// delivery, and check runs after each.
type reregister struct {
	t    *testing.T
	cli  *clientv3.Client
	h    *Handler
	done int // etcd steps done
	node *kubestate.Node
	rec  *kubestate.VppNode // the record before the release
}

const reregisterWant = `{"name":"a","id":1,"vppIPs":["192.168.16.1/24"],"mgmtIPs":["10.0.0.1"]}`

func newReregister(t *testing.T) *reregister {
	s := etcdtest.Start(t)
	cli := s.Client()
	node := k8sNode("a", "10.0.0.1")
	putNode(t, cli, "a", internalIP("10.0.0.1"))
	h := fastHandler(t, cli, "a", 0)
	ctx := t.Context()
	if err := h.Resync(ctx, snapshot(node)); err != nil {
		t.Fatal(err)
	}
	if err := h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")}); err != nil {
		t.Fatal(err)
	}
	flush(t, h)
	r := &reregister{t: t, cli: cli, h: h, node: node}
	r.rec = r.stored()
	if got := record(t, cli, "a"); got != reregisterWant {
		t.Fatalf("record %s, want %s", got, reregisterWant)
	}
	r.deliver(kubestate.ResVppNode, nil, r.rec)
	if n, ok := h.NodeByName("a"); !ok || len(n.VppIPs) == 0 {
		t.Fatalf("this node not taken in: %v", n)
	}
	return r
}

func (r *reregister) stored() *kubestate.VppNode {
	r.t.Helper()
	k := kubestate.Key{Resource: kubestate.ResVppNode, Name: "a"}
	resp, err := r.cli.Get(r.t.Context(), k.String())
	if err != nil || len(resp.Kvs) == 0 {
		r.t.Fatalf("no record: %v", err)
	}
	o, err := kubestate.Decode(k, resp.Kvs[0].Value)
	if err != nil {
		r.t.Fatal(err)
	}
	return o.(*kubestate.VppNode)
}

// etcdTo does the etcd steps up to and including step.
func (r *reregister) etcdTo(step int) {
	r.t.Helper()
	ctx := r.t.Context()
	for ; r.done <= step; r.done++ {
		switch r.done {
		case stepDelete:
			if _, err := r.cli.Delete(ctx, kubestate.Key{Resource: kubestate.ResNode, Name: "a"}.String()); err != nil {
				r.t.Fatal(err)
			}
		case stepRelease:
			if err := noderegistry.Release(ctx, r.cli, "a", time.Minute); err != nil {
				r.t.Fatal(err)
			}
		case stepCreate:
			putNode(r.t, r.cli, "a", internalIP("10.0.0.1"))
		}
	}
}

func (r *reregister) deliver(res kubestate.Resource, prev, next kubestate.Object) {
	r.t.Helper()
	ev := &controller.ChangeEvent{Key: kubestate.Key{Resource: res, Name: "a"}, Prev: prev, New: next}
	if err := r.h.Update(r.t.Context(), ev); err != nil {
		r.t.Fatal(err)
	}
	r.settle()
}

// settle waits until the writer has nothing left to do, or waits for a
// kick.
func (r *reregister) settle() {
	r.t.Helper()
	eventually(r.t, "the writer settled", func() bool {
		st := r.h.WriteStatus()
		return !st.Pending || st.Stalled
	})
}

// step delivers one step as the controller would, after etcd made it.
func (r *reregister) step(s int) {
	r.t.Helper()
	r.etcdTo(s)
	switch s {
	case stepDelete:
		r.deliver(kubestate.ResNode, r.node, nil)
	case stepRelease:
		r.deliver(kubestate.ResVppNode, r.rec, nil)
	case stepCreate:
		r.deliver(kubestate.ResNode, nil, r.node)
	}
}

// claimed checks that this node holds its ID again, with its addresses.
func (r *reregister) claimed(when string) {
	r.t.Helper()
	eventually(r.t, "the record claimed again "+when, func() bool { return record(r.t, r.cli, "a") == reregisterWant })
	if id := r.h.ID(); id != 1 {
		r.t.Fatalf("%s: ID %d, want 1", when, id)
	}
}

// released checks that nothing claimed the ID back while the Node is gone.
func (r *reregister) released(when string) {
	r.t.Helper()
	if got := record(r.t, r.cli, "a"); got != "" {
		r.t.Fatalf("%s: the record was claimed again while its Node is gone: %s", when, got)
	}
}

// TestNodeReregisterClaimsAgain: whatever the order in which the agent
// learns of its Node's delete, its record's release and its Node's
// re-creation (and whenever its writer runs into the release), it holds its
// ID again once its Node exists, and not before.
func TestNodeReregisterClaimsAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		etcdFirst int   // etcd steps done before any delivery
		order     []int // the steps delivered
	}{
		{"delete, release, create; each in etcd just before", 0, []int{stepDelete, stepRelease, stepCreate}},
		{"delete, release, create; released before delivered", stepRelease + 1, []int{stepDelete, stepRelease, stepCreate}},
		{"delete, create, release; released before delivered", stepRelease + 1, []int{stepDelete, stepCreate, stepRelease}},
		{"delete, create, release; released after the delete's publish", 0, []int{stepDelete, stepCreate, stepRelease}},
		{"release, delete, create", stepRelease + 1, []int{stepRelease, stepDelete, stepCreate}},
		{"release, create, delete coalesced with it (none)", stepCreate + 1, []int{stepRelease}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReregister(t)
			if tc.etcdFirst > 0 {
				r.etcdTo(tc.etcdFirst - 1)
			}
			created := false
			for _, s := range tc.order {
				r.step(s)
				created = created || s == stepCreate
				if !created && r.done == stepCreate {
					r.released("before the Node is back")
				}
				if created {
					// The release may never be delivered (a lagging
					// watch): the Node alone has the ID claimed.
					r.claimed("once the Node is back")
				}
			}
			r.etcdTo(stepCreate)
			r.claimed("at the end")
		})
	}
}

// TestNodeReregisterCoalesced: the controller coalesced the Node's delete
// and re-creation into one change (with other addresses) and delivers the
// release before or after it: the ID is claimed again.
func TestNodeReregisterCoalesced(t *testing.T) {
	for _, releaseFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "release first", false: "node first"}[releaseFirst], func(t *testing.T) {
			r := newReregister(t)
			r.etcdTo(stepRelease)
			moved := k8sNode("a", "10.0.0.2")
			val, err := kubestate.Encode(moved)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.cli.Put(t.Context(), kubestate.Key{Resource: kubestate.ResNode, Name: "a"}.String(), string(val)); err != nil {
				t.Fatal(err)
			}
			r.done = stepCreate + 1
			if releaseFirst {
				r.deliver(kubestate.ResVppNode, r.rec, nil)
			}
			r.deliver(kubestate.ResNode, r.node, moved)
			if !releaseFirst {
				r.deliver(kubestate.ResVppNode, r.rec, nil)
			}
			want := strings.Replace(reregisterWant, "10.0.0.1", "10.0.0.2", 1)
			eventually(t, "the record claimed again", func() bool { return record(t, r.cli, "a") == want })
		})
	}
}

// TestNodeGoneDropsKeptRecord: a record that vanished while this node's
// Node existed is kept (it may be lost with etcd's data); when the Node is
// deleted next, it was a release: the node leaves the table.
func TestNodeGoneDropsKeptRecord(t *testing.T) {
	r := newReregister(t)
	r.etcdTo(stepRelease)
	r.step(stepRelease)
	if _, ok := r.h.NodeByName("a"); !ok {
		t.Fatal("the record was dropped before the Node's delete was known")
	}
	r.step(stepDelete)
	if n, ok := r.h.NodeByName("a"); ok {
		t.Fatalf("this node still in the table after its Node's delete and its record's release: %v", n)
	}
	r.released("after the Node's delete")
	r.step(stepCreate)
	r.claimed("once the Node is back")
}
