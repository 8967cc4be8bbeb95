package controller

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// markSynced writes the markers of a complete reflector output and returns
// the sync marker written.
func markSynced(t testing.TB, cli *clientv3.Client) kubestate.SyncMarker {
	t.Helper()
	if _, err := kubestate.MarkSynced(ctxT(t), cli, "test", 0); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctxT(t), kubestate.SyncedKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read %s: %v", kubestate.SyncedKey, err)
	}
	m, err := kubestate.ParseSyncMarker(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// olderMarker is a marker of the output before m's, in its lineage.
func olderMarker(m kubestate.SyncMarker) string {
	b, _ := json.Marshal(kubestate.SyncMarker{Identity: "old", Generation: m.Generation - 1, Lineage: m.Lineage})
	return string(b)
}

// removed lists the keys the handler was told were deleted.
func (r *recorder) removed() []kubestate.Key {
	_, _, changes := r.snapshot()
	var out []kubestate.Key
	for _, c := range changes {
		if c.New == nil {
			out = append(out, c.Key)
		}
	}
	return out
}

// TestIncompleteOutputIsHeld: with RequireSynced, an etcd that holds no
// complete reflector output (emptied, wiped, restored from an older backup)
// is not taken in: the handlers keep what they hold, nothing is removed,
// the controller is not ready and says why; once the reflector's sweep
// completes (the sync marker is written) it converges.
func TestIncompleteOutputIsHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lose   func(t *testing.T, srv interface{ Wipe() }, cli *clientv3.Client, gen kubestate.SyncMarker, ctl *Controller)
		reason string
	}{
		{"every key deleted", func(t *testing.T, _ interface{ Wipe() }, cli *clientv3.Client, _ kubestate.SyncMarker, _ *Controller) {
			if _, err := cli.Delete(ctxT(t), kubestate.Prefix, clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
		}, "no layout marker"},
		{"objects deleted before the marker", func(t *testing.T, _ interface{ Wipe() }, cli *clientv3.Client, _ kubestate.SyncMarker, _ *Controller) {
			// One transaction: the deletes of objects come before the
			// marker's in it, and the watches see them first.
			if _, err := cli.Txn(ctxT(t)).Then(
				clientv3.OpDelete(nsKey("a").String()), clientv3.OpDelete(kubestate.SyncedKey),
			).Commit(); err != nil {
				t.Fatal(err)
			}
		}, "no sync marker"},
		{"etcd wiped", func(_ *testing.T, srv interface{ Wipe() }, _ *clientv3.Client, _ kubestate.SyncMarker, _ *Controller) {
			srv.Wipe()
		}, "no layout marker"},
		{"restored from an older backup", func(t *testing.T, srv interface{ Wipe() }, cli *clientv3.Client, gen kubestate.SyncMarker, _ *Controller) {
			srv.Wipe()
			put(t, cli, ns("b", "1"))
			if _, err := cli.Txn(ctxT(t)).Then(
				clientv3.OpPut(kubestate.LayoutKey, kubestate.LayoutVersion), clientv3.OpPut(kubestate.SyncedKey, olderMarker(gen)),
			).Commit(); err != nil {
				t.Fatal(err)
			}
		}, "older than"},
		{"an older output put back", func(t *testing.T, _ interface{ Wipe() }, cli *clientv3.Client, gen kubestate.SyncMarker, _ *Controller) {
			putRaw(t, cli, kubestate.SyncedKey, olderMarker(gen))
			del(t, cli, nsKey("a"))
		}, "older than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := testEtcd(t)
			put(t, cli, ns("a", "1"))
			put(t, cli, ns("b", "1"))
			gen := markSynced(t, cli)
			rec := newRecorder("rec", nil)
			app := &applier{}
			ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{app}, RequireSynced: true,
				HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
			start(t, ctl)
			eventually(t, "ready", ctl.Ready)
			held := map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "1"), nsKey("b"): ns("b", "1")}

			tc.lose(t, srv, cli, gen, ctl)
			eventually(t, "held: "+tc.reason, func() bool { return strings.Contains(ctl.Held(), tc.reason) })
			if why := ctl.Status().Held; !strings.Contains(why, tc.reason) || ctl.Ready() || ctl.Status().Ready {
				t.Errorf("held %q (want it to name %q), ready %v", why, tc.reason, ctl.Ready())
			}
			// A change written meanwhile, without the marker, is not
			// taken in either.
			put(t, cli, ns("x", "1"))
			ctl.RequestRelist()
			time.Sleep(50 * time.Millisecond) // lets a wrong take-in happen; asserts no timing
			if view, _, _ := rec.snapshot(); !reflect.DeepEqual(view, held) {
				t.Errorf("while held the view changed: %v", view)
			}
			if r := rec.removed(); len(r) > 0 {
				t.Errorf("removed %v while etcd held no complete output", r)
			}

			// The reflector's sweep completes: b is gone in the API.
			del(t, cli, nsKey("x"))
			del(t, cli, nsKey("b"))
			put(t, cli, ns("a", "2"))
			put(t, cli, ns("c", "1"))
			markSynced(t, cli)
			eventually(t, "converged", func() bool { return ctl.Ready() && rec.viewEquals(t, cli) })
			if ctl.Held() != "" {
				t.Errorf("still held: %s", ctl.Held())
			}
			rec.checkConsistent(t)
		})
	}
}

// TestStartupWaitsForACompleteOutput: an agent started on an etcd no
// reflector swept yet is not ready, says why, and takes in nothing; the
// first sweep makes it ready.
func TestStartupWaitsForACompleteOutput(t *testing.T) {
	_, cli := testEtcd(t)
	put(t, cli, ns("a", "1"))
	rec := newRecorder("rec", nil)
	app := &applier{}
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, Appliers: []Applier{app}, RequireSynced: true})
	start(t, ctl)
	eventually(t, "held", func() bool { return ctl.Held() != "" })
	if ctl.Ready() || len(app.calls()) != 0 || rec.sawResync(ResyncStartup) {
		t.Errorf("took in an incomplete output: ready %v, %d applies", ctl.Ready(), len(app.calls()))
	}
	markSynced(t, cli)
	eventually(t, "ready", ctl.Ready)
	if !rec.viewEquals(t, cli) || ctl.Held() != "" {
		t.Errorf("after the sweep: held %q", ctl.Held())
	}
}
