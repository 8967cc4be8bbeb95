package sim

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/core"
)

// invoke sends one request and returns govpp's error.
func invoke(conn *core.Connection, req, reply api.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return conn.Invoke(ctx, req, reply)
}

// watch registers for interface events on conn.
func watch(t *testing.T, conn *core.Connection) api.Watcher {
	t.Helper()
	w, err := conn.WatchEvent(context.Background(), &interfaces.SwInterfaceEvent{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	r := &interfaces.WantInterfaceEventsReply{}
	if rv := call(t, conn, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 77}, r); rv != 0 {
		t.Fatalf("want_interface_events: %v", rv)
	}
	return w
}

// next waits for the next interface event.
func next(t *testing.T, w api.Watcher) *interfaces.SwInterfaceEvent {
	t.Helper()
	select {
	case e := <-w.Events():
		return e.(*interfaces.SwInterfaceEvent)
	case <-time.After(5 * time.Second):
		t.Fatal("no interface event")
		return nil
	}
}

func routeReq(vrf uint32, prefix string, add bool, t fib_types.FibPathType) *ipapi.IPRouteAddDel {
	p, err := ip_types.ParsePrefix(prefix)
	if err != nil {
		panic(err)
	}
	return &ipapi.IPRouteAddDel{IsAdd: add, Route: ipapi.IPRoute{
		TableID: vrf, Prefix: p, NPaths: 1,
		Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: t}},
	}}
}

func TestCrashes(t *testing.T) {
	crashers := []struct {
		name string
		req  api.Message
		why  string
	}{
		{"256 locals", lb("10.96.0.1", 80, true, 4, make([]nat44_ed.Nat44LbAddrPort, 256)...), "256 or more locals"},
		{"ICMP_UNREACH path", routeReq(1, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH), "ICMP_UNREACH"},
		{"ICMP_PROHIBIT path", routeReq(1, "10.96.0.19/32", true, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT), "outside table 0"},
	}
	for _, c := range crashers {
		t.Run(c.name, func(t *testing.T) {
			v := New(Options{})
			idx, _ := v.AddInterface("host-eth0", "")
			conn, err := core.Connect(v)
			if err != nil {
				t.Fatal(err)
			}
			enable(t, conn)
			pid := v.PID()
			if err := invoke(conn, c.req, replyFor2(c.req)); !errors.Is(err, ErrConnectionReset) {
				t.Errorf("crashing request: %v, want %v", err, ErrConnectionReset)
			}
			if v.Crashes() != 1 || !strings.Contains(v.LastCrash(), c.why) || v.PID() == pid {
				t.Errorf("crashes %d, last %q, pid %d (was %d)", v.Crashes(), v.LastCrash(), v.PID(), pid)
			}
			if err := invoke(conn, &memclnt.ControlPing{}, &memclnt.ControlPingReply{}); !errors.Is(err, ErrConnectionReset) {
				t.Errorf("call after the crash: %v", err)
			}
			conn.Disconnect()
			conn, err = core.Connect(v)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Disconnect()
			rc := &nat44_ed.Nat44ShowRunningConfigReply{}
			call(t, conn, &nat44_ed.Nat44ShowRunningConfig{}, rc)
			if rc.Sessions != 0 {
				t.Errorf("NAT44 still enabled after the crash: %+v", rc)
			}
			if got := v.Interfaces(); len(got) != 2 || got[1].Index != idx {
				t.Errorf("interfaces after the crash: %v", got)
			}
		})
	}
}

// replyFor2 extends replyFor to the messages this file sends.
func replyFor2(req api.Message) api.Message {
	if _, ok := req.(*ipapi.IPRouteAddDel); ok {
		return &ipapi.IPRouteAddDelReply{}
	}
	return replyFor(req)
}

func TestRoutes(t *testing.T) {
	v, conn := connect(t, Options{})
	drop := fib_types.FIB_API_PATH_TYPE_DROP
	r := &ipapi.IPRouteAddDelReply{}
	// Table 1 does not exist until the startup configuration makes it.
	if rv := call(t, conn, routeReq(1, "10.96.0.0/12", true, drop), r); rv != api.NO_SUCH_FIB {
		t.Errorf("route in a missing table: %v, want -3", rv)
	}
	v.CreateTable(1)
	call(t, conn, routeReq(1, "10.96.0.0/12", true, drop), r)
	first := r.StatsIndex
	call(t, conn, routeReq(1, "10.96.0.0/12", true, drop), r)
	if r.StatsIndex != first {
		t.Errorf("re-add: stats index %d, first %d", r.StatsIndex, first)
	}
	call(t, conn, routeReq(0, "10.96.0.0/12", true, drop), r)
	call(t, conn, routeReq(0, "10.96.5.0/24", true, fib_types.FIB_API_PATH_TYPE_NORMAL), r)
	want := []Route{
		{VRF: 0, Prefix: netip.MustParsePrefix("10.96.0.0/12"), Drop: true},
		{VRF: 0, Prefix: netip.MustParsePrefix("10.96.5.0/24"), Lookup: true}, // no interface, no next hop: a lookup in table 0
		{VRF: 1, Prefix: netip.MustParsePrefix("10.96.0.0/12"), Drop: true},
	}
	if got := v.Routes(); !reflect.DeepEqual(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	lookup := func(vrf uint32, dst string) (bool, bool) {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.routeLookupLocked(vrf, netip.MustParseAddr(dst))
	}
	for _, c := range []struct {
		vrf         uint32
		dst         string
		drop, found bool
	}{
		{1, "10.96.0.10", true, true},
		{0, "10.96.5.1", false, true}, // the longer prefix wins
		{0, "10.96.6.1", true, true},
		{1, "10.1.1.1", false, false},
		{7, "10.96.0.10", false, false},
	} {
		if d, f := lookup(c.vrf, c.dst); d != c.drop || f != c.found {
			t.Errorf("lookup %d %s: drop %v found %v, want %v %v", c.vrf, c.dst, d, f, c.drop, c.found)
		}
	}
	for range 2 { // deleting a missing route answers 0 too
		if rv := call(t, conn, routeReq(1, "10.96.0.0/12", false, drop), r); rv != 0 || r.StatsIndex != noIndex {
			t.Errorf("delete: %v, stats index %d", rv, r.StatsIndex)
		}
	}
	if got := v.Routes(); len(got) != 2 {
		t.Errorf("routes after delete: %v", got)
	}
}

// TestRejectRoutes: ICMP_UNREACH and ICMP_PROHIBIT paths work in table 0
// (records-acl-routes/c2.jsonl); pod traffic reaches them through a pod-VRF
// lookup route more specific than the pod VRF's drop route.
func TestRejectRoutes(t *testing.T) {
	v, conn := connect(t, Options{})
	v.CreateTable(1)
	for _, s := range []InterfaceSpec{{Name: "host-eth0"}, {Name: "host-pod", VRF: 1}} {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	enable(t, conn)
	r := &ipapi.IPRouteAddDelReply{}
	for _, req := range []*ipapi.IPRouteAddDel{
		routeReq(0, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_DROP),
		routeReq(1, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_DROP),
		routeReq(0, "10.96.0.10/32", true, fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH),
		routeReq(0, "10.96.0.11/32", true, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT),
		routeReq(1, "10.96.0.10/32", true, fib_types.FIB_API_PATH_TYPE_NORMAL),
	} {
		if rv := call(t, conn, req, r); rv != 0 {
			t.Fatalf("%v: %v", req.Route.Prefix, rv)
		}
	}
	if v.Crashes() != 0 {
		t.Fatalf("crashed: %s", v.LastCrash())
	}
	for _, c := range []struct {
		ingress, dst string
		want         Verdict
	}{
		{"host-pod", "10.96.0.10", Rejected}, // pod VRF /32 lookup -> table 0 reject
		{"host-pod", "10.96.0.11", Dropped},  // no pod-VRF /32: the pod VRF's drop
		{"host-pod", "10.96.0.12", Dropped},
		{"host-eth0", "10.96.0.11", Rejected},
		{"host-eth0", "10.96.0.12", Dropped},
	} {
		res := v.Trace(Packet{Ingress: c.ingress, Src: netip.MustParseAddr("10.1.1.2"), Dst: netip.MustParseAddr(c.dst),
			Proto: 6, DstPort: 80})
		if res.Verdict != c.want {
			t.Errorf("%s from %s: %v (%s), want %v", c.dst, c.ingress, res.Verdict, res.Reason, c.want)
		}
	}
}

// TestPodVRFServiceLookup: the route set with one route per cluster IP.
// The pod VRF's service-CIDR route, replaced in place from a drop by a
// lookup of table 0 (an add on the same prefix replaces the path and
// keeps the entry, c2-nat44.jsonl), sends pod traffic no translation took
// to table 0: a cluster IP's /32 reject refuses it, the rest of the
// service CIDR is dropped by table 0's drop route.
func TestPodVRFServiceLookup(t *testing.T) {
	v, conn := connect(t, Options{})
	v.CreateTable(1)
	for _, s := range []InterfaceSpec{{Name: "host-eth0"}, {Name: "host-pod", VRF: 1}} {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	enable(t, conn)
	r := &ipapi.IPRouteAddDelReply{}
	var podStats uint32
	for i, req := range []*ipapi.IPRouteAddDel{
		routeReq(0, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_DROP),
		routeReq(1, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_DROP), // an earlier version's
		routeReq(0, "10.96.0.10/32", true, fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH),
		routeReq(1, "10.96.0.0/12", true, fib_types.FIB_API_PATH_TYPE_NORMAL), // lookup of table 0
	} {
		if rv := call(t, conn, req, r); rv != 0 {
			t.Fatalf("%v: %v", req.Route.Prefix, rv)
		}
		switch i {
		case 1:
			podStats = r.StatsIndex
		case 3:
			if r.StatsIndex != podStats {
				t.Errorf("replacing the path: stats index %d, want the entry's %d", r.StatsIndex, podStats)
			}
		}
	}
	var pod []Route
	for _, rt := range v.Routes() {
		if rt.VRF == 1 {
			pod = append(pod, rt)
		}
	}
	if len(pod) != 1 || !pod[0].Lookup || pod[0].LookupVRF != 0 || pod[0].Drop {
		t.Fatalf("pod VRF routes %+v, want the /12 lookup of table 0 alone", pod)
	}
	for _, c := range []struct {
		ingress, dst string
		want         Verdict
		reason       string
	}{
		{"host-pod", "10.96.0.10", Rejected, "reject route covering 10.96.0.10 in VRF 0"},
		{"host-pod", "10.96.0.12", Dropped, "covering 10.96.0.12 in VRF 0), reached from VRF 1 by its lookup route"},
		{"host-eth0", "10.96.0.10", Rejected, "in VRF 0"},
		{"host-eth0", "10.96.0.12", Dropped, "covering 10.96.0.12 in VRF 0)"},
	} {
		res := v.Trace(Packet{Ingress: c.ingress, Src: netip.MustParseAddr("10.1.1.2"), Dst: netip.MustParseAddr(c.dst),
			Proto: 6, DstPort: 80})
		if res.Verdict != c.want || !strings.Contains(res.Reason, c.reason) {
			t.Errorf("%s from %s: %v (%s), want %v (%s)", c.dst, c.ingress, res.Verdict, res.Reason, c.want, c.reason)
		}
	}
}

// TestMissingTableAfterRestart: a restart loses every table; the startup
// configuration's come back with its interfaces, and a NAT44 local in a
// VRF makes its table (FACTS §6). Until then a route there answers -3.
// An interface in a VRF does not make the table.
func TestMissingTableAfterRestart(t *testing.T) {
	v := New(Options{})
	v.CreateTable(1)
	v.CreateTable(2)
	if _, err := v.CreateInterface(InterfaceSpec{Name: "loop9", VRF: 4}); err != nil {
		t.Fatal(err)
	}
	for vrf, want := range map[uint32]bool{0: true, 1: true, 2: true, 4: false} {
		if got := v.tableExists(vrf); got != want {
			t.Errorf("table %d exists %v before the restart, want %v", vrf, got, want)
		}
	}
	v.RestartWith(RestartOptions{InterfacesAfter: time.Hour})
	defer v.Close()
	for vrf, want := range map[uint32]bool{0: true, 1: false, 2: false, 3: false} {
		if got := v.tableExists(vrf); got != want {
			t.Errorf("table %d exists %v after the restart, want %v", vrf, got, want)
		}
	}
	v.mu.Lock()
	v.nat.statics[o2iKey{}] = &staticMapping{locals: []local{{vrf: 3}}}
	v.finishStartupLocked()
	v.mu.Unlock()
	for _, vrf := range []uint32{1, 2, 3} {
		if !v.tableExists(vrf) {
			t.Errorf("table %d missing once the startup configuration ran", vrf)
		}
	}
}

func TestInterfaceEvents(t *testing.T) {
	v, conn := connect(t, Options{})
	w := watch(t, conn)
	idx, _ := v.AddInterface("host-a", "default/a")
	if e := next(t, w); e.SwIfIndex != interface_types.InterfaceIndex(idx) || e.Flags != 3 || e.Deleted || e.PID != 77 {
		t.Errorf("add: %+v", e)
	}
	b, _ := v.AddInterface("host-b", "default/b")
	next(t, w)
	if err := v.RecreateInterface("host-a"); err != nil {
		t.Fatal(err)
	}
	if e := next(t, w); e.SwIfIndex != interface_types.InterfaceIndex(idx) || !e.Deleted {
		t.Errorf("re-create, first event: %+v", e)
	}
	if e := next(t, w); e.SwIfIndex != interface_types.InterfaceIndex(idx) || e.Flags != 3 {
		t.Errorf("re-create, second event: %+v", e)
	}
	if got := v.Interfaces(); got[1].Index != idx || got[1].Tag != "default/a" {
		t.Errorf("re-created interface: %v", got)
	}
	if err := v.DelInterface("host-b"); err != nil {
		t.Fatal(err)
	}
	if e := next(t, w); e.SwIfIndex != interface_types.InterfaceIndex(b) || !e.Deleted {
		t.Errorf("delete: %+v", e)
	}
	if again, _ := v.AddInterface("host-c", ""); again != b {
		t.Errorf("freed index %d not reused: got %d", b, again)
	}
	next(t, w)
	r := &interfaces.WantInterfaceEventsReply{}
	if rv := call(t, conn, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 77}, r); rv != api.INVALID_REGISTRATION {
		t.Errorf("registering twice: %v", rv)
	}
}

// TestRestartWithDelayedInterfaces: after a restart only local0 exists
// until the startup configuration has run; then every interface is back
// with its index, name and tag, and a client registered on the new
// connection hears of each.
func TestRestartWithDelayedInterfaces(t *testing.T) {
	v := New(Options{})
	defer v.Close()
	for _, n := range []string{"loop0", "host-a", "host-b"} {
		if _, err := v.AddInterface(n, "t-"+n); err != nil {
			t.Fatal(err)
		}
	}
	before := v.Interfaces()
	conn, err := core.Connect(v)
	if err != nil {
		t.Fatal(err)
	}
	_ = watch(t, conn) // a client subscribed when VPP restarts
	// 300 ms: the client must reconnect and register before the interfaces
	// come back (10 ms was missed under -race on a loaded machine once the
	// message table grew with the pod messages, pods.go).
	v.RestartWith(RestartOptions{InterfacesAfter: 300 * time.Millisecond})
	conn.Disconnect()
	conn, err = core.Connect(v)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Disconnect() }()
	w := watch(t, conn)
	for _, want := range before[1:] {
		if e := next(t, w); e.SwIfIndex != interface_types.InterfaceIndex(want.Index) || e.Flags != 3 {
			t.Errorf("event %+v, want index %d up", e, want.Index)
		}
	}
	if got := v.Interfaces(); !reflect.DeepEqual(got, before) {
		t.Errorf("interfaces after restart %v, want %v", got, before)
	}

	// The window before the startup configuration ran, held open.
	v.RestartWith(RestartOptions{InterfacesAfter: time.Hour})
	conn.Disconnect()
	conn, err = core.Connect(v)
	if err != nil {
		t.Fatal(err)
	}
	ifs := dump(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
	if len(ifs) != 1 || ifs[0].(*interfaces.SwInterfaceDetails).InterfaceName != "local0" {
		t.Errorf("dump right after restart: %v", ifs)
	}
	v.FinishStartup()
	if got := v.Interfaces(); !reflect.DeepEqual(got, before) {
		t.Errorf("interfaces after the startup configuration %v, want %v", got, before)
	}
}

// TestSessionLimitNeedsTable: a per-VRF session limit needs the FIB
// table: one of an interface, or one added through ip_table_add_del.
func TestSessionLimitNeedsTable(t *testing.T) {
	v, conn := connect(t, Options{})
	for _, s := range []InterfaceSpec{{Name: "host-eth0"}, {Name: "host-pod", VRF: 1}} {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	limit := func(vrf uint32) api.VPPApiError {
		return call(t, conn, &nat44_ed.Nat44SetSessionLimit{SessionLimit: 1000, VrfID: vrf}, &nat44_ed.Nat44SetSessionLimitReply{})
	}
	if rv := limit(1); rv != api.UNSUPPORTED {
		t.Errorf("session limit while disabled: %v", rv)
	}
	enable(t, conn)
	for vrf, want := range map[uint32]api.VPPApiError{0: 0, 1: 0, 5: api.UNSPECIFIED} {
		if rv := limit(vrf); rv != want {
			t.Errorf("session limit in VRF %d: %v, want %v", vrf, rv, want)
		}
	}
	call(t, conn, &ipapi.IPTableAddDel{IsAdd: true, Table: ipapi.IPTable{TableID: 5}}, &ipapi.IPTableAddDelReply{})
	if rv := limit(5); rv != 0 {
		t.Errorf("session limit in an added table: %v", rv)
	}
}
