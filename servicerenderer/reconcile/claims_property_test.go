package reconcile

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestClaimsAgainstModel sets and releases the claims of a few services on
// a few keys at random and checks the table against a plain model (per
// key, who claims it with what): the desired object is the oldest
// claimant's, a key is contested exactly while several claim it, and the
// conflicts list every loser, oldest first. (The losers live beside the
// frontends, in the table: a contested frontend is rare.)
func TestClaimsAgainstModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb, _, _ := table(t)
		const services = 4
		claimants := make([]*Claimant[key, obj], services)
		ages := rapid.Permutation([]int{0, 1, 2, 3}).Draw(rt, "ages")
		for i := range claimants {
			claimants[i] = &Claimant[key, obj]{}
		}
		// model[k][i] is service i's value on key k, when it claims k.
		model := map[key]map[int]string{}
		for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			i := rapid.IntRange(0, services-1).Draw(rt, "service")
			c := claimants[i]
			for _, m := range model {
				delete(m, i)
			}
			if rapid.Bool().Draw(rt, "release") {
				tb.Release(c)
			} else {
				var os []obj
				for _, k := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c"}), rapid.ID).Draw(rt, "keys") {
					v := fmt.Sprintf("s%d.%d", i, step)
					os = append(os, obj{k, v})
					if model[key(k)] == nil {
						model[key(k)] = map[int]string{}
					}
					model[key(k)][i] = v
				}
				tb.Set(c, svc(fmt.Sprintf("s%d", i), ages[i]), os)
			}
			var wantConflicts []string
			for _, k := range []key{"a", "b", "c"} {
				var by []int // the claimants of k, oldest first
				for j := range model[k] {
					by = append(by, j)
				}
				slices.SortFunc(by, func(x, y int) int { return ages[y] - ages[x] })
				fe := tb.Get(k)
				switch {
				case len(by) == 0:
					if fe != nil && fe.Desired != nil {
						rt.Fatalf("%s: desired %v, no claimant", k, *fe.Desired)
					}
				case fe == nil || fe.Desired == nil || fe.Desired.V != model[k][by[0]]:
					rt.Fatalf("%s: frontend %+v, want %s's %s", k, fe, fmt.Sprintf("s%d", by[0]), model[k][by[0]])
				case fe.Contested() != (len(by) > 1):
					rt.Fatalf("%s: contested %v with %d claimants", k, fe.Contested(), len(by))
				}
				if len(by) > 1 {
					c := fmt.Sprintf("%s: s%d over", k, by[0])
					for _, j := range by[1:] {
						c += fmt.Sprintf(" s%d", j)
					}
					wantConflicts = append(wantConflicts, c)
				}
			}
			var got []string
			for _, c := range tb.Conflicts() {
				s := fmt.Sprintf("%s: %s over", c.Key, c.Winner.Name)
				for _, l := range c.Losers {
					s += " " + l.Name
				}
				got = append(got, s)
			}
			if !slices.Equal(got, wantConflicts) {
				rt.Fatalf("conflicts %q, want %q", got, wantConflicts)
			}
		}
	})
}
