package pods

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestVPPRestartWaitsForTheStartupConfiguration: VPP restarts and runs
// its startup configuration late (its API answers first). The pods are
// not re-created before VPP has the node's own interfaces: nothing is
// made (no pod interface, no gateway loopback), the manager is not back
// and says why; the startup configuration's interfaces get their indexes
// of before (made first, the pods' would have taken them). Once VPP made
// them, the interface's event brings every pod back, without waiting for
// a resync. A new pod's ADD meanwhile fails, not ready, making nothing.
func TestVPPRestartWaitsForTheStartupConfiguration(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	startup := []string{"tap0", "loop1"}
	before := map[string]uint32{}
	for _, name := range startup {
		idx, err := e.vpp.CreateInterface(sim.InterfaceSpec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		before[name] = idx
	}
	e.m.p.StartupInterfaces = func() []string { return startup }
	var reqs []Request
	var res []Result
	for _, pod := range []string{"a", "b"} {
		r := e.request(pod, e.netns())
		x, err := e.m.Add(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		reqs, res = append(reqs, r), append(res, x)
	}

	connects := e.conn.Status().Connects
	e.vpp.RestartWith(sim.RestartOptions{InterfacesAfter: time.Hour})
	defer e.vpp.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for e.conn.Status().Connects == connects {
		if wctx.Err() != nil {
			t.Fatal("no reconnection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ev := resyncEvent()
	ev.DataplaneRestarted = true
	err := e.m.Resync(ctx, ev)
	if err == nil || !strings.Contains(err.Error(), "startup configuration") {
		t.Fatalf("resync before VPP's startup configuration ran: %v; want an error saying the pods wait for it", err)
	}
	if n := len(e.vpp.Interfaces()); n != 1 {
		t.Fatalf("VPP has %d interfaces before its startup configuration ran: %v; want local0 alone (nothing made)", n, e.vpp.Interfaces())
	}
	if back, why := e.m.Back(); back || !strings.Contains(why, "2 of 2 pods not back") {
		t.Fatalf("Back() = %v %q; want not back, 2 of 2 pods", back, why)
	}

	// A new pod's ADD meanwhile makes nothing either: not ready, retry.
	late := e.request("late", e.netns())
	if _, err := e.m.Add(ctx, late); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "startup configuration") {
		t.Fatalf("ADD before VPP's startup configuration ran: %v; want ErrNotReady saying so", err)
	}
	if n := len(e.vpp.Interfaces()); n != 1 {
		t.Fatalf("an ADD made interfaces before VPP's startup configuration ran: %v", e.vpp.Interfaces())
	}
	e.assertGone(late)

	e.vpp.FinishStartup()
	for _, name := range startup {
		if d, _ := e.vpp.InterfaceNamed(name); d.Index != before[name] {
			t.Errorf("the startup configuration's %s came back at index %d; want %d", name, d.Index, before[name])
		}
	}
	iev := &service.InterfaceEvent{Name: "tap0"}
	if !e.m.HandlesEvent(iev) {
		t.Fatal("the manager waiting for the startup configuration does not take VPP's interface events")
	}
	if err := e.m.Update(ctx, iev); err != nil {
		t.Fatal(err)
	}
	if back, why := e.m.Back(); !back {
		t.Fatalf("not back once VPP's startup configuration ran: %s", why)
	}
	for i, r := range reqs {
		e.assertWired(r, res[i])
	}
	if e.m.HandlesEvent(iev) {
		t.Error("the manager still takes interface events with every pod back")
	}
}
