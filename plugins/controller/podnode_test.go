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

// TestLayoutMismatchIsLogged: an etcd without the layout marker (an older
// reflector's, or none swept it yet) is not refused but logged at error
// level; its layout-1 pod keys are not seen by an agent watching its node.
func TestLayoutMismatchIsLogged(t *testing.T) {
	_, cli := testEtcd(t)
	putRaw(t, cli, kubestate.ResPod.KeyPrefix()+"shop/old", `{"namespace":"shop","name":"old","nodeName":"n1"}`)
	put(t, cli, ns("a", "1"))
	sink := &logSink{}
	rec := newRecorder("rec", nil)
	ctl := New(Params{Logger: slog.New(sink), Client: cli, Handlers: []Handler{rec}, PodNode: "n1"})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	if !sink.has(slog.LevelError, "not in this agent's layout", "want="+kubestate.LayoutVersion) {
		t.Error("no error log tells the layout is not this agent's")
	}
	if st := ctl.Status(); st.Layout != "" || st.Decoded != 1 {
		t.Errorf("status: layout %q, decoded %d; want none and 1 (the namespace)", st.Layout, st.Decoded)
	}
	if view, _, _ := rec.snapshot(); len(view) != 1 {
		t.Errorf("view %v: want the namespace only", view)
	}
}
