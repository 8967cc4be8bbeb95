package controller

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"unsafe"

	"contiv.dev/vpp/kubestate"
)

// A listing's resync hands handlers its objects as etcd listed them, and
// the snapshot's keys hold the objects' own strings.
func TestResyncHandsTheListingInEtcdOrder(t *testing.T) {
	_, cli := testEtcd(t)
	for _, name := range []string{"b", "a", "c"} {
		put(t, cli, ns(name, "1"))
		put(t, cli, &kubestate.Service{Namespace: name, Name: "svc"})
		put(t, cli, &kubestate.EndpointSlice{Namespace: name, Name: "svc-1", ServiceName: "svc"})
	}
	put(t, cli, &kubestate.Service{Namespace: "a", Name: "other"})
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	rec.mu.Lock()
	view, listed := rec.view, rec.listed[0]
	rec.mu.Unlock()
	if len(listed) != len(view) || len(view) != 10 {
		t.Fatalf("listed %d objects, the snapshot holds %d; want 10 each", len(listed), len(view))
	}
	order := func(k kubestate.Key) int { return slices.Index(kubestate.Resources, k.Resource) }
	for i, o := range listed {
		k := o.Key()
		if view[k] != o {
			t.Errorf("listed %s is not the snapshot's object", k)
		}
		if i > 0 {
			p := listed[i-1].Key()
			if c := cmp.Or(cmp.Compare(order(p), order(k)), cmp.Compare(p.String(), k.String())); c >= 0 {
				t.Errorf("listed %s after %s: want etcd's order", k, p)
			}
		}
	}
	for k, o := range view {
		if unsafe.StringData(k.Name) != unsafe.StringData(o.Key().Name) {
			t.Errorf("the snapshot's key %s holds a name of its own, not its object's", k)
		}
	}
}

// Listed is nil when the state handed over is not the listing as listed.
func TestResyncListedOnlyAsListed(t *testing.T) {
	a, b := ns("a", "1"), ns("b", "1")
	listing := func(objs ...kubestate.Object) *listing {
		l := newListing(5, len(objs))
		for _, o := range objs {
			l.put(o.Key(), o)
			l.listed = append(l.listed, o)
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		push   func(c *Controller)
		listed bool
	}{
		{"as listed", func(c *Controller) { c.q.pushResync(ResyncRelist, listing(a, b)) }, true},
		{"a stale change after it", func(c *Controller) {
			c.q.pushResync(ResyncRelist, listing(a, b))
			c.q.pushChanges([]change{{key: a.Key(), rev: 5, obj: ns("a", "2")}})
		}, true},
		{"a no-op change after it", func(c *Controller) {
			c.q.pushResync(ResyncRelist, listing(a, b))
			c.q.pushChanges([]change{{key: a.Key(), rev: 6, obj: ns("a", "1")}})
		}, true},
		{"a change applied after it", func(c *Controller) {
			c.q.pushResync(ResyncRelist, listing(a, b))
			c.q.pushChanges([]change{{key: a.Key(), rev: 6, obj: ns("a", "2")}})
		}, false},
		{"a value kept from before", func(c *Controller) {
			l := listing(b)
			l.bad[a.Key()] = true
			c.q.pushResync(ResyncRelist, l)
		}, false},
		{"from the cached view", func(c *Controller) { c.q.pushResync(ResyncHealing, nil) }, false},
		{"a pushed snapshot", func(c *Controller) {
			c.pushResync(&ResyncEvent{State: &Snapshot{Revision: 9, Objects: map[kubestate.Key]kubestate.Object{a.Key(): a}}})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder("rec", nil)
			c := New(Params{Handlers: []Handler{rec}})
			ctx := context.Background()
			c.q.pushResync(ResyncStartup, listing(a))
			c.step(ctx)
			tc.push(c)
			c.step(ctx)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.listed) != 2 {
				t.Fatalf("%d resyncs, want 2", len(rec.listed))
			}
			got := rec.listed[1]
			if tc.listed && !slices.Equal(got, []kubestate.Object{a, b}) || !tc.listed && got != nil {
				t.Errorf("Listed %v, want it (%v) only as listed", got, tc.listed)
			}
		})
	}
}
