package controller

import (
	"reflect"
	"testing"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

func nsChange(t *testing.T, rev int64, name, v string) change {
	t.Helper()
	if v == "" {
		return change{key: nsKey(name), rev: rev}
	}
	_, raw := nsStored(t, name, v)
	d, err := kubestate.Decode(nsKey(name), raw)
	if err != nil {
		t.Fatal(err)
	}
	return change{key: nsKey(name), rev: rev, obj: d}
}

// nsStored is a namespace and its stored value.
func nsStored(t *testing.T, name, v string) (*kubestate.Namespace, []byte) {
	t.Helper()
	o := ns(name, v)
	raw, err := kubestate.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	return o, raw
}

// listNs puts namespace name with value v in l.
func listNs(t *testing.T, l *listing, name, v string) {
	t.Helper()
	ch := nsChange(t, 0, name, v)
	l.put(ch.key, ch.obj)
}

func emptyListing(rev int64) *listing {
	return newListing(rev, 0)
}

func TestQueueCoalescesPerKeyAtFirstPosition(t *testing.T) {
	q := newQueue()
	q.pushChange(nsChange(t, 1, "a", "1"))
	q.pushEvent(&NodeUpdate{Name: "n"})
	q.pushChange(nsChange(t, 2, "b", "1"))
	q.pushChange(nsChange(t, 3, "a", "2"))
	q.pushChange(nsChange(t, 4, "a", ""))
	if got := q.depth(); got != 3 {
		t.Fatalf("depth %d, want 3", got)
	}
	b := q.drain()
	if b.resync != nil || len(b.entries) != 3 {
		t.Fatalf("batch %+v", b)
	}
	if e := b.entries[0].ch; !b.entries[0].isChange() || e.key != nsKey("a") || e.rev != 4 || e.obj != nil {
		t.Errorf("first entry %+v, want the delete of a at rev 4", e)
	}
	if _, ok := b.entries[1].ev.(*NodeUpdate); !ok {
		t.Errorf("second entry %+v, want the node update", b.entries[1])
	}
	if e := b.entries[2].ch; !b.entries[2].isChange() || e.key != nsKey("b") {
		t.Errorf("third entry %+v, want b", e)
	}
	if !q.drain().empty() || q.depth() != 0 {
		t.Error("queue not empty after drain")
	}
	// After a drain a key coalesces afresh.
	q.pushChange(nsChange(t, 5, "a", "3"))
	if b := q.drain(); len(b.entries) != 1 || b.entries[0].ch.rev != 5 {
		t.Errorf("after drain: %+v", b)
	}
}

func TestQueueListingSupersedesEarlierChanges(t *testing.T) {
	q := newQueue()
	q.pushChange(nsChange(t, 1, "a", "1"))
	q.pushEvent(&NodeUpdate{Name: "n"})
	q.pushResync(ResyncPeriodic, nil)
	l := emptyListing(7)
	q.pushResync(ResyncRelist, l)
	q.pushChange(nsChange(t, 8, "a", "2"))
	b := q.drain()
	if b.resync == nil || b.resync.list != l || b.resync.kind != ResyncRelist {
		t.Fatalf("resync %+v, want the relist", b.resync)
	}
	if len(b.entries) != 2 {
		t.Fatalf("entries %+v, want the node update and the change after the listing", b.entries)
	}
	if _, ok := b.entries[0].ev.(*NodeUpdate); !ok {
		t.Errorf("entry 0: %+v", b.entries[0])
	}
	if e := b.entries[1].ch; !b.entries[1].isChange() || e.rev != 8 {
		t.Errorf("entry 1: %+v", b.entries[1])
	}
}

func TestQueueResyncsMerge(t *testing.T) {
	q := newQueue()
	q.pushResync(ResyncPeriodic, nil)
	if q.hasListing() {
		t.Fatal("a cache resync is no listing")
	}
	q.pushChange(nsChange(t, 1, "a", "1"))
	first := emptyListing(5)
	q.pushResync(ResyncStartup, first)
	second := emptyListing(9)
	q.pushResync(ResyncRelist, second)
	q.pushChange(nsChange(t, 10, "a", "2"))
	q.pushResync(ResyncHealing, nil) // keeps the change: the view takes it in
	if !q.hasListing() || q.depth() != 2 {
		t.Fatalf("hasListing %t depth %d", q.hasListing(), q.depth())
	}
	b := q.drain()
	if b.resync.kind != ResyncStartup || b.resync.list != second {
		t.Errorf("merged resync %v %p, want startup with the newest listing", b.resync.kind, b.resync.list)
	}
	if len(b.entries) != 1 || b.entries[0].ch.rev != 10 {
		t.Errorf("entries %+v", b.entries)
	}
}

func TestViewPrevNoOpsAndStale(t *testing.T) {
	v := newView()
	l := emptyListing(10)
	listNs(t, l, "a", "1")
	v.replace(l)

	if _, out := v.apply(ptr(nsChange(t, 9, "a", "2"))); out != stale {
		t.Errorf("change below the listing: %v, want stale", out)
	}
	if _, out := v.apply(ptr(nsChange(t, 11, "a", "1"))); out != noop {
		t.Errorf("same bytes: %v, want noop", out)
	}
	if _, out := v.apply(ptr(nsChange(t, 11, "gone", ""))); out != noop {
		t.Errorf("delete of an absent key: %v, want noop", out)
	}
	ev, out := v.apply(ptr(nsChange(t, 12, "a", "2")))
	if out != applied || !reflect.DeepEqual(ev.Prev, ns("a", "1")) || !reflect.DeepEqual(ev.New, ns("a", "2")) || ev.Revision != 12 {
		t.Fatalf("update: %v %+v", out, ev)
	}
	// Two keys written in one transaction share a revision: both apply.
	if _, out := v.apply(ptr(nsChange(t, 13, "b", "1"))); out != applied {
		t.Errorf("b: %v", out)
	}
	if _, out := v.apply(ptr(nsChange(t, 13, "c", "1"))); out != applied {
		t.Errorf("c at the same revision: %v", out)
	}
	ev, out = v.apply(ptr(nsChange(t, 14, "a", "")))
	if out != applied || ev.New != nil || !reflect.DeepEqual(ev.Prev, ns("a", "2")) {
		t.Fatalf("delete: %v %+v", out, ev)
	}
	if v.snap.Revision != 14 || len(v.snap.Objects) != 2 {
		t.Errorf("view at %d with %d objects", v.snap.Revision, len(v.snap.Objects))
	}
	// Externally pushed changes carry no revision and are never stale.
	if _, out := v.apply(ptr(nsChange(t, 0, "d", "1"))); out != applied {
		t.Errorf("revisionless change: %v", out)
	}
}

// viewStep is a change applied to a view and the outcome it must have.
type viewStep struct {
	what string
	ch   change
	want outcome
}

func applySteps(t *testing.T, v *view, prefix string, steps []viewStep) {
	t.Helper()
	for _, s := range steps {
		if _, out := v.apply(&s.ch); out != s.want {
			t.Errorf("%s%s: %v, want %v", prefix, s.what, out, s.want)
		}
	}
}

func TestViewNoOpsAfterDeletesAndRelists(t *testing.T) {
	v := newView()
	l := emptyListing(10)
	listNs(t, l, "a", "1")
	listNs(t, l, "b", "1")
	v.replace(l)

	applySteps(t, v, "", []viewStep{
		{"a's value again", nsChange(t, 11, "a", "1"), noop},
		{"a deleted", nsChange(t, 12, "a", ""), applied},
		{"a deleted again", nsChange(t, 13, "a", ""), noop},
		{"a re-put with its old value", nsChange(t, 14, "a", "1"), applied},
		{"a's value once more", nsChange(t, 15, "a", "1"), noop},
	})

	// A re-list's objects replace the view's: b changed while unwatched,
	// a is gone, c is new.
	relist := emptyListing(20)
	listNs(t, relist, "b", "2")
	listNs(t, relist, "c", "1")
	v.replace(relist)
	applySteps(t, v, "after the re-list, ", []viewStep{
		{"b's listed value", nsChange(t, 21, "b", "2"), noop},
		{"b's value before the re-list", nsChange(t, 22, "b", "1"), applied},
		{"a's value before the re-list", nsChange(t, 23, "a", "1"), applied},
		{"c's listed value", nsChange(t, 24, "c", "1"), noop},
	})
}

// TestSameTellsDistinctValuesApart: each object of W(1000), decoded from
// its stored value, is the same as another decoding of that value and not
// the same as the next object of its resource, nor as itself with one
// field changed.
func TestSameTellsDistinctValuesApart(t *testing.T) {
	decode := func(k kubestate.Key, o kubestate.Object) kubestate.Object {
		raw, err := kubestate.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := kubestate.Decode(k, raw)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	last := map[kubestate.Resource]kubestate.Object{}
	for k, o := range workload.New(1000).Objects() {
		a, b := decode(k, o), decode(k, o)
		if !same(a, b) {
			t.Fatalf("%s: two decodings of its value differ", k)
		}
		if p := last[k.Resource]; p != nil && same(p, a) {
			t.Fatalf("%s and %s are the same", p.Key(), k)
		}
		last[k.Resource] = a
		if s, ok := b.(*kubestate.EndpointSlice); ok && len(s.Endpoints) > 0 {
			s.Endpoints[0].Edit(func(f *kubestate.EndpointFields) { f.Ready = !f.Ready })
			if same(a, s) {
				t.Fatalf("%s: an endpoint's readiness changed, still the same", k)
			}
		}
	}
}

func TestViewKeepsLastGoodValueOfUndecodableKeys(t *testing.T) {
	v := newView()
	l := emptyListing(5)
	listNs(t, l, "a", "1")
	v.replace(l)

	relist := emptyListing(8)
	relist.bad = map[kubestate.Key]bool{nsKey("a"): true, nsKey("never-good"): true}
	v.replace(relist)
	if !reflect.DeepEqual(v.snap.Objects, map[kubestate.Key]kubestate.Object{nsKey("a"): ns("a", "1")}) {
		t.Errorf("objects %v, want a's last good value only", v.snap.Objects)
	}
	if _, out := v.apply(ptr(nsChange(t, 9, "a", "1"))); out != noop {
		t.Errorf("the last good bytes again: %v, want noop", out)
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	b := newBackoff(Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond})
	var got []time.Duration
	for range 5 {
		got = append(got, b.delay())
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	b.reset()
	if d := b.delay(); d != time.Millisecond {
		t.Errorf("after reset %v", d)
	}
	if d := (Backoff{}).withDefaults(); d.Initial != DefaultBackoffInitial || d.Max != DefaultBackoffMax {
		t.Errorf("defaults %+v", d)
	}
}

func ptr[T any](v T) *T { return &v }
