package nat44

import (
	"maps"
	"testing"

	"pgregory.net/rapid"
)

// refRouteState is the route bookkeeping as it was before routeRef's
// shortcuts, the oracle of TestRouteRefShortcuts: the counts, the desired
// route per key and the keys queued for Apply.
type refRouteState struct {
	refs    map[Route]int
	desired map[RouteKey]Route
	dirty   map[RouteKey]bool
}

// ref counts one service more or fewer wanting rt and recomputes its
// key's desired route from the counts, as routeRef did.
func (s *refRouteState) ref(rt Route, delta int, synced bool) {
	if n := s.refs[rt] + delta; n > 0 {
		s.refs[rt] = n
	} else {
		delete(s.refs, rt)
	}
	var want *Route
	for _, k := range []RouteKind{RouteDrop, RouteReject, RouteLookup} {
		c := rt
		c.Kind = k
		if k != RouteLookup {
			c.Table = 0
		}
		if s.refs[c] > 0 && (want == nil || compareRoutes(c, *want) < 0) {
			want = &c
		}
	}
	old, had := s.desired[rt.RouteKey]
	switch {
	case want == nil && !had, want != nil && had && *want == old:
		return
	case want == nil:
		delete(s.desired, rt.RouteKey)
	default:
		s.desired[rt.RouteKey] = *want
	}
	if synced {
		s.dirty[rt.RouteKey] = true
	}
}

// routeRef's shortcuts (a key's first route, a count changing under the
// route already desired) leave the desired routes and the keys queued
// for Apply exactly as the full search does, whatever the services want
// (kinds, tables, keys shared with the global routes).
func TestRouteRefShortcuts(t *testing.T) {
	cidr := testConfig().ServiceCIDR.Masked()
	keys := []RouteKey{{Prefix: MustParseIPv4Prefix("10.96.0.10/32")}, {Prefix: MustParseIPv4Prefix("10.96.0.11/32")},
		{Prefix: MustIPv4Prefix(cidr), VRF: 2}, {Prefix: MustParseIPv4Prefix("10.96.0.10/32"), VRF: 2}}
	rapid.Check(t, func(rt *rapid.T) {
		r := newTestRenderer(rt, testConfig(), newFakeVPP())
		r.synced = rapid.Bool().Draw(rt, "synced")
		s := &refRouteState{refs: map[Route]int{}, desired: map[RouteKey]Route{}, dirty: map[RouteKey]bool{}}
		for k, v := range r.desired.Routes {
			s.desired[k] = *v
		}
		for i := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			route := Route{RouteKey: rapid.SampledFrom(keys).Draw(rt, "key"),
				Kind: RouteKind(rapid.IntRange(0, 2).Draw(rt, "kind")), Table: uint32(rapid.IntRange(0, 2).Draw(rt, "table"))}
			delta := 1
			if s.refs[route] > 0 && rapid.Bool().Draw(rt, "release") {
				delta = -1
			}
			r.routeRef(route, delta)
			s.ref(route, delta, r.synced)
			got := map[RouteKey]Route{}
			for k, v := range r.desired.Routes {
				got[k] = *v
			}
			if !maps.Equal(got, s.desired) {
				rt.Fatalf("step %d (%s %+d): desired %v, want %v", i, route, delta, got, s.desired)
			}
			dirty := map[RouteKey]bool{}
			for k := range r.dirtyRoutes {
				dirty[k] = true
			}
			if !maps.Equal(dirty, s.dirty) {
				rt.Fatalf("step %d (%s %+d): queued %v, want %v", i, route, delta, dirty, s.dirty)
			}
		}
	})
}
