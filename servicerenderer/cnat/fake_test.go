package cnat

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

// fakeVPP is a VPP holding cnat state as VPP 25.02 does (FACTS §6), and
// failing the test on what would crash it or corrupt its state: a
// translation with 0 paths (SIGABRT), a feature enabled twice (on the arc
// twice). Ids are pool indexes reused last-in-first-out.
type fakeVPP struct {
	t  testing.TB
	mu sync.Mutex
	// ifaces are the interfaces VPP has, by name: their sw_if_index.
	ifaces map[string]uint32
	nextIf uint32
	trans  map[Key]*fakeTrans
	byID   map[uint32]Key
	free   []uint32
	nextID uint32

	snat4, snat6 netip.Addr
	policy       SNATPolicy
	exclude      map[netip.Prefix]bool
	tables       map[string]Tables
	features     map[string]map[Feature]int
	routes       map[Route]bool

	writes int
	// calls names the translation and route writes in order ("update",
	// "delete", "route").
	calls []string
	// failUpdate makes updates of these keys fail.
	failUpdate map[Key]error
	// failRoute makes adds and deletes of these routes fail.
	failRoute map[Route]error
	// rejectAnyTable: the VPP takes a reject route in any table (26.02
	// and later); unset, one outside table 0 is refused.
	rejectAnyTable bool
}

type fakeTrans struct {
	id uint32
	t  Translation // paths in the order sent
}

func newFake(t testing.TB, ifaces ...string) *fakeVPP {
	f := &fakeVPP{t: t, ifaces: map[string]uint32{}}
	for _, n := range ifaces {
		f.addInterface(n)
	}
	f.restart()
	return f
}

// restart is a VPP restart: every cnat object is gone; the interfaces of
// the startup configuration come back.
func (f *fakeVPP) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trans, f.byID, f.free, f.nextID = map[Key]*fakeTrans{}, map[uint32]Key{}, nil, 0
	f.snat4, f.snat6 = netip.IPv4Unspecified(), netip.IPv6Unspecified()
	f.policy = PolicyNone
	f.exclude = map[netip.Prefix]bool{}
	f.tables = map[string]Tables{}
	f.features = map[string]map[Feature]int{}
	f.routes = map[Route]bool{}
}

// addInterface is VPP creating an interface: it gets the next index.
func (f *fakeVPP) addInterface(name string) {
	f.nextIf++
	f.ifaces[name] = f.nextIf
}

// dropInterface is VPP deleting an interface and re-creating it empty
// under another index; it returns the index the deleted one had.
func (f *fakeVPP) dropInterface(name string) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tables, name)
	delete(f.features, name)
	old := f.ifaces[name]
	f.addInterface(name)
	return old
}

// callLog is the translation and route writes so far (calls).
func (f *fakeVPP) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeVPP) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *fakeVPP) UpdateTranslation(_ context.Context, t *Translation) (uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.calls = append(f.calls, "update "+t.Key.String())
	if len(t.Paths) == 0 {
		f.t.Errorf("VPP crashed: cnat_translation_update with 0 paths on %s", t.Key)
		return 0, fmt.Errorf("crashed")
	}
	if err := f.failUpdate[t.Key]; err != nil {
		return 0, err
	}
	if ex := f.trans[t.Key]; ex != nil {
		// Same key: id kept, paths replaced, lb_type and flow hash ignored.
		ex.t.Paths = slices.Clone(t.Paths)
		ex.t.RealIP = t.RealIP
		return ex.id, nil
	}
	var id uint32
	if n := len(f.free); n > 0 {
		id, f.free = f.free[n-1], f.free[:n-1]
	} else {
		id = f.nextID
		f.nextID++
	}
	c := *t
	c.Paths = slices.Clone(t.Paths)
	f.trans[t.Key] = &fakeTrans{id: id, t: c}
	f.byID[id] = t.Key
	return id, nil
}

func (f *fakeVPP) DeleteTranslation(_ context.Context, id uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.calls = append(f.calls, fmt.Sprintf("delete %d", id))
	k, ok := f.byID[id]
	if !ok {
		return fmt.Errorf("delete translation %d: %w: %w", id, ErrNotFound, ErrInvalid)
	}
	delete(f.byID, id)
	delete(f.trans, k)
	f.free = append(f.free, id)
	return nil
}

func (f *fakeVPP) DumpTranslations(context.Context) ([]Dumped, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := slices.Sorted(maps.Keys(f.byID))
	out := make([]Dumped, 0, len(ids))
	for _, id := range ids {
		tr := f.trans[f.byID[id]]
		out = append(out, Dumped{ID: id, Key: tr.t.Key, LB: tr.t.LB, Paths: slices.Clone(tr.t.Paths)})
	}
	return out, nil
}

func (f *fakeVPP) SNATAddresses(context.Context) (netip.Addr, netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snat4, f.snat6, nil
}

func (f *fakeVPP) SetSNATAddresses(_ context.Context, ip4, ip6 netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.snat4, f.snat6 = unspec4(ip4), unspec6(ip6)
	return nil
}

func (f *fakeVPP) SetSNATPolicy(_ context.Context, p SNATPolicy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.policy = p
	return nil
}

func (f *fakeVPP) AddDelExcludePrefix(_ context.Context, p netip.Prefix, add bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if add {
		f.exclude[p] = true
	} else {
		delete(f.exclude, p)
	}
	return nil
}

func (f *fakeVPP) AddDelSNATInterface(_ context.Context, name string, table SNATTable, add bool) (uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	idx, ok := f.ifaces[name]
	if !ok {
		return 0, fmt.Errorf("interface %q: %w: %w", name, ErrNoInterface, ErrInvalid)
	}
	if add {
		f.tables[name] |= 1 << table
	} else if f.tables[name] &^= 1 << table; f.tables[name] == 0 {
		delete(f.tables, name)
	}
	return idx, nil
}

func (f *fakeVPP) EnableDisableFeature(_ context.Context, name string, feat Feature, enable bool) (uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	idx, ok := f.ifaces[name]
	if !ok {
		return 0, fmt.Errorf("interface %q: %w: %w", name, ErrNoInterface, ErrInvalid)
	}
	m := f.features[name]
	if m == nil {
		m = map[Feature]int{}
		f.features[name] = m
	}
	if enable {
		if m[feat] > 0 {
			f.t.Errorf("feature %s enabled twice on %s: it is on the arc twice", FeatureNode(feat), name)
		}
		m[feat]++
		return idx, nil
	}
	if m[feat] > 0 {
		m[feat]--
	}
	if m[feat] == 0 {
		delete(m, feat)
	}
	return idx, nil
}

// AddDelFIBRoute keys routes by prefix and VRF, as VPP does: an add
// replaces the route there, a delete removes it. A reject outside table 0
// is refused unless rejectAnyTable (plugins/vpp never sends it: it crashes
// VPP 25.02).
func (f *fakeVPP) AddDelFIBRoute(_ context.Context, r Route, add bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.calls = append(f.calls, fmt.Sprintf("route %v add=%v", r, add))
	if err := f.failRoute[r]; err != nil {
		return err
	}
	if r.Kind == RouteReject && r.VRF != 0 && !f.rejectAnyTable {
		return fmt.Errorf("reject route %v: %w: outside table 0", r, ErrInvalid)
	}
	for o := range f.routes {
		if o.Prefix == r.Prefix && o.VRF == r.VRF {
			delete(f.routes, o)
		}
	}
	if add {
		f.routes[r] = true
	} else {
		// VPP answers 0 to deleting a missing route.
	}
	return nil
}

// DumpFIBRoutes returns VPP's own drop route 240.0.0.0/4 of each VRF too
// (as VPP does, fib_unreach.jsonl).
func (f *fakeVPP) DumpFIBRoutes(_ context.Context, vrfs []uint32, ip6 bool) ([]Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Route
	for _, vrf := range vrfs {
		out = append(out, Route{Prefix: netip.MustParsePrefix("240.0.0.0/4"), VRF: vrf})
		for r := range f.routes {
			if r.VRF == vrf && (ip6 || r.Prefix.Addr().Is4()) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// fakeState is what a fake holds, comparable.
type fakeState struct {
	SNAT4, SNAT6 netip.Addr
	Policy       SNATPolicy
	Exclude      []netip.Prefix
	Tables       map[string]Tables
	Features     map[string]Feature
	Routes       []Route
	Trans        map[Key]Translation
}

func (f *fakeVPP) state() fakeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := fakeState{SNAT4: f.snat4, SNAT6: f.snat6, Policy: f.policy, Tables: maps.Clone(f.tables),
		Features: map[string]Feature{}, Trans: map[Key]Translation{}}
	s.Exclude = slices.SortedFunc(maps.Keys(f.exclude), comparePrefix)
	s.Routes = slices.SortedFunc(maps.Keys(f.routes), Route.Compare)
	for n, m := range f.features {
		for feat, c := range m {
			if c != 1 {
				f.t.Errorf("feature %s on %s %d times", FeatureNode(feat), n, c)
			}
			s.Features[n] |= feat
		}
	}
	for k, tr := range f.trans {
		c := tr.t
		c.Paths = slices.Clone(c.Paths)
		slices.SortFunc(c.Paths, Path.Compare)
		s.Trans[k] = c
	}
	return s
}

// setRoute adds or removes a drop route as another program (or VPP
// losing it) would.
func (f *fakeVPP) setRoute(r Route, add bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		f.routes[r] = true
	} else {
		delete(f.routes, r)
	}
}

// addForeign puts a translation there as another program would.
func (f *fakeVPP) addForeign(t Translation) {
	if _, err := f.UpdateTranslation(context.Background(), &t); err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.writes--
	f.mu.Unlock()
}
