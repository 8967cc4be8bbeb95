package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/kubestate"
)

// TestProgressNotificationsMoveTheResumePoint: a watch whose keys were
// not written lately still resumes after an etcd restart when etcd's
// history before the newest change was compacted meanwhile, because its
// progress notifications moved its revision on. The node watch's last
// event is older than the compaction; without the notifications taken in
// it would resume from a compacted revision and the watcher list again.
func TestProgressNotificationsMoveTheResumePoint(t *testing.T) {
	v3rpc.SetProgressReportInterval(100 * time.Millisecond) // read by each stream as it opens
	t.Cleanup(func() { v3rpc.SetProgressReportInterval(10 * time.Minute) })
	srv, cli := testEtcd(t)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec},
		Resources:      []kubestate.Resource{kubestate.ResNamespace, kubestate.ResNode},
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	var mu sync.Mutex
	progress := map[string]int64{}
	ctl.hooks.Progressed = func(prefix string, rev int64) {
		mu.Lock()
		progress[prefix] = max(progress[prefix], rev)
		mu.Unlock()
	}
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	put(t, cli, &kubestate.Node{Name: "n1"})
	putRaw(t, cli, "/elsewhere", "x") // the node watch's next revision, unless moved on
	rev := put(t, cli, ns("a", "1"))  // the newest put read: kept by the compaction
	eventually(t, "a taken in", func() bool { return rec.holds(nsKey("a"), ns("a", "1")) })
	nodes := kubestate.ResNode.KeyPrefix()
	eventually(t, "the node watch's progress past a", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return progress[nodes] >= rev
	})
	if _, err := cli.Compact(ctxT(t), rev); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	put(t, cli, ns("b", "1"))
	eventually(t, "b after the restart", func() bool { return rec.holds(nsKey("b"), ns("b", "1")) })
	if st := ctl.Status(); st.Relists != 0 || st.Resumes == 0 {
		t.Errorf("status %+v: want the watches resumed, not listed again", st)
	}
	rec.checkConsistent(t)
}

// TestWatchCarriesTheClientsAuth: on an etcd with authentication on, the
// watch stream is opened with the client's credentials (its token): a
// user allowed to read the cluster state lists and watches it.
func TestWatchCarriesTheClientsAuth(t *testing.T) {
	srv, root := testEtcd(t)
	ctx := ctxT(t)
	steps := []func() error{
		func() error { _, err := root.RoleAdd(ctx, "root"); return err },
		func() error { _, err := root.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.RoleAdd(ctx, "reader"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "reader", kubestate.Prefix,
				clientv3.GetPrefixRangeEnd(kubestate.Prefix), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "agent", "agentpw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "agent", "reader"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	admin := authClient(t, srv.Endpoint(), "root", "rootpw")
	put(t, admin, ns("a", "1"))
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: authClient(t, srv.Endpoint(), "agent", "agentpw"), Handlers: []Handler{rec}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	put(t, admin, ns("b", "1"))
	eventually(t, "b watched", func() bool { return rec.holds(nsKey("b"), ns("b", "1")) })
	rec.checkConsistent(t)
}

func authClient(t *testing.T, endpoint, user, password string) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{
		Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Username: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
