package controller

import (
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// everyResource is one object of each watched resource (a pod of node n1,
// the node whose pods are watched), at version v (1 to 254).
func everyResource(v string) []kubestate.Object {
	return []kubestate.Object{
		ns("a", v),
		&kubestate.Node{Name: "n1", Zone: "zone-" + v},
		&kubestate.VppNode{Name: "n1", ID: 1, MgmtIPs: []string{"192.168.56.101"}, VppIPs: []string{"192.168.16." + v + "/24"}},
		&kubestate.Pod{Namespace: "shop", Name: "p", NodeName: "n1", IPs: []string{"10.1.1." + v}},
		&kubestate.Service{Namespace: "shop", Name: "s", Type: "ClusterIP", ClusterIPs: []string{"10.96.0." + v}},
		&kubestate.EndpointSlice{Namespace: "shop", Name: "s-1", ServiceName: "s", AddressType: "IPv4"},
	}
}

// outage is an agent's controller on an etcd that goes away and comes back.
type outage struct {
	srv *etcdtest.Server
	cli *clientv3.Client
	ctl *Controller
	rec *recorder
}

// wipe loses etcd's data; the reflector's sweep then writes what the API
// holds and the markers, and the agent claims its record again.
func (o *outage) wipe(t *testing.T) {
	o.srv.Wipe()
	var record kubestate.Object
	for _, obj := range everyResource("1") {
		if obj.Key().Resource == kubestate.ResVppNode {
			record = obj
			continue
		}
		put(t, o.cli, obj)
	}
	markSynced(t, o.cli)
	put(t, o.cli, record)
}

// stop stops etcd and starts it again on its data; the reflector marks
// its sweep once it is back.
func (o *outage) stop(t *testing.T) {
	o.srv.Stop()
	eventually(t, "disconnection noticed", func() bool { return !o.ctl.Status().EtcdConnected })
	o.srv.Restart()
	markSynced(t, o.cli)
}

// partition cuts the agent off etcd, which is written meanwhile.
func (o *outage) partition(t *testing.T) {
	o.srv.SetReachable(false)
	eventually(t, "disconnection noticed", func() bool { return !o.ctl.Status().EtcdConnected })
	markSynced(t, o.cli)
	o.srv.SetReachable(true)
}

// cycle deletes the object of every resource, checks that each delete
// reaches the handler, then puts each at version v and checks that too.
func (o *outage) cycle(t *testing.T, v string) {
	t.Helper()
	objs := everyResource(v)
	for _, obj := range objs {
		del(t, o.cli, obj.Key())
	}
	for _, obj := range objs {
		eventually(t, obj.Key().String()+" deleted", func() bool { return o.rec.holds(obj.Key(), nil) })
	}
	for _, obj := range objs {
		put(t, o.cli, obj)
	}
	for _, obj := range objs {
		eventually(t, obj.Key().String()+" put at "+v, func() bool { return o.rec.holds(obj.Key(), obj) })
	}
}

// TestEveryResourceAfterOutages: after etcd was wiped (the reflector
// restoring its output), stopped and restarted, or out of the agent's reach,
// deletes and puts of every watched resource reach the handler, each watch
// on its own, on a controller that requires a complete reflector output.
func TestEveryResourceAfterOutages(t *testing.T) {
	srv := etcdtest.StartProxied(t)
	cli := srv.Client() // the reflector's, never cut off
	for _, obj := range everyResource("1") {
		put(t, cli, obj)
	}
	markSynced(t, cli)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: srv.ProxyClient(), Handlers: []Handler{rec}, RequireSynced: true, PodNode: "n1",
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		RelistJitter:   50 * time.Millisecond})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	o := &outage{srv: srv, cli: cli, ctl: ctl, rec: rec}
	o.cycle(t, "2")
	for i, step := range []func(*testing.T){o.wipe, o.stop, o.partition} {
		step(t)
		eventually(t, "view equals etcd after the outage", func() bool { return ctl.Ready() && rec.viewEquals(t, cli) })
		o.cycle(t, strconv.Itoa(3+i))
		o.cycle(t, strconv.Itoa(30+i))
	}
	if st := ctl.Status(); st.Resumes == 0 {
		t.Errorf("status %+v: no watch resumed after a restart or a partition", st)
	}
	rec.checkConsistent(t)
}

// TestWipeUnseenWhileCutOffRelists: etcd is wiped while the agent cannot
// reach it, and the reflector's sweep (and other writes) take the new
// etcd's revision past the one the agent's watches stopped at; its member
// name and peer address give it the same cluster ID. Back in touch, the
// agent must not resume its watches on that other history (it would keep
// its node record, which the new etcd does not hold, and never see its
// release, nor the changes written below its revision): it lists.
func TestWipeUnseenWhileCutOffRelists(t *testing.T) {
	srv := etcdtest.StartProxied(t)
	cli := srv.Client() // the reflector's, never cut off
	objs := everyResource("1")
	for _, obj := range objs {
		put(t, cli, obj)
	}
	markSynced(t, cli)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: srv.ProxyClient(), Handlers: []Handler{rec}, RequireSynced: true, PodNode: "n1",
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	// A first wipe, seen: its etcd now has the cluster ID that every later
	// one will have (the first member's ID was derived from a peer address
	// with port 0).
	// The agent is cut off during this wipe, so that it surely sees its
	// connection come back and settles (resumes or lists) before the count
	// below is taken: a reconnection handled after it was counted against
	// the wipe that matters (one run in five with a fast member stop).
	o := &outage{srv: srv, cli: cli, ctl: ctl, rec: rec}
	before := ctl.Status()
	srv.SetReachable(false)
	eventually(t, "disconnection noticed", func() bool { return !ctl.Status().EtcdConnected })
	o.wipe(t)
	srv.SetReachable(true)
	eventually(t, "view equals the first wiped etcd", func() bool {
		st := ctl.Status()
		return st.Resumes+st.Relists > before.Resumes+before.Relists && ctl.Ready() && rec.viewEquals(t, cli)
	})
	// That wipe may be resumed over: the same writes give the new etcd the
	// very history the agent read (its newest put at the same revision),
	// which is indistinguishable from a restart. Only the wipe below counts.
	rev, resumed := ctl.Status().WatchRevision, ctl.Status().Resumes

	srv.SetReachable(false)
	eventually(t, "disconnection noticed", func() bool { return !ctl.Status().EtcdConnected })
	srv.Wipe()
	// The sweep restores the API's objects, a service changed meanwhile;
	// the agent's record is not there until it claims it again.
	for _, obj := range everyResource("2") {
		if obj.Key().Resource != kubestate.ResVppNode {
			put(t, cli, obj)
		}
	}
	markSynced(t, cli)
	for r := int64(0); r <= rev; r++ { // other writes, e.g. the reflector's leader key
		putRaw(t, cli, "/contiv/v1/ksr/leader", "ksr-1")
	}
	srv.SetReachable(true)

	eventually(t, "view equals the wiped etcd", func() bool { return rec.viewEquals(t, cli) })
	if st := ctl.Status(); st.Resumes != resumed {
		t.Errorf("status %+v: resumed the watches on a wiped etcd (resumes before %d)", st, resumed)
	}
	o.cycle(t, "3")
	rec.checkConsistent(t)
}
