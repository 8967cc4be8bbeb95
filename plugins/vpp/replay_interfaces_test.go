package vpp

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// changeLog collects what Interfaces reports.
type changeLog struct {
	mu      sync.Mutex
	batches [][]InterfaceChange
	wake    chan struct{}
}

func newChangeLog() *changeLog { return &changeLog{wake: make(chan struct{}, 1)} }

func (l *changeLog) add(c []InterfaceChange) {
	l.mu.Lock()
	l.batches = append(l.batches, slices.Clone(c))
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// since returns the changes after the first n batches, flattened.
func (l *changeLog) since(n int) []InterfaceChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []InterfaceChange
	for _, b := range l.batches[min(n, len(l.batches)):] {
		out = append(out, b...)
	}
	return out
}

func (l *changeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.batches)
}

// waitFor waits until cond holds for the changes after batch n.
func (l *changeLog) waitFor(t *testing.T, n int, what string, cond func([]InterfaceChange) bool) []InterfaceChange {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c := l.since(n)
		if cond(c) {
			return c
		}
		select {
		case <-l.wake:
		case <-deadline:
			t.Fatalf("waiting for %s; changes so far: %s", what, describeChanges(c))
			return nil
		}
	}
}

func describeChanges(cs []InterfaceChange) string {
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("\n  %s %d %s %q restarted=%v", c.Kind, c.Interface.Index, c.Interface.Name, c.Interface.Tag, c.Restarted)
	}
	return s
}

// kinds maps interface names to the kinds reported for them, in order.
func kinds(cs []InterfaceChange) map[string][]ChangeKind {
	m := map[string][]ChangeKind{}
	for _, c := range cs {
		m[c.Interface.Name] = append(m[c.Interface.Name], c.Kind)
	}
	return m
}

// startupTable is the interface table of every recorded VPP (corpus
// README: the startup configuration).
var startupTable = []Interface{
	{0, "local0", ""}, {1, "loop0", ""}, {2, "host-vcup", ""},
	{3, "host-vcw1", "default/web-1"}, {4, "host-vcw2", "default/web-2"}, {5, "host-vcw3", "default/web-3"},
	{6, "host-vccl", "default/client"}, {7, "host-vco1", "default/one-1"}, {8, "host-vcl1", "default/loc-1"},
}

// runInterfaces starts Interfaces.Run until the test ends.
func runInterfaces(t *testing.T, ifs *Interfaces) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ifs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// allAdded: every interface of the startup table reported Added once.
func allAdded(cs []InterfaceChange) bool {
	k := kinds(cs)
	for _, i := range startupTable {
		if !slices.Equal(k[i.Name], []ChangeKind{Added}) {
			return false
		}
	}
	return len(k) == len(startupTable)
}

// TestReplayInterfacesAcrossRestart replays a VPP restart as recorded: the
// agent's table (restart.jsonl, before the restart), then the new VPP
// answering right after its socket appeared (restart_events.jsonl): only
// local0, then one event per interface of the startup configuration, then
// the full table. Every interface is reported gone and then added again;
// local0, there throughout, is reported recreated.
func TestReplayInterfacesAcrossRestart(t *testing.T) {
	log := newChangeLog()
	before := append(pick(t, loadScenario(t, "events"), 1), pick(t, loadScenario(t, "restart"), 1)...)
	e := replaySetup(t, before, log.add)
	runInterfaces(t, e.ifaces)
	log.waitFor(t, 0, "the table before the restart", allAdded)
	if got := e.ifaces.List(); !slices.Equal(got, startupTable) {
		t.Fatalf("table %v, want %v", got, startupTable)
	}
	e.checkAllUsed(t, 1, 1) // events.jsonl's want, restart.jsonl's dump

	n := log.count()
	e.rp.restart(loadScenario(t, "restart_events"))
	cs := log.waitFor(t, n, "the interfaces back after the restart", func(cs []InterfaceChange) bool {
		k := kinds(cs)
		for _, i := range startupTable[1:] {
			if !slices.Equal(k[i.Name], []ChangeKind{Deleted, Added}) {
				return false
			}
		}
		return len(k) == len(startupTable)
	})
	for _, c := range cs {
		switch {
		case c.Interface.Name == "local0" && (c.Kind != Changed || !c.Restarted):
			t.Errorf("local0 after the restart: %+v", c)
		case c.Kind == Deleted && !c.Restarted:
			// Went with the old VPP: not a loss for the renderers.
			t.Errorf("deleted after the restart without Restarted: %+v", c)
		case c.Kind == Added && c.Interface != startupTable[c.Interface.Index]:
			t.Errorf("added %+v, want %+v", c.Interface, startupTable[c.Interface.Index])
		}
	}
	if got := e.ifaces.List(); !slices.Equal(got, startupTable) {
		t.Errorf("table after the restart %v, want %v", got, startupTable)
	}
	if name, ok := e.ifaces.InterfaceByTag("default/one-1"); !ok || name != "host-vco1" {
		t.Errorf("by tag: %q %v", name, ok)
	}
	e.checkAllUsed(t, 1, 2, 4) // 3 is the wait whose events arrived
	if st := e.conn.Status(); st.Restarts != 1 {
		t.Errorf("status %+v: the restart was not noticed", st)
	}
}

// TestReplayInterfacesLateReconnect reconnects after the restarted VPP
// created its interfaces (restart.jsonl step 19, 2.3 s after start): the
// same names, indices and tags, each reported Changed and Restarted, so
// that the agent configures them again.
func TestReplayInterfacesLateReconnect(t *testing.T) {
	log := newChangeLog()
	restart := loadScenario(t, "restart")
	want := pick(t, loadScenario(t, "events"), 1)
	e := replaySetup(t, append(want, pick(t, restart, 1)...), log.add)
	runInterfaces(t, e.ifaces)
	log.waitFor(t, 0, "the table before the restart", allAdded)

	n := log.count()
	e.rp.restart(append(want, pick(t, restart, 19)...))
	cs := log.waitFor(t, n, "every interface recreated", func(cs []InterfaceChange) bool { return len(cs) >= len(startupTable) })
	for _, c := range cs {
		if c.Kind != Changed || !c.Restarted || c.Interface != startupTable[c.Interface.Index] || c.Old != c.Interface {
			t.Errorf("after a restart: %+v", c)
		}
	}
	if len(cs) != len(startupTable) {
		t.Errorf("%d changes, want %d:%s", len(cs), len(startupTable), describeChanges(cs))
	}
	if m := e.rp.missed(); len(m) > 0 {
		t.Errorf("requests without a recorded answer: %v", m)
	}
}

// TestReplayInterfaceDeletedEvent registers when VPP says the connection
// is registered already (events.jsonl step 2: -31) and still follows the
// events: host-vco1 deleted (step 13, through the CLI of another client)
// leaves the cache at once.
func TestReplayInterfaceDeletedEvent(t *testing.T) {
	log := newChangeLog()
	ev := loadScenario(t, "events")
	e := replaySetup(t, append(pick(t, loadScenario(t, "interfaces"), 1), pick(t, ev, 2, 13)...), log.add)
	runInterfaces(t, e.ifaces)
	log.waitFor(t, 0, "the table", allAdded)

	n := log.count()
	e.rp.perform(13)
	cs := log.waitFor(t, n, "host-vco1 deleted", func(cs []InterfaceChange) bool { return len(cs) > 0 })
	if want := (InterfaceChange{Interface: startupTable[7], Kind: Deleted}); len(cs) != 1 || cs[0] != want {
		t.Errorf("changes %s, want host-vco1 deleted", describeChanges(cs))
	}
	if _, ok := e.ifaces.ByName("host-vco1"); ok {
		t.Error("host-vco1 still cached")
	}
	if _, ok := e.ifaces.InterfaceByTag("default/one-1"); ok {
		t.Error("host-vco1's tag still resolves")
	}
	if len(e.ifaces.List()) != len(startupTable)-1 {
		t.Errorf("table %v", e.ifaces.List())
	}
	if m := e.rp.missed(); len(m) > 0 {
		t.Errorf("requests without a recorded answer: %v", m)
	}
}

// TestInterfacesRunOnSim runs the cache on the simulated VPP (with or
// without interface events): changes are reported once, and a restart
// reports every interface recreated.
func TestInterfacesRunOnSim(t *testing.T) {
	log := newChangeLog()
	e := setup(t, sim.Options{})
	if _, err := e.vpp.AddInterface("tap1", "default/web"); err != nil {
		t.Fatal(err)
	}
	e.connected(t)
	ifs := NewInterfaces(e.conn, log.add)
	runInterfaces(t, ifs)
	log.waitFor(t, 0, "the table", func(cs []InterfaceChange) bool { return len(cs) == 2 })

	n := log.count()
	if _, err := e.vpp.AddInterface("tap2", "default/db"); err != nil {
		t.Fatal(err)
	}
	if err := ifs.Refresh(context.Background()); err != nil { // the simulator may send no event
		t.Fatal(err)
	}
	cs := log.waitFor(t, n, "tap2", func(cs []InterfaceChange) bool { return len(cs) > 0 })
	if want := (InterfaceChange{Interface: Interface{Index: 2, Name: "tap2", Tag: "default/db"}, Kind: Added}); len(cs) != 1 || cs[0] != want {
		t.Errorf("changes %s, want tap2 added", describeChanges(cs))
	}

	n = log.count()
	e.vpp.Restart()
	cs = log.waitFor(t, n, "the restart", func(cs []InterfaceChange) bool { return len(cs) >= 3 })
	for _, c := range cs {
		if c.Kind != Changed || !c.Restarted {
			t.Errorf("after a restart: %+v", c)
		}
	}
	if len(cs) != 3 {
		t.Errorf("changes after the restart: %s", describeChanges(cs))
	}
}

// TestReplayInterfaceTagChange refreshes the table before and after
// another client tagged loop0 with host-vcw1's tag (interfaces.jsonl
// steps 1 and 26: VPP sends no event for a tag, a re-read finds it).
func TestReplayInterfaceTagChange(t *testing.T) {
	log := newChangeLog()
	recs := loadScenario(t, "interfaces")
	e := replaySetup(t, pick(t, recs, 1, 25, 26), log.add)
	ctx := context.Background()
	if err := e.ifaces.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if cs := log.since(0); !allAdded(cs) {
		t.Fatalf("first read: %s", describeChanges(cs))
	}
	n := log.count()
	e.rp.perform(25)
	if err := e.ifaces.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tagged := Interface{Index: 1, Name: "loop0", Tag: "default/web-1"}
	if cs := log.since(n); len(cs) != 1 || cs[0] != (InterfaceChange{Interface: tagged, Kind: Changed, Old: startupTable[1]}) {
		t.Errorf("after tagging loop0: %s", describeChanges(cs))
	}
	if i, ok := e.ifaces.ByName("loop0"); !ok || i != tagged {
		t.Errorf("loop0 cached as %+v", i)
	}
	if name, ok := e.ifaces.InterfaceByTag("default/web-2"); !ok || name != "host-vcw2" {
		t.Errorf("by tag default/web-2: %q %v", name, ok)
	}
	e.checkAllUsed(t, 1, 25, 26)
}

func TestInterfaceDiff(t *testing.T) {
	old := map[string]Interface{
		"a": {1, "a", ""}, "b": {2, "b", "ns/b"}, "c": {3, "c", ""},
	}
	now := []Interface{{1, "a", ""}, {4, "b", "ns/b"}, {3, "d", "ns/d"}}
	got := diff(old, now, false)
	want := []InterfaceChange{
		{Interface: Interface{3, "c", ""}, Kind: Deleted},
		{Interface: Interface{3, "d", "ns/d"}, Kind: Added},
		{Interface: Interface{4, "b", "ns/b"}, Kind: Changed, Old: Interface{2, "b", "ns/b"}},
	}
	if !slices.Equal(got, want) {
		t.Errorf("diff:%s\nwant:%s", describeChanges(got), describeChanges(want))
	}
	got = diff(old, now, true)
	if len(got) != 4 || got[0] != (InterfaceChange{Interface: Interface{1, "a", ""}, Kind: Changed, Old: Interface{1, "a", ""}, Restarted: true}) ||
		got[1] != (InterfaceChange{Interface: Interface{3, "c", ""}, Kind: Deleted, Restarted: true}) {
		t.Errorf("diff after a restart:%s", describeChanges(got))
	}
}
