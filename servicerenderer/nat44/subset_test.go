package nat44

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// endpoints are n locals of probability prob in 10.<net>.0.0/16, sorted.
func endpoints(net, n int, prob uint8) []Local {
	out := make([]Local, n)
	for i := range out {
		out[i] = Local{IP: IPv4{10, byte(net), byte(i / 250), byte(1 + i%250)}, Port: 8080, VRF: 1, Probability: prob}
	}
	return out
}

// TestFitLocals: the probabilities of a frontend's mapping always sum to
// 1..255; all endpoints while they fit; else local endpoints first under
// their weight, the remaining units to remote ones; only local endpoints
// at probability 1 when their weights alone pass 255 (the recorded
// failures: weight 128 with 2 local endpoints crashed VPP, weight 255 sent
// all traffic to one of them).
func TestFitLocals(t *testing.T) {
	for _, c := range []struct {
		weight                     uint8
		loc, rem                   int
		used, usedLocal, locWeight int
	}{
		{1, 0, 255, 255, 0, 1},
		{1, 0, 256, 255, 0, 1},
		{1, 0, 1000, 255, 0, 1},
		{1, 100, 200, 255, 100, 1},
		{1, 300, 0, 255, 255, 1},
		{1, 300, 10, 255, 255, 1},
		{128, 2, 0, 2, 2, 1},
		{128, 1, 0, 1, 1, 128},
		{128, 1, 200, 128, 1, 128},
		{255, 1, 0, 1, 1, 255},
		{255, 2, 0, 2, 2, 1},
		{255, 3, 0, 3, 3, 1},
		{255, 1, 5, 1, 1, 255},
		{2, 1, 300, 254, 1, 2},
		{2, 127, 300, 128, 127, 2},
		{2, 128, 300, 128, 128, 1},
		{10, 30, 10, 30, 30, 1},
		{3, 5, 3, 8, 5, 3},
	} {
		name := fmt.Sprintf("weight %d, %d local, %d remote", c.weight, c.loc, c.rem)
		got, sub := fitLocals(endpoints(1, c.loc, c.weight), endpoints(2, c.rem, 1), "node-1", c.weight)
		sum := probabilitySum(got)
		nLocal := 0
		for _, l := range got {
			if l.IP[1] == 1 {
				nLocal++
				if int(l.Probability) != c.locWeight {
					t.Errorf("%s: local %v has probability %d, want %d", name, l.IP, l.Probability, c.locWeight)
				}
			}
		}
		if len(got) != c.used || nLocal != c.usedLocal || sum < 1 || sum > MaxProbabilitySum {
			t.Errorf("%s: %d used (%d local) summing to %d; want %d (%d local), sum 1..255", name, len(got), nLocal, sum, c.used, c.usedLocal)
		}
		if !slices.IsSortedFunc(got, compareLocals) {
			t.Errorf("%s: not sorted", name)
		}
		want := &Subset{Endpoints: c.loc + c.rem, Local: c.loc, Used: c.used, UsedLocal: c.usedLocal, LocalWeight: uint8(c.locWeight)}
		if c.used == c.loc+c.rem {
			want = nil
		}
		if (sub == nil) != (want == nil) || sub != nil && *sub != *want {
			t.Errorf("%s: subset %+v, want %+v", name, sub, want)
		}
	}
}

// TestSubsetStable: one endpoint more or less changes a node's subset by
// at most one other endpoint (rendezvous hashing), so a change cuts the
// sessions of at most that one.
func TestSubsetStable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(256, 1000).Draw(t, "endpoints")
		node := rapid.SampledFrom([]string{"node-1", "node-2", "worker-17", ""}).Draw(t, "node")
		all := endpoints(2, n+1, 1)
		i := rapid.IntRange(0, n).Draw(t, "changed")
		without := slices.Delete(slices.Clone(all), i, i+1)
		a, _ := fitLocals(nil, without, node, 1)
		b, _ := fitLocals(nil, slices.Clone(all), node, 1)
		gone, came := 0, 0
		mergeLocals(b, a, func(d, x *Local) {
			switch {
			case x == nil:
				came++
			case d == nil:
				gone++
			}
		})
		if came > 1 || gone > 1 || came != gone {
			t.Fatalf("adding %v moved %d in and %d out", all[i].IP, came, gone)
		}
	})
}

// TestSubsetSpread: the nodes' subsets spread over all endpoints. With
// 1000 remote endpoints of weight 1 each node holds 255; over 30 nodes
// every endpoint is held by some node, and none by far more than the
// 30·255/1000 ≈ 7.7 nodes the average gives.
func TestSubsetSpread(t *testing.T) {
	held := map[netip.Addr]int{}
	for n := range 30 {
		got, _ := fitLocals(nil, endpoints(2, 1000, 1), fmt.Sprintf("node-%d", n+1), 1)
		for _, l := range got {
			held[l.IP.Addr()]++
		}
	}
	least, most := 30, 0
	for _, l := range endpoints(2, 1000, 1) {
		least, most = min(least, held[l.IP.Addr()]), max(most, held[l.IP.Addr()])
	}
	t.Logf("1000 endpoints over 30 nodes of 255: each held by %d to %d nodes", least, most)
	if least < 1 || most > 20 {
		t.Errorf("each endpoint held by %d to %d nodes; want 1 or more, about 7.7", least, most)
	}
}

// genLocals draws a load-balanced mapping's locals as the agent builds
// them: endpoints of weight 1 or w from a pool of 400, summing to 1..255
// (with the placeholder when there is one endpoint).
func genLocals(t *rapid.T, label string, w uint8) []Local {
	pool := endpoints(2, 400, 1)
	n := rapid.IntRange(1, 255).Draw(t, label+" endpoints")
	var out []Local
	sum := 0
	perm := rapid.SliceOfNDistinct(rapid.IntRange(0, 399), n, n, rapid.ID[int]).Draw(t, label+" picks")
	for _, i := range perm {
		l := pool[i]
		if rapid.Bool().Draw(t, label+" local") {
			l.Probability = w
		}
		if sum+int(l.Probability) > MaxProbabilitySum {
			break
		}
		sum += int(l.Probability)
		out = append(out, l)
	}
	return withPlaceholder(sortLocals(out))
}

// TestDiffKeepsTheSumAtEveryCall: between any two mappings summing to
// 1..255, the in-place operations Diff plans keep every intermediate state
// at 1..255 with 2 locals or more (VPP 25.02 crashes or skews otherwise);
// when no such order exists the mapping is replaced, never half-built.
func TestDiffKeepsTheSumAtEveryCall(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := uint8(rapid.IntRange(1, 255).Draw(t, "weight"))
		key := MappingKey{IP: MustParseIPv4("10.96.0.1"), Port: 80, Proto: 6}
		applied := &Mapping{MappingKey: key, Locals: genLocals(t, "applied", w), Tag: "contiv:a/b"}
		desired := &Mapping{MappingKey: key, Locals: genLocals(t, "desired", w), Tag: "contiv:a/b"}
		st := NewState()
		st.Mappings[key] = applied
		for _, op := range Diff(&State{Mappings: map[MappingKey]*Mapping{key: desired}}, st, func(string) bool { return true }) {
			st.Apply(op)
			m := st.Mappings[key]
			if m == nil {
				continue // replaced: deleted, then added whole
			}
			if s := probabilitySum(m.Locals); s < 1 || s > MaxProbabilitySum || len(m.Locals) < 2 {
				t.Fatalf("after %s %s: %d locals summing to %d", op.Kind, op.Local, len(m.Locals), s)
			}
		}
		if got := st.Mappings[key]; !slices.Equal(got.Locals, desired.Locals) {
			t.Fatalf("ended with %v, want %v", got.Locals, desired.Locals)
		}
	})
}

// A full subset whose one endpoint is replaced by another: the leaving
// one goes first (adding first would sum to 256 and crash VPP 25.02).
func TestDiffFullSubsetSwap(t *testing.T) {
	key := MappingKey{IP: MustParseIPv4("10.96.0.1"), Port: 80, Proto: 6}
	all := endpoints(2, 256, 1)
	applied := &Mapping{MappingKey: key, Locals: all[:255], Tag: "contiv:a/b"}
	desired := &Mapping{MappingKey: key, Locals: all[1:], Tag: "contiv:a/b"}
	st := NewState()
	st.Mappings[key] = applied
	ops := Diff(&State{Mappings: map[MappingKey]*Mapping{key: desired}}, st, func(string) bool { return true })
	if len(ops) != 2 || ops[0].Kind != OpDelLocal || ops[0].Local != all[0] || ops[1].Kind != OpAddLocal || ops[1].Local != all[255] {
		t.Errorf("ops %+v", ops)
	}
}

// TestSubsetReported: a frontend served by a subset is listed by Subsets
// with its numbers and logged once per change, not again by a resync; it
// leaves the list when its endpoints fit again.
func TestSubsetReported(t *testing.T) {
	var buf strings.Builder
	warnings := func() int { return strings.Count(buf.String(), "level=WARN msg=\"frontend served by a subset") }
	r, err := New(Params{Config: testConfig(), VPP: newFakeVPP(), Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	svc := bigService(1, 300, 0, 0, 0) // a cluster IP and an external IP
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, true)
	want := Subset{Endpoints: 300, Used: 255, LocalWeight: 1}
	got := r.Subsets()
	if len(got) != 2 || got[0].Subset != want || got[1].Subset != want || got[0].Service != svc.ID {
		t.Fatalf("subsets %+v", got)
	}
	if w := warnings(); w != 2 {
		t.Errorf("%d warnings, want 2:\n%s", w, buf.String())
	}
	if err := r.Resync(resyncData(svc)); err != nil {
		t.Fatal(err)
	}
	if w := warnings(); w != 2 {
		t.Errorf("a resync logged the unchanged subsets again:\n%s", buf.String())
	}
	bigger := bigService(1, 301, 0, 0, 0)
	if err := r.UpdateService(svc, bigger); err != nil {
		t.Fatal(err)
	}
	if got := r.Subsets(); len(got) != 2 || got[0].LeftOut() != 46 || warnings() != 4 {
		t.Errorf("after 301 endpoints: %+v, %d warnings", got, warnings())
	}
	small := bigService(1, 255, 0, 0, 0)
	if err := r.UpdateService(bigger, small); err != nil {
		t.Fatal(err)
	}
	if got := r.Subsets(); len(got) != 0 || strings.Count(buf.String(), "no longer served by a subset") != 2 {
		t.Errorf("after 255 endpoints: %+v\n%s", got, buf.String())
	}
}

// The subset is the node's: a renamed node renders its services again.
func TestSubsetFollowsNodeName(t *testing.T) {
	r := newTestRenderer(t, testConfig(), newFakeVPP())
	if err := r.Resync(resyncData(bigService(1, 1000, 0, 0, 0))); err != nil {
		t.Fatal(err)
	}
	key := MappingKey{IP: MustParseIPv4("10.96.1.1"), Port: 80, Proto: 6}
	before := r.Desired().Mappings[key].Locals
	node := testNode()
	node.Name = "other"
	if err := r.UpdateLocalNode(node); err != nil {
		t.Fatal(err)
	}
	after := r.Desired().Mappings[key].Locals
	want, _ := fitLocals(nil, endpoints(3, 1000, 1), "other", 1)
	if slices.Equal(before, after) || len(after) != len(want) {
		t.Fatalf("after the rename: %d locals, the same: %v", len(after), slices.Equal(before, after))
	}
	for i := range want {
		if after[i].IP != want[i].IP {
			t.Fatalf("after the rename: local %d is %v, want %v", i, after[i].IP, want[i].IP)
		}
	}
}
