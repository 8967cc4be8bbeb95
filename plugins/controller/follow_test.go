package controller

import (
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/kubestate"
)

// TestAnUnfollowableWatchResponseRelists (issue 37, defect 1): a watch
// response the agent cannot follow, one it would get again at every resume
// from the same revision, does not stall the agent: after a bounded number
// of retries it lists etcd again, and a later change still arrives. While
// it cannot follow etcd (here: the listing refused too), the controller is
// not ready and says why, and the failures are counted.
func TestAnUnfollowableWatchResponseRelists(t *testing.T) {
	for _, c := range []struct {
		name string
		mode tamperMode
	}{
		{"an event type neither PUT nor DELETE", tamperUnknownType},
		{"a response that does not decode", tamperUndecodable},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := testEtcd(t)
			p := startTamper(t, srv, nsKey("poison").String())
			p.setMode(c.mode)
			rec := newRecorder("rec", nil)
			ctl := New(Params{Client: p.client(t), Handlers: []Handler{rec},
				Resources:      []kubestate.Resource{kubestate.ResNamespace},
				HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
			start(t, ctl)
			eventually(t, "ready", ctl.Ready)

			put(t, cli, ns("poison", "1"))
			put(t, cli, ns("later", "1"))
			eventually(t, "a change after the unfollowable response", func() bool {
				return rec.holds(nsKey("later"), ns("later", "1"))
			})
			if st := ctl.Status(); st.Relists == 0 || st.WatchFailures == 0 || p.tampered.Load() == 0 {
				t.Errorf("status %+v, %d responses tampered: want failures counted and a relist", st, p.tampered.Load())
			}
			eventually(t, "ready again", ctl.Ready)

			// The same with etcd's listing out of reach: not ready, and why.
			p.blockRange.Store(true)
			failures := ctl.Status().WatchFailures
			put(t, cli, ns("poison", "2"))
			eventually(t, "not ready, with the reason", func() bool {
				st := ctl.Status()
				return !ctl.Ready() && !st.Ready && strings.HasPrefix(st.NotFollowing, "cannot follow etcd: ") &&
					ctl.NotFollowing() == st.NotFollowing && st.WatchFailures > failures
			})
			t.Logf("not following: %s", ctl.NotFollowing())
			p.blockRange.Store(false)
			eventually(t, "ready once etcd is listed", ctl.Ready)
			put(t, cli, ns("later", "2"))
			eventually(t, "a change after the relist", func() bool { return rec.holds(nsKey("later"), ns("later", "2")) })
			eventually(t, "view equals etcd", func() bool { return rec.viewEquals(t, cli) })
			rec.checkConsistent(t)
		})
	}
}

// TestWatchEventsDecodeAsProtobufReadsThem (issue 37, defect 2): a watch
// event is read as protobuf reads it: two kv fields merge (the key from
// the first, the value from the second), and an event type written wider
// than 32 bits is the int32 it truncates to (PUT). The change is taken in,
// without a relist.
func TestWatchEventsDecodeAsProtobufReadsThem(t *testing.T) {
	for _, c := range []struct {
		name string
		mode tamperMode
	}{
		{"repeated kv fields", tamperRepeatedKV},
		{"a wide event type", tamperWideType},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := testEtcd(t)
			p := startTamper(t, srv, nsKey("odd").String())
			p.setMode(c.mode)
			rec := newRecorder("rec", nil)
			ctl := New(Params{Client: p.client(t), Handlers: []Handler{rec},
				Resources:      []kubestate.Resource{kubestate.ResNamespace},
				HealingBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
			start(t, ctl)
			eventually(t, "ready", ctl.Ready)

			put(t, cli, ns("odd", "1"))
			eventually(t, "the oddly encoded change", func() bool { return rec.holds(nsKey("odd"), ns("odd", "1")) })
			if st := ctl.Status(); st.Relists != 0 || p.tampered.Load() == 0 {
				t.Errorf("status %+v, %d responses tampered: want the change watched, no relist", st, p.tampered.Load())
			}
			rec.checkConsistent(t)
		})
	}
}
