package etcdproxy

import (
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// TestWipeBehindProxyRelists: etcd is wiped (or restored from an older
// backup) behind the proxy, and the reflector's sweep writes the API's
// objects again. The agent's connection to its proxy never drops, so it
// never runs the history check a reconnection triggers; the proxy's own
// watch goes on at its revision on the other history. The agent must
// still notice and list: its view ends up equal to the new etcd, with
// what the sweep wrote below its old revision and without what the new
// etcd does not hold. Both cases: the new etcd's revision below the one
// the agent watched from, and past it. (Without Params.HistoryCheck the
// view stays the old etcd's for ever.)
func TestWipeBehindProxyRelists(t *testing.T) {
	for _, past := range []bool{false, true} {
		name := "revision below"
		if past {
			name = "revision past"
		}
		t.Run(name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			direct := srv.Client()
			for i := range 10 {
				put(t, direct, ns(nodeName(i), "1"))
			}
			if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
				t.Fatal(err)
			}
			p := startProxy(t, srv, "127.0.0.1:0")
			rec := newRecorder()
			ctl := runController(t, clientOf(t, p.Endpoint()), rec)
			eventually(t, "v1 listed", func() bool { return rec.holds(ns(nodeName(9), "1")) })
			old := ctl.Status().WatchRevision

			srv.Wipe()
			put(t, direct, ns(nodeName(0), "2")) // the sweep: only a left
			if _, err := kubestate.MarkSynced(ctxT(t), direct, "test", 0); err != nil {
				t.Fatal(err)
			}
			if past {
				for r := put(t, direct, ns("other", "x")); r <= old+1; {
					r = put(t, direct, ns("other", "x"))
				}
			}
			eventually(t, "the view of the wiped etcd", func() bool {
				return rec.holds(ns(nodeName(0), "2")) && !rec.has(ns(nodeName(5), "1").Key())
			})
			if st := ctl.Status(); st.HistoryLost == 0 || st.Relists == 0 {
				t.Errorf("status %+v: want the lost history counted and etcd listed again", st)
			}
		})
	}
}
