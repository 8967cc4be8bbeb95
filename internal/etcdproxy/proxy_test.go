package etcdproxy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// TestWatchResumesAcrossProxyAndEtcdRestarts: the agent's watcher, through
// a proxy, takes in the changes written while its proxy was down (resuming
// each watch from its revision once the proxy is back) and while etcd
// restarted behind the proxy, without listing etcd again.
func TestWatchResumesAcrossProxyAndEtcdRestarts(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.Client()
	put(t, direct, ns("a", "1"))
	if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, srv, "127.0.0.1:0")
	addr := p.Addr()
	rec := newRecorder()
	ctl := runController(t, clientOf(t, p.Endpoint()), rec)
	eventually(t, "v1 listed", func() bool { return rec.holds(ns("a", "1")) })

	p.Close()
	eventually(t, "the proxy's end noticed", func() bool { return !ctl.Status().EtcdConnected })
	put(t, direct, ns("a", "2"))
	put(t, direct, ns("b", "2"))
	startProxy(t, srv, addr)
	eventually(t, "v2 watched after the proxy restart", func() bool { return rec.holds(ns("a", "2")) && rec.holds(ns("b", "2")) })
	// Resumed from its revision, not listed again (Status.Resumes, or the
	// stream re-opened before the connection was seen to drop).
	if st := ctl.Status(); st.Relists != 0 || rec.count(controller.ResyncRelist) != 0 {
		t.Errorf("status %+v: listed again after the proxy restart", st)
	}

	srv.Restart()
	eventually(t, "a write to the restarted etcd", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		b, _ := kubestate.Encode(ns("a", "3"))
		_, err := direct.Put(ctx, ns("a", "3").Key().String(), string(b))
		return err == nil
	})
	eventually(t, "v3 watched after the etcd restart", func() bool { return rec.holds(ns("a", "3")) })
	if st := ctl.Status(); st.Relists != 0 || rec.count(controller.ResyncRelist) != 0 {
		t.Errorf("status %+v, %d re-list resyncs: etcd was listed again", st, rec.count(controller.ResyncRelist))
	}
}

// TestCompactionWhileProxyDownRelists: a watch whose revision was compacted
// away while the proxy was down cannot resume: the watcher lists again and
// takes in what was written meanwhile.
func TestCompactionWhileProxyDownRelists(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.Client()
	put(t, direct, ns("a", "1"))
	if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, srv, "127.0.0.1:0")
	addr := p.Addr()
	rec := newRecorder()
	ctl := runController(t, clientOf(t, p.Endpoint()), rec)
	eventually(t, "v1 listed", func() bool { return rec.holds(ns("a", "1")) })

	p.Close()
	eventually(t, "the proxy's end noticed", func() bool { return !ctl.Status().EtcdConnected })
	put(t, direct, ns("a", "2"))
	rev := put(t, direct, ns("b", "2"))
	if _, err := direct.Compact(ctxT(t), rev); err != nil {
		t.Fatal(err)
	}
	startProxy(t, srv, addr)
	eventually(t, "re-listed after the compaction", func() bool {
		return rec.holds(ns("a", "2")) && rec.holds(ns("b", "2")) && ctl.Status().Relists == 1
	})
}

// TestPagedListingAtRevision: a listing of more keys than one page through
// the proxy, the agent's own (the controller's startup listing), holds every
// key; pages read at the first page's revision do not see later writes,
// however the proxy caches; and a linearizable read (the agent makes no
// other) sees a write made behind the proxy's back.
func TestPagedListingAtRevision(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.Client()
	const n = 2500 // two and a half pages of the watcher's 1000
	ops := make([]clientv3.Op, 0, 100)
	for i := range n {
		o := ns(fmt.Sprintf("ns-%04d", i), "1")
		b, err := kubestate.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(o.Key().String(), string(b)))
		if len(ops) == cap(ops) || i == n-1 {
			if _, err := direct.Txn(ctxT(t)).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, srv, "127.0.0.1:0")
	cli := clientOf(t, p.Endpoint())

	prefix := kubestate.ResNamespace.KeyPrefix()
	end := clientv3.GetPrefixRangeEnd(prefix)
	first, err := cli.Get(ctxT(t), prefix, clientv3.WithRange(end), clientv3.WithLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	rev := first.Header.Revision
	last := ns("ns-2499", "1")
	put(t, direct, ns("ns-2499", "2"))
	if _, err := direct.Delete(ctxT(t), ns("ns-2000", "1").Key().String()); err != nil {
		t.Fatal(err)
	}
	got, from := len(first.Kvs), string(first.Kvs[len(first.Kvs)-1].Key)+"\x00"
	var seenLast string
	for from != "" {
		resp, err := cli.Get(ctxT(t), from, clientv3.WithRange(end), clientv3.WithLimit(1000), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		got += len(resp.Kvs)
		for _, kv := range resp.Kvs {
			if string(kv.Key) == last.Key().String() {
				seenLast = string(kv.Value)
			}
		}
		from = ""
		if resp.More {
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	want, _ := kubestate.Encode(last)
	if got != n || seenLast != string(want) {
		t.Errorf("listing at revision %d: %d keys (want %d), last %q (want %q)", rev, got, n, seenLast, want)
	}
	// A linearizable read after a write that did not pass the proxy.
	put(t, direct, ns("ns-0001", "3"))
	resp, err := cli.Get(ctxT(t), ns("ns-0001", "").Key().String())
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := kubestate.Encode(ns("ns-0001", "3")); len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != string(want) {
		t.Errorf("linearizable read through the proxy: %v, want the value written behind it", resp.Kvs)
	}

	// The agent's startup listing, page by page through the proxy.
	rec := newRecorder()
	runController(t, cli, rec)
	eventually(t, "every namespace listed", func() bool {
		return rec.holds(ns("ns-0000", "1")) && rec.holds(ns("ns-0001", "3")) && rec.holds(ns("ns-2499", "2")) && rec.holds(ns("ns-1999", "1"))
	})
	rec.mu.Lock()
	listed := len(rec.objs)
	rec.mu.Unlock()
	if listed != n-1 { // ns-2000 deleted
		t.Errorf("the agent listed %d namespaces, want %d", listed, n-1)
	}
}

// TestProgressNotificationsPassThrough: a watch asking for progress
// notifications (as the agent's watcher does) receives etcd's periodic
// ones through the proxy, at a revision past a write to keys it does not
// watch. etcd here notifies every 100ms (its default is 10 minutes), the
// only setting etcdtest does not offer.
func TestProgressNotificationsPassThrough(t *testing.T) {
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "fatal"
	cfg.TickMs, cfg.ElectionMs = 10, 50
	cfg.WatchProgressNotifyInterval = 100 * time.Millisecond
	for _, u := range []*[]url.URL{&cfg.ListenClientUrls, &cfg.AdvertiseClientUrls, &cfg.ListenPeerUrls, &cfg.AdvertisePeerUrls} {
		*u = []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	}
	cfg.InitialCluster = cfg.Name + "=http://127.0.0.1:0"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		<-e.Server.StopNotify()
	})
	<-e.Server.ReadyNotify()
	direct := clientOf(t, "http://"+e.Clients[0].Addr().String())
	p, err := Start(context.Background(), direct, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cli := clientOf(t, p.Endpoint())

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	wch := cli.Watch(ctx, kubestate.ResNamespace.KeyPrefix(), clientv3.WithPrefix(), clientv3.WithProgressNotify())
	resp, err := direct.Put(ctxT(t), "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	for r := range wch {
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if r.IsProgressNotify() && r.Header.Revision >= resp.Header.Revision {
			return
		}
	}
	t.Fatal("the watch ended without a progress notification")
}

var _ = errors.Is
var _ = rpctypes.ErrCompacted
