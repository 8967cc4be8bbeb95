package nat44_test

import (
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestFullApplyClearsPendingVPPHolds (issue 34 F2): a full apply takes
// VPP's dump as the truth about interfaces too. After a VPP restart the
// node's interface features wait for their interfaces (pending); should
// VPP then hold them with the features without the renderer having seen
// its own calls succeed (on the real VPP 25.02: feature calls that VPP
// ran while the agent's connection broke under them, answered "not
// connected"), the next full apply finds nothing to do for them and must
// stop waiting: before, the pending set kept them, and readiness said
// "waiting for it to re-create interface" for minutes while VPP had it.
func TestFullApplyClearsPendingVPPHolds(t *testing.T) {
	e := newSimEnvWith(t, sim.Options{Traffic: true})
	e.cfg.NodeInterfaces = []string{"GbE", "VXLAN-BVI", "VPP-Host"}
	e.cfg.HoldMappings = time.Hour
	data := cluster()
	r := e.resynced(data)

	e.restartLate()
	if err := r.Resync(data); err != nil {
		t.Fatal(err)
	}
	e.apply(r, true)
	if len(r.Pending()) == 0 {
		t.Fatal("no interface pending after a restart whose interfaces come late")
	}
	// VPP makes the interfaces, and they get their features from calls
	// this renderer never saw answered (another renderer's here).
	e.vpp.FinishStartup()
	e.resynced(data)

	e.apply(r, true)
	if p := r.Pending(); len(p) != 0 {
		t.Errorf("after a full apply against a VPP that holds every feature, still pending: %+v", p)
	}
	if n := r.Held(); n != 0 {
		t.Errorf("%d mappings still held", n)
	}
	e.inSync(r)
}
