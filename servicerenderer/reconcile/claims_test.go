package reconcile

import (
	"bytes"
	"cmp"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/servicerenderer"
)

type key string

func (k key) String() string { return string(k) }

type obj struct{ K, V string }

// table is a Table of obj with a log written to buf, and the keys its
// Changed hook was told of.
func table(t *testing.T) (*Table[key, obj], *bytes.Buffer, *[]key) {
	t.Helper()
	var buf bytes.Buffer
	var changed []key
	tb := NewTable(Object[key, obj]{
		KeyOf:   func(o *obj) key { return key(o.K) },
		Compare: func(a, b key) int { return cmp.Compare(a, b) },
		Same: func(a, b *obj) bool {
			if a == nil || b == nil {
				return a == b
			}
			return *a == *b
		},
		Changed: func(k key) { changed = append(changed, k) },
	}, slog.New(slog.NewTextHandler(&buf, nil)))
	return tb, &buf, &changed
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func svc(name string, age int) *servicerenderer.ContivService {
	return &servicerenderer.ContivService{ID: servicerenderer.ServiceID{Namespace: "ns", Name: name}, Created: t0.Add(-time.Duration(age) * time.Hour)}
}

func objs(kv ...string) []obj {
	var out []obj
	for i := 0; i < len(kv); i += 2 {
		out = append(out, obj{kv[i], kv[i+1]})
	}
	return out
}

// desired is the table's desired objects, as "key=value", sorted.
func desired(tb *Table[key, obj]) []string {
	var out []string
	for _, fe := range tb.Sorted() {
		if fe.Desired != nil {
			out = append(out, fe.Desired.K+"="+fe.Desired.V)
		}
	}
	return out
}

func TestClaimsOldestWins(t *testing.T) {
	type step struct {
		svc  string
		age  int
		objs []obj // nil: release
	}
	tests := []struct {
		name      string
		steps     []step
		want      []string
		conflicts []Conflict[key]
	}{{
		name:  "one service",
		steps: []step{{"a", 1, objs("k1", "a1", "k2", "a2")}},
		want:  []string{"k1=a1", "k2=a2"},
	}, {
		name:      "the older wins, whatever comes first",
		steps:     []step{{"young", 1, objs("k", "young")}, {"old", 2, objs("k", "old")}},
		want:      []string{"k=old"},
		conflicts: []Conflict[key]{{Key: "k", Winner: svc("old", 0).ID, Losers: []servicerenderer.ServiceID{svc("young", 0).ID}}},
	}, {
		name:      "a tie goes to the lower name",
		steps:     []step{{"b", 1, objs("k", "b")}, {"a", 1, objs("k", "a")}, {"c", 1, objs("k", "c")}},
		want:      []string{"k=a"},
		conflicts: []Conflict[key]{{Key: "k", Winner: svc("a", 0).ID, Losers: []servicerenderer.ServiceID{svc("b", 0).ID, svc("c", 0).ID}}},
	}, {
		name:  "the next oldest takes over",
		steps: []step{{"old", 3, objs("k", "old")}, {"young", 1, objs("k", "young")}, {"mid", 2, objs("k", "mid")}, {"old", 3, nil}},
		want:  []string{"k=mid"},
		conflicts: []Conflict[key]{{Key: "k", Winner: svc("mid", 0).ID,
			Losers: []servicerenderer.ServiceID{svc("young", 0).ID}}},
	}, {
		name:  "a loser's change is kept for when it wins",
		steps: []step{{"old", 2, objs("k", "old")}, {"young", 1, objs("k", "v1")}, {"young", 1, objs("k", "v2", "j", "y")}, {"old", 2, nil}},
		want:  []string{"j=y", "k=v2"},
	}, {
		name:  "keys dropped and added",
		steps: []step{{"a", 1, objs("k1", "a", "k2", "a")}, {"a", 1, objs("k3", "a", "k2", "b")}},
		want:  []string{"k2=b", "k3=a"},
	}, {
		name:  "released: nothing left",
		steps: []step{{"a", 1, objs("k1", "a")}, {"a", 1, nil}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, _, _ := table(t)
			cs := map[string]*Claimant[key, obj]{}
			for _, s := range tt.steps {
				c := cs[s.svc]
				if c == nil {
					c = &Claimant[key, obj]{}
					cs[s.svc] = c
				}
				if s.objs == nil {
					tb.Release(c)
					continue
				}
				tb.Set(c, svc(s.svc, s.age), slices.Clone(s.objs))
			}
			if got := desired(tb); !slices.Equal(got, tt.want) {
				t.Errorf("desired %v, want %v", got, tt.want)
			}
			if tt.conflicts == nil {
				tt.conflicts = []Conflict[key]{}
			}
			if got := tb.Conflicts(); !slices.EqualFunc(got, tt.conflicts, func(a, b Conflict[key]) bool {
				return a.Key == b.Key && a.Winner == b.Winner && slices.Equal(a.Losers, b.Losers)
			}) {
				t.Errorf("conflicts %+v, want %+v", got, tt.conflicts)
			}
			for _, fe := range tb.Dirty() {
				tb.Clean(fe) // planned; VPP holds nothing
			}
			tb.Done(false, nil)
			if n := len(tb.Frontends()); n != len(tt.want) {
				t.Errorf("%d frontends kept after the apply, want %d (one per desired object)", n, len(tt.want))
			}
		})
	}
}

// A conflict is logged once per frontend and losing service, across
// updates and a resync that finds it again; its end is logged.
func TestConflictLoggedOnce(t *testing.T) {
	tb, buf, _ := table(t)
	old, young := &Claimant[key, obj]{}, &Claimant[key, obj]{}
	tb.Set(old, svc("old", 2), objs("k", "old"))
	tb.Set(young, svc("young", 1), objs("k", "v1"))
	tb.Set(young, svc("young", 1), objs("k", "v2"))
	tb.Set(old, svc("old", 2), objs("k", "old2"))
	tb.Reset(0)
	old, young = &Claimant[key, obj]{}, &Claimant[key, obj]{}
	tb.Set(old, svc("old", 2), objs("k", "old"))
	tb.Set(young, svc("young", 1), objs("k", "v1"))
	tb.EndReset()
	if n := strings.Count(buf.String(), "claimed by two services"); n != 1 {
		t.Errorf("conflict logged %d times, want once:\n%s", n, buf)
	}
	tb.Release(old)
	if n := strings.Count(buf.String(), "conflict resolved"); n != 1 {
		t.Errorf("resolution logged %d times, want once:\n%s", n, buf)
	}
	// A conflict gone with a resync is logged resolved by it.
	tb.Set(old, svc("old", 2), objs("k", "old"))
	tb.Reset(0)
	tb.Set(&Claimant[key, obj]{}, svc("old", 2), objs("k", "old"))
	tb.EndReset()
	if n := strings.Count(buf.String(), "conflict resolved"); n != 2 {
		t.Errorf("resolution by a resync logged %d times in all, want 2:\n%s", n, buf)
	}
}

// Dirty holds each frontend whose desired object changed once, until the
// apply is done; an unchanged object queues nothing, and its newest value
// is kept (applied too when it was the same).
func TestDirty(t *testing.T) {
	tb, _, changed := table(t)
	a := &Claimant[key, obj]{}
	tb.Set(a, svc("a", 1), objs("k1", "v", "k2", "v"))
	tb.Set(a, svc("a", 1), objs("k1", "w", "k2", "v"))
	if got := len(tb.Dirty()); got != 2 {
		t.Fatalf("%d dirty, want 2 (each frontend once)", got)
	}
	if !slices.Equal(*changed, []key{"k1", "k2", "k1"}) {
		t.Errorf("changed %v", *changed)
	}
	for _, fe := range tb.Dirty() {
		fe.Applied = fe.Desired // applied
		tb.Clean(fe)
	}
	tb.Done(false, nil)
	if len(tb.Dirty()) != 0 {
		t.Fatalf("dirty after the apply: %d", len(tb.Dirty()))
	}
	tb.Set(a, svc("a", 1), objs("k1", "w", "k2", "v"))
	if len(tb.Dirty()) != 0 {
		t.Errorf("an unchanged service queued %d frontends", len(tb.Dirty()))
	}
	fe := tb.Get("k1")
	if fe.Applied != fe.Desired {
		t.Error("an unchanged object: applied no longer the desired pointer")
	}

	// A frontend planned but held stays dirty for the next apply, once.
	tb.Set(a, svc("a", 1), objs("k1", "x", "k2", "v"))
	for _, fe := range tb.Dirty() {
		tb.Clean(fe)
	}
	var held []*Frontend[key, obj]
	for _, fe := range []*Frontend[key, obj]{fe, fe} {
		if tb.Hold(fe) {
			held = append(held, fe)
		}
	}
	tb.Done(false, held)
	if d := tb.Dirty(); len(d) != 1 || d[0] != fe {
		t.Errorf("dirty after a hold: %v, want k1 once", d)
	}

	// Released and never applied: the frontend goes with the apply.
	tb.Set(&Claimant[key, obj]{}, svc("b", 0), objs("k9", "b"))
	tb.Release(a)
	for _, fe := range tb.Dirty() {
		fe.Applied = fe.Desired
		tb.Clean(fe)
	}
	tb.Done(false, nil)
	if got := desired(tb); !slices.Equal(got, []string{"k9=b"}) {
		t.Errorf("desired %v", got)
	}
	if n := len(tb.Frontends()); n != 1 {
		t.Errorf("%d frontends, want k9 only", n)
	}
}

// Load makes what VPP holds known: frontends for keys no service claims,
// none left for keys nothing refers to; a resync keeps what VPP holds.
func TestLoadAndReset(t *testing.T) {
	tb, _, _ := table(t)
	a := &Claimant[key, obj]{}
	tb.Set(a, svc("a", 1), objs("k1", "v"))
	tb.Load(map[key]*obj{"k2": {"k2", "foreign"}})
	if fe := tb.Get("k2"); fe == nil || fe.Applied.V != "foreign" || fe.Desired != nil {
		t.Errorf("k2 %+v, want VPP's object, nothing desired", fe)
	}
	tb.Reset(0)
	if tb.Get("k1") != nil || tb.Get("k2") == nil || len(tb.Dirty()) != 0 {
		t.Errorf("after a reset: k1 %v, k2 %v, dirty %d; want k2 only, none dirty", tb.Get("k1"), tb.Get("k2"), len(tb.Dirty()))
	}
	tb.EndReset()
	tb.Load(nil)
	if n := len(tb.Frontends()); n != 0 {
		t.Errorf("%d frontends after VPP lost everything, want 0", n)
	}
}

// A dumped object the same as the desired one is not kept beside it:
// Applied is the desired object; a different one is kept as dumped.
func TestLoadSharesTheDesiredObject(t *testing.T) {
	tb, _, _ := table(t)
	a := &Claimant[key, obj]{}
	tb.Set(a, svc("a", 1), objs("k1", "v", "k2", "v"))
	tb.Load(map[key]*obj{"k1": {"k1", "v"}, "k2": {"k2", "old"}})
	if fe := tb.Get("k1"); fe.Applied != fe.Desired {
		t.Errorf("k1: applied %p, desired %p: want the desired object shared", fe.Applied, fe.Desired)
	}
	if fe := tb.Get("k2"); fe.Applied == fe.Desired || fe.Applied.V != "old" {
		t.Errorf("k2: applied %+v, want the dumped object", fe.Applied)
	}
}
