package pods

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ip_neighbor"

	"contiv.dev/vpp/plugins/vpp/sim"
)

// TestBatchedAddsFailOneByOne: ADDs taken in together (one addBatch) get
// their VPP interfaces in one pipeline; VPP refusing one pod's interface
// (its creation, or one of its settings) fails that pod alone, undone
// (no interface, no address, no record), and the others are wired.
func TestBatchedAddsFailOneByOne(t *testing.T) {
	e := newEnv(t, 24)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := []string{"a", "b", "c", "d"}
	var calls []*Call
	for _, pod := range pods {
		req := e.request(pod, e.netns())
		host := hostIfName(req.ContainerID)
		mac, err := makeVeth(req.Netns, req.IfName, host)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, &Call{Op: OpAdd, Req: req, ctx: ctx, prep: prepared{hostIf: host, podMAC: mac.String()}})
	}
	// b's creation is refused; d's interface is made, its static
	// neighbour (d's MAC) refused.
	refusedCreate := hostIfName(calls[1].Req.ContainerID)
	dMAC := calls[3].prep.podMAC
	var dRefused atomic.Bool
	e.vpp.SetFaults(sim.Faults{Rate: 1, Retval: api.INVALID_VALUE, Match: func(m api.Message) bool {
		switch r := m.(type) {
		case *af_packet.AfPacketCreateV3:
			return r.HostIfName == refusedCreate
		case *ip_neighbor.IPNeighborAddDel:
			if r.IsAdd && r.Neighbor.MacAddress.String() == dMAC {
				dRefused.Store(true)
				return true
			}
		}
		return false
	}})
	outs := e.m.addsLoop(ctx, calls)
	e.vpp.SetFaults(sim.Faults{})
	if !dRefused.Load() {
		t.Fatal("d's neighbour was never asked for: the test does not test a failed setting")
	}
	for i, c := range calls {
		failed := i == 1 || i == 3
		if (outs[i].err != nil) != failed {
			t.Errorf("pod %s: error %v; want failed %v", c.Req.Pod, outs[i].err, failed)
		}
		if !failed {
			if _, ok := e.podInterfaces()["default/"+c.Req.Pod]; !ok {
				t.Errorf("pod %s is not wired in VPP", c.Req.Pod)
			}
			if a, ok := e.alloc.Lookup(podOf(c.Req)); !ok || a != outs[i].res.IP.Addr() {
				t.Errorf("pod %s: IPAM holds %v %v; want %s", c.Req.Pod, a, ok, outs[i].res.IP)
			}
			continue
		}
		if i, ok := e.podInterfaces()["default/"+c.Req.Pod]; ok {
			t.Errorf("pod %s failed, its interface %s is left", c.Req.Pod, i.Name)
		}
		if a, ok := e.alloc.Lookup(podOf(c.Req)); ok {
			t.Errorf("pod %s failed, IPAM still holds %s", c.Req.Pod, a)
		}
		if _, err := os.Stat(records{dir: e.dir}.file(podOf(c.Req))); err == nil {
			t.Errorf("pod %s failed, its record is left", c.Req.Pod)
		}
	}
	if d, ok := e.vpp.InterfaceNamed("host-" + hostIfName(calls[3].Req.ContainerID)); ok {
		t.Errorf("d's half-made interface %s (index %d) is left", d.Name, d.Index)
	}
}
