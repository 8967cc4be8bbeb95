package nat44_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// acks records the names of the state-changing requests VPP answered,
// in order.
type acks struct {
	mu    sync.Mutex
	names []string
}

func (a *acks) on(msg string, _ time.Time) {
	a.mu.Lock()
	a.names = append(a.names, msg)
	a.mu.Unlock()
}

func (a *acks) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.names
	a.names = nil
	return out
}

func isFeature(msg string) bool {
	return msg == "nat44_interface_add_del_feature" || msg == "nat44_ed_add_del_output_interface"
}

func isMapping(msg string) bool {
	return strings.Contains(msg, "static_mapping")
}

// restartLate restarts the simulated VPP with its interfaces re-created
// only when the test says (FinishStartup), and waits for the client to
// reconnect.
func (e *simEnv) restartLate() {
	e.t.Helper()
	before := e.conn.Status().Restarts
	e.vpp.RestartWith(sim.RestartOptions{InterfacesAfter: time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	for st := e.conn.Status(); st.Restarts == before || !st.Connected; st = e.conn.Status() {
		if time.Now().After(deadline) {
			e.t.Fatalf("VPP restart not seen: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFeaturesBeforeMappingsAfterRestart: after a VPP restart whose
// interfaces come late, the apply adds no mapping while the node's
// interfaces are missing; once they are back, every interface feature is
// enabled before the first mapping is added, so that no outside feature
// walks the service mappings (FACTS §7).
func TestFeaturesBeforeMappingsAfterRestart(t *testing.T) {
	var log acks
	e := newSimEnvWith(t, sim.Options{Traffic: true, OnAck: log.on, FeatureWalk: sim.FeatureWalk{Add: time.Nanosecond, Del: time.Nanosecond}})
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = time.Hour
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	mappings := len(e.vpp.Snapshot().Mappings)

	e.restartLate()
	log.take()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if n := len(e.vpp.Snapshot().Mappings); n != 0 {
		t.Errorf("%d mappings added while the node's interfaces are missing, want 0 (held)", n)
	}
	if r.Held() != mappings || r.HoldUntil().IsZero() {
		t.Errorf("Held() = %d, HoldUntil() = %v; want %d mappings held until the bound", r.Held(), r.HoldUntil(), mappings)
	}
	// Another change while they are missing is held too.
	e.apply(r, false)
	if n := len(e.vpp.Snapshot().Mappings); n != 0 {
		t.Errorf("%d mappings added by a later apply while the interfaces are missing", n)
	}

	walked := e.vpp.Walked()
	e.vpp.FinishStartup()
	for name := range data.Interfaces {
		if err := r.UpdateInterface(name, data.Interfaces[name]); err != nil {
			t.Fatal(err)
		}
	}
	e.apply(r, false)
	e.inSync(r)
	if r.Held() != 0 || len(r.Pending()) != 0 {
		t.Errorf("after the interfaces: %d held, pending %v", r.Held(), r.Pending())
	}
	got := log.take()
	firstMapping := slices.IndexFunc(got, isMapping)
	lastFeature := -1
	for i, msg := range got {
		if isFeature(msg) {
			lastFeature = i
		}
	}
	if firstMapping < 0 || lastFeature < 0 || lastFeature > firstMapping {
		t.Errorf("calls after the interfaces came back: a feature after a mapping:\n%s", strings.Join(got, "\n"))
	}
	// The 5 outside features (GbE's output feature, and the frontends')
	// walked only the identity mappings added before them (1 ns a
	// record), none of the services' mappings.
	if w, most := int(e.vpp.Walked()-walked), 5*len(e.vpp.Snapshot().Identities); w > most {
		t.Errorf("the features walked %d mapping records, want at most %d (identities only)", w, most)
	}
}

// TestHoldIsBounded: a node interface that never comes back holds the
// mappings no longer than Config.HoldMappings.
func TestHoldIsBounded(t *testing.T) {
	e := newSimEnvWith(t, sim.Options{Traffic: true})
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = time.Nanosecond
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	e.restartLate()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if r.Held() == 0 || r.HoldUntil().IsZero() {
		t.Fatalf("nothing held: Held() = %d", r.Held())
	}
	time.Sleep(time.Millisecond) // past the bound
	e.apply(r, false)
	if r.Held() != 0 {
		t.Errorf("still %d held past the bound", r.Held())
	}
	if got, want := len(e.vpp.Snapshot().Mappings), len(r.Desired().Mappings); got != want {
		t.Errorf("%d mappings past the bound, want %d", got, want)
	}
	if len(r.Pending()) == 0 {
		t.Error("the missing interfaces' features no longer pending")
	}
}

// TestHoldAgainAfterAnExpiredHold (issue 34, F1, seen on a real VPP 25.02):
// a hold that ran out, then interfaces that came back in an apply with no
// mapping operation, must not leave the hold spent: at the next VPP
// restart the mappings wait for the features again.
func TestHoldAgainAfterAnExpiredHold(t *testing.T) {
	e := newSimEnvWith(t, sim.Options{Traffic: true})
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = 50 * time.Millisecond
	data := cluster()
	r := e.renderer()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)

	// First restart: the hold runs out before the interfaces come.
	e.restartLate()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	time.Sleep(60 * time.Millisecond)
	e.apply(r, false)
	if r.Held() != 0 {
		t.Fatalf("still %d held past the bound", r.Held())
	}
	// The interfaces come back: an apply of their features only.
	e.vpp.FinishStartup()
	for name := range data.Interfaces {
		if err := r.UpdateInterface(name, data.Interfaces[name]); err != nil {
			t.Fatal(err)
		}
	}
	e.apply(r, false)
	e.inSync(r)

	// Second restart: the mappings wait again.
	e.restartLate()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if n := len(e.vpp.Snapshot().Mappings); n != 0 {
		t.Errorf("second restart: %d mappings added while the node's interfaces are missing, want 0 (held)", n)
	}
}
