package controller

import (
	"testing"
	"time"

	"contiv.dev/vpp/kubestate"
)

// TestAnUnfollowableWatchResponseRelists (issue 37, defect 1): a watch
// response the agent cannot follow, one it would get again at every resume
// from the same revision, does not stall the agent: after a bounded number
// of retries it lists etcd again, and a later change still arrives.
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
			if st := ctl.Status(); st.Relists == 0 || p.tampered.Load() == 0 {
				t.Errorf("status %+v, %d responses tampered: want a relist", st, p.tampered.Load())
			}
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
