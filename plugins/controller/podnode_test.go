package controller

import (
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"contiv.dev/vpp/kubestate"
)

func podOn(node, name string) *kubestate.Pod {
	return &kubestate.Pod{Namespace: "shop", Name: name, NodeName: node, IPs: []string{"10.1.1.2"}}
}

// TestPodNodeWatchesOnlyItsNode: an agent with PodNode set lists, watches
// and decodes its own node's pods only, however many other nodes' pods
// change (a pod scheduled onto another node included); without PodNode
// every pod is decoded.
func TestPodNodeWatchesOnlyItsNode(t *testing.T) {
	for _, tc := range []struct {
		node string
		// decodes at the listing and after the changes
		listed, total uint64
	}{
		{node: "n1", listed: 2, total: 4},
		{node: "", listed: 6, total: 11},
	} {
		t.Run(fmt.Sprintf("PodNode=%q", tc.node), func(t *testing.T) {
			_, cli := testEtcd(t)
			putRaw(t, cli, kubestate.LayoutKey, kubestate.LayoutVersion)
			pending := podOn("", "pending")
			for _, p := range []*kubestate.Pod{podOn("n1", "a"), podOn("n1", "b"), podOn("n2", "c"), podOn("n2", "d"), podOn("n3", "e"), pending} {
				put(t, cli, p)
			}
			rec := newRecorder("rec", nil)
			ctl := New(Params{Client: cli, Handlers: []Handler{rec}, PodNode: tc.node})
			start(t, ctl)
			eventually(t, "ready", ctl.Ready)
			if st := ctl.Status(); st.Decoded != tc.listed || st.Layout != kubestate.LayoutVersion {
				t.Errorf("after the listing: decoded %d, layout %q; want %d, %q", st.Decoded, st.Layout, tc.listed, kubestate.LayoutVersion)
			}

			// Other nodes' pods change; the pending pod is scheduled onto
			// n2 (a move); then one pod of n1 changes and one is deleted.
			put(t, cli, podOn("n2", "f"))
			c := podOn("n2", "c")
			c.IPs = []string{"10.1.2.9"}
			put(t, cli, c)
			del(t, cli, podOn("n3", "e").Key())
			w := kubestate.NewWriter(cli, nil)
			if err := w.Apply(ctxT(t), []kubestate.Op{kubestate.MoveOp(pending.Key(), podOn("n2", "pending"))}); err != nil {
				t.Fatal(err)
			}
			a := podOn("n1", "a")
			a.IPs = []string{"10.1.1.9"}
			put(t, cli, a)
			put(t, cli, podOn("n1", "g"))
			del(t, cli, podOn("n1", "b").Key())
			// The last change, b's delete, is of n1: once it is taken in,
			// every earlier change was delivered (or never was).
			eventually(t, "b's delete taken in", func() bool {
				_, _, changes := rec.snapshot()
				return len(changes) > 0 && changes[len(changes)-1].Key == podOn("n1", "b").Key()
			})
			if got := ctl.Status().Decoded; got != tc.total {
				t.Errorf("decoded %d values, want %d", got, tc.total)
			}
			view, _, changes := rec.snapshot()
			if tc.node == "" {
				return
			}
			for k := range view {
				if k.Node != tc.node {
					t.Errorf("view holds %s of another node", k)
				}
			}
			for _, ch := range changes {
				if ch.Key.Node != tc.node {
					t.Errorf("change of %s of another node delivered", ch.Key)
				}
			}
			want := map[kubestate.Key]kubestate.Object{a.Key(): a, podOn("n1", "g").Key(): podOn("n1", "g")}
			if !reflect.DeepEqual(view, want) {
				t.Errorf("view %v, want %v", view, want)
			}
			rec.checkConsistent(t)
		})
	}
}

// TestLayoutMismatchIsLogged: without RequireSynced, an etcd without the
// layout marker (none swept it yet: a fresh install) is taken in and said
// at info level, once; one in another layout is logged at error level. Its
// layout-1 pod keys are not seen by an agent watching its node.
func TestLayoutMismatchIsLogged(t *testing.T) {
	for _, tc := range []struct {
		name, layout string
		level        slog.Level
		msg          string
	}{
		{"absent", "", slog.LevelInfo, "no layout marker yet"},
		{"another", "3", slog.LevelError, "not in this agent's layout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cli := testEtcd(t)
			putRaw(t, cli, kubestate.ResPod.KeyPrefix()+"shop/old", `{"namespace":"shop","name":"old","nodeName":"n1"}`)
			put(t, cli, ns("a", "1"))
			if tc.layout != "" {
				putRaw(t, cli, kubestate.LayoutKey, tc.layout)
			}
			sink := &logSink{}
			rec := newRecorder("rec", nil)
			ctl := New(Params{Logger: slog.New(sink), Client: cli, Handlers: []Handler{rec}, PodNode: "n1"})
			start(t, ctl)
			eventually(t, "ready", ctl.Ready)
			if n := sink.count(tc.level, tc.msg, "want="+kubestate.LayoutVersion); n != 1 {
				t.Errorf("%d logs at %v tell the layout; want 1", n, tc.level)
			}
			if tc.level != slog.LevelError && sink.has(slog.LevelError) {
				t.Error("an etcd no reflector swept yet is logged as an error")
			}
			if st := ctl.Status(); st.Layout != tc.layout || st.Decoded != 1 {
				t.Errorf("status: layout %q, decoded %d; want %q and 1 (the namespace)", st.Layout, st.Decoded, tc.layout)
			}
			if view, _, _ := rec.snapshot(); len(view) != 1 {
				t.Errorf("view %v: want the namespace only", view)
			}
			// Said once, not at every listing.
			ctl.RequestRelist()
			eventually(t, "relisted", func() bool { return rec.sawResync(ResyncRelist) })
			if n := sink.count(tc.level, tc.msg); n != 1 {
				t.Errorf("%d logs at %v tell the layout after a relist; want 1", n, tc.level)
			}
		})
	}
}
