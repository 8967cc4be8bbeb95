package controller

import (
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/kubestate"
)

func TestUndecodableValuesAreLoggedCountedAndSkipped(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	bad := map[string]string{
		nsKey("garbage").String():              "{not json",
		nsKey("liar").String():                 `{"name":"other"}`,
		kubestate.ResPod.KeyPrefix() + "no-ns": `{"name":"no-ns"}`,
		nsKey("big").String():                  `{"name":"big","labels":{"x":"` + strings.Repeat("x", kubestate.MaxValueSize) + `"}}`,
	}
	for k, v := range bad {
		putRaw(t, cli, k, v)
	}
	putRaw(t, cli, kubestate.Prefix+"ipam/not-watched", "whatever") // not ours: ignored
	sink := &logSink{}
	rec := newRecorder("rec", nil)
	ctl := New(Params{Logger: slog.New(sink), Client: cli, Handlers: []Handler{rec}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	view, _, _ := rec.snapshot()
	if want := map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "1")}; !reflect.DeepEqual(view, want) {
		t.Errorf("view %v, want %v", view, want)
	}
	if n := ctl.Status().DecodeErrors; n != uint64(len(bad)) {
		t.Errorf("decode errors %d, want %d", n, len(bad))
	}
	for k := range bad {
		if !sink.has(slog.LevelError, "key="+k) {
			t.Errorf("no error log names %s", k)
		}
	}

	// While watching: an undecodable update keeps the last good value; the
	// changes around it go on.
	put(t, cli, ns("b", "1"))
	putRaw(t, cli, nsKey("a").String(), "{broken")
	put(t, cli, ns("c", "1"))
	eventually(t, "c taken in", func() bool { return rec.holds(nsKey("c"), ns("c", "1")) })
	want := map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "1"), nsKey("b"): ns("b", "1"), nsKey("c"): ns("c", "1")}
	if view, _, _ := rec.snapshot(); !reflect.DeepEqual(view, want) {
		t.Errorf("view %v, want %v", view, want)
	}
	if n := ctl.Status().DecodeErrors; n != uint64(len(bad))+1 {
		t.Errorf("decode errors %d, want %d", n, len(bad)+1)
	}

	// A fresh listing keeps it too.
	ctl.RequestRelist()
	eventually(t, "relist", func() bool { return rec.sawResync(ResyncRelist) })
	if view, _, _ := rec.snapshot(); !reflect.DeepEqual(view, want) {
		t.Errorf("after relist view %v, want %v", view, want)
	}
	// Once repaired, the value is taken in, with the last good one as Prev.
	put(t, cli, ns("a", "2"))
	eventually(t, "a repaired", func() bool { return rec.holds(nsKey("a"), ns("a", "2")) })
	rec.checkConsistent(t)
}

func TestEtcdRestartResumesAndLosesNothing(t *testing.T) {
	srv, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	put(t, cli, ns("b", "1"))
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec},
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		RelistJitter:   300 * time.Millisecond})
	// Every revision the watcher queues, to tell that a resumed watch
	// starts after the last one delivered, not at it.
	var mu sync.Mutex
	queued := map[int64]int{}
	ctl.hooks.Queued = func(rev int64) {
		mu.Lock()
		queued[rev]++
		mu.Unlock()
	}
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	put(t, cli, ns("e", "1")) // delivered before the restart: not again after it
	eventually(t, "e taken in", func() bool { return rec.holds(nsKey("e"), ns("e", "1")) })

	// Changes just before the restart, maybe not yet delivered by the watch.
	put(t, cli, ns("c", "1"))
	del(t, cli, nsKey("a"))
	srv.Restart()
	// And just after it, while the client reconnects.
	put(t, cli, ns("b", "2"))
	put(t, cli, ns("d", "1"))

	// etcd kept its history: the watches resume, nothing is listed again
	// (thousands of agents re-listing at once is what an outage must not
	// cause).
	eventually(t, "watch resumed after the restart", func() bool { return ctl.Status().Resumes > 0 })
	eventually(t, "view equals etcd", func() bool { return rec.viewEquals(t, cli) })
	want := map[kubestate.Key]kubestate.Object{nsKey("b"): ns("b", "2"), nsKey("c"): ns("c", "1"), nsKey("d"): ns("d", "1"), nsKey("e"): ns("e", "1")}
	if view, _, _ := rec.snapshot(); !reflect.DeepEqual(view, want) {
		t.Errorf("view %v, want %v", view, want)
	}
	mu.Lock()
	for rev, n := range queued {
		if n > 1 {
			t.Errorf("revision %d queued %d times: a resumed watch delivered it again", rev, n)
		}
	}
	mu.Unlock()
	if st := ctl.Status(); st.Relists != 0 || rec.sawResync(ResyncRelist) {
		t.Errorf("status %+v: re-listed an etcd that kept its history", st)
	}
	// Every change was delivered once, on top of what the handler held.
	rec.checkConsistent(t)
}

func TestEtcdWipedRelists(t *testing.T) {
	srv, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	put(t, cli, ns("b", "1"))
	put(t, cli, ns("c", "1"))
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec},
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	// etcd comes back empty (data lost, or restored from an old backup):
	// its history is not the one the watch followed; only a listing is
	// right. A watch resumed on the wiped etcd would come before the
	// relist that repairs it; one resumed after the relist (the restarted
	// member's connection flapping on a loaded machine) follows the new
	// history and is right.
	before := ctl.Status().Resumes
	srv.Wipe()
	put(t, cli, ns("d", "1"))
	var atRelist uint64
	eventually(t, "relist after the wipe", func() bool {
		atRelist = ctl.Status().Resumes
		return rec.sawResync(ResyncRelist)
	})
	eventually(t, "view equals etcd", func() bool { return rec.viewEquals(t, cli) })
	if atRelist != before {
		t.Errorf("%d watches resumed between the wipe and the relist: resumed on a wiped etcd", atRelist-before)
	}
	rec.checkConsistent(t)
}

func TestCompactedWatchRelists(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	put(t, cli, ns("b", "1"))
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec},
		HealingBackoff: Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}})
	// Hold the watcher between its startup listing and its watch, as a slow
	// watcher would be, while etcd moves on and compacts.
	listed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ctl.hooks.AfterList = func() {
		once.Do(func() {
			close(listed)
			<-release
		})
	}
	start(t, ctl)
	<-listed
	put(t, cli, ns("a", "2"))
	del(t, cli, nsKey("b"))
	rev := put(t, cli, ns("c", "1"))
	if _, err := cli.Compact(ctxT(t), rev); err != nil {
		t.Fatal(err)
	}
	close(release)

	eventually(t, "relist after compaction", func() bool { return rec.sawResync(ResyncRelist) })
	eventually(t, "view equals etcd", func() bool { return rec.viewEquals(t, cli) })
	want := map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "2"), nsKey("c"): ns("c", "1")}
	if view, _, _ := rec.snapshot(); !reflect.DeepEqual(view, want) {
		t.Errorf("view %v, want %v", view, want)
	}
	// And the new watch works.
	put(t, cli, ns("d", "1"))
	eventually(t, "d after the relist", func() bool { return rec.holds(nsKey("d"), ns("d", "1")) })
	rec.checkConsistent(t)
}

func TestEtcdDownKeepsStateAndCatchesUp(t *testing.T) {
	srv, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	rec := newRecorder("rec", nil)
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{app},
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	applies := len(app.calls())

	srv.Stop()
	eventually(t, "disconnection noticed", func() bool { return !ctl.Status().EtcdConnected })
	// While etcd is down nothing reaches the handlers or the data plane.
	if st := ctl.Status(); st.Errors != 0 || len(app.calls()) != applies || !ctl.Ready() {
		t.Errorf("etcd down: status %+v, %d applies", st, len(app.calls())-applies)
	}
	if !rec.holds(nsKey("a"), ns("a", "1")) {
		t.Error("the handler's view changed while etcd was down")
	}
	srv.Restart() // same data, same address
	put(t, cli, ns("a", "2"))
	eventually(t, "a after etcd came back", func() bool { return rec.holds(nsKey("a"), ns("a", "2")) })
	if !ctl.Ready() {
		t.Error("not ready after etcd came back")
	}
	rec.checkConsistent(t)
}

func TestWipedEtcdRelists(t *testing.T) {
	srv, cli := testEtcd(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		put(t, cli, ns(n, "1"))
	}
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec},
		HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	// etcd comes back empty (lost or restored from an old backup): its
	// revision goes back, so a watch resumed at the old revision would miss
	// everything; the relist on reconnection sees the truth.
	srv.Wipe()
	put(t, cli, ns("x", "1"))
	eventually(t, "view equals the wiped etcd", func() bool { return rec.viewEquals(t, cli) })
	put(t, cli, ns("y", "1"))
	eventually(t, "y watched", func() bool { return rec.holds(nsKey("y"), ns("y", "1")) })
	rec.checkConsistent(t)
}
