package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
)

// answerOf returns an empty reply for any request the simulator speaks.
func answerOf(t *testing.T, v *VPP, req api.Message) api.Message {
	t.Helper()
	for _, d := range v.defs {
		if d.req.GetMessageName() == req.GetMessageName() {
			return newMsg(d.answers[len(d.answers)-1])
		}
	}
	t.Fatalf("the simulated VPP does not speak %s", req.GetMessageName())
	return nil
}

// send applies requests through the binary API; each must succeed.
func send(t *testing.T, v *VPP, conn *core.Connection, reqs ...api.Message) {
	t.Helper()
	for _, req := range reqs {
		if rv := call(t, conn, req, answerOf(t, v, req)); rv != 0 {
			t.Fatalf("%s %+v: retval %v", req.GetMessageName(), req, rv)
		}
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// lbTo builds a load-balanced out2in-only TCP mapping ext:80 to backends
// "ip:port" in VRF 1 with probability 1.
func lbTo(ext string, backends ...string) *nat44_ed.Nat44AddDelLbStaticMapping {
	var locals []nat44_ed.Nat44LbAddrPort
	for _, b := range backends {
		a := ap(b)
		locals = append(locals, nat44_ed.Nat44LbAddrPort{Addr: a.Addr().As4(), Port: a.Port(), Probability: 1, VrfID: 1})
	}
	return lb(ext, 80, true, nat_types.NAT_IS_OUT2IN_ONLY, locals...)
}

// delLocal deletes backend "ip:port" (VRF 1) from the mapping ext:80.
func delLocal(ext, backend string) *nat44_ed.Nat44LbStaticMappingAddDelLocal {
	a := ap(backend)
	return localOp(ext, nat44_ed.Nat44LbAddrPort{Addr: a.Addr().As4(), Port: a.Port(), VrfID: 1}, false)
}

// sessionVPP builds a simulated VPP with a client pod on tap1 (inside and
// outside) and these out2in-only TCP services, forwarding on:
//   - A 10.96.0.10:80 load-balanced to 10.1.1.2:8080, 10.1.1.3:8080, 10.1.1.4:8080
//   - B 10.96.0.20:80 load-balanced to 10.1.1.2:8080, 10.1.1.5:8080, 10.1.1.6:8080
//     (A and B share the backend 10.1.1.2:8080)
//   - C 10.96.0.30:80 load-balanced to 10.1.1.2:9090, 10.1.1.5:9090 (same IPs, other port)
//   - S 10.96.0.40:80 static to 10.1.1.2:8080
func sessionVPP(t *testing.T, opts Options) (*VPP, *core.Connection) {
	t.Helper()
	v, conn := connect(t, opts)
	tap1, _ := v.AddInterface("tap1", "default/client")
	enable(t, conn)
	send(t, v, conn,
		feature(tap1, true, true), feature(tap1, false, true),
		&nat44_ed.Nat44ForwardingEnableDisable{Enable: true},
		lbTo("10.96.0.10", "10.1.1.2:8080", "10.1.1.3:8080", "10.1.1.4:8080"),
		lbTo("10.96.0.20", "10.1.1.2:8080", "10.1.1.5:8080", "10.1.1.6:8080"),
		lbTo("10.96.0.30", "10.1.1.2:9090", "10.1.1.5:9090"),
		static("10.96.0.40", 80, "10.1.1.2", true, nat_types.NAT_IS_OUT2IN_ONLY),
	)
	return v, conn
}

// fromPod is a TCP packet from the client pod to dst:80.
func fromPod(dst string) Packet {
	return Packet{Src: ip("10.1.2.7"), Dst: ip(dst), Proto: 6, DstPort: 80, Ingress: "tap1"}
}

// openMany opens n sessions to dst from the client pod, source ports from
// base on.
func openMany(t *testing.T, v *VPP, dst string, base uint16, n int) {
	t.Helper()
	for i := range n {
		if _, err := v.OpenSession(fromPod(dst), base+uint16(i)); err != nil {
			t.Fatalf("open %s: %v", dst, err)
		}
	}
}

func TestSessionCutRules(t *testing.T) {
	shared := ap("10.1.1.2:8080")
	be := func(s Session, backends ...string) bool {
		return slices.ContainsFunc(backends, func(b string) bool { return s.Backend == ap(b) })
	}
	svc := func(s Session, ext string) bool { return s.Frontend.IP == ip(ext) }
	// oldest returns the ID of the oldest session of a frontend.
	oldest := func(all []Session, ext string) uint64 {
		for _, s := range all {
			if svc(s, ext) {
				return s.ID
			}
		}
		return 0
	}
	tests := []struct {
		name string
		reqs []api.Message
		// cut tells, from the sessions before, which must be cut.
		cut func(s Session, before []Session) bool
	}{
		{
			name: "delete a shared local of A: its load-balanced sessions in A and B go, static and other-port ones stay",
			reqs: []api.Message{delLocal("10.96.0.10", "10.1.1.2:8080")},
			cut:  func(s Session, _ []Session) bool { return s.LoadBalanced && s.Backend == shared },
		},
		{
			name: "delete a local of A only A uses",
			reqs: []api.Message{delLocal("10.96.0.10", "10.1.1.3:8080")},
			cut:  func(s Session, _ []Session) bool { return be(s, "10.1.1.3:8080") },
		},
		{
			name: "add a local: nothing cut",
			reqs: []api.Message{localOp("10.96.0.10", lbLocal("10.1.1.9", 1), true)},
			cut:  func(Session, []Session) bool { return false },
		},
		{
			name: "delete the whole mapping B: sessions to its locals in every load-balanced mapping",
			reqs: []api.Message{lb("10.96.0.20", 80, false, 0)},
			cut: func(s Session, _ []Session) bool {
				return s.LoadBalanced && be(s, "10.1.1.2:8080", "10.1.1.5:8080", "10.1.1.6:8080")
			},
		},
		{
			name: "delete and re-add C (same IPs, other port): only port 9090 sessions",
			reqs: []api.Message{lb("10.96.0.30", 80, false, 0), lbTo("10.96.0.30", "10.1.1.2:9090", "10.1.1.5:9090")},
			cut:  func(s Session, _ []Session) bool { return be(s, "10.1.1.2:9090", "10.1.1.5:9090") },
		},
		{
			name: "delete the static mapping: only its first session",
			reqs: []api.Message{static("10.96.0.40", 80, "10.1.1.2", false, 0)},
			cut:  func(s Session, before []Session) bool { return s.ID == oldest(before, "10.96.0.40") },
		},
		{
			name: "interface, pool and identity changes: nothing cut",
			reqs: []api.Message{
				pool("192.168.16.1", true, false), identity("192.168.16.1", 0, true),
				&nat44_ed.Nat44ForwardingEnableDisable{Enable: false},
			},
			cut: func(Session, []Session) bool { return false },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reported int
			v, conn := sessionVPP(t, Options{SessionSeed: 3, OnCut: func(n int) { reported += n }})
			for i, dst := range []string{"10.96.0.10", "10.96.0.20", "10.96.0.30", "10.96.0.40"} {
				openMany(t, v, dst, uint16(10000+1000*i), 30)
			}
			before := v.Sessions()
			// The rules need sessions to the shared backend in A and in B.
			for _, ext := range []string{"10.96.0.10", "10.96.0.20"} {
				if !slices.ContainsFunc(before, func(s Session) bool { return svc(s, ext) && s.Backend == shared }) {
					t.Fatalf("no session of %s to %v: %v", ext, shared, before)
				}
			}
			send(t, v, conn, tc.reqs...)
			var wantCut uint64
			for _, s := range before {
				want := !tc.cut(s, before)
				if want {
					wantCut++
				}
				if got := v.SessionAlive(s.ID); got == want {
					continue
				} else if want {
					t.Errorf("session %+v cut", s)
				} else {
					t.Errorf("session %+v alive", s)
				}
			}
			wantCut = uint64(len(before)) - wantCut
			if v.SessionsCut() != wantCut || uint64(reported) != wantCut {
				t.Errorf("SessionsCut %d, OnCut reported %d, want %d", v.SessionsCut(), reported, wantCut)
			}
			if v.SessionsLost() != 0 {
				t.Errorf("SessionsLost %d", v.SessionsLost())
			}
			if got := len(v.Sessions()); uint64(got) != uint64(len(before))-wantCut {
				t.Errorf("%d live sessions, want %d", got, uint64(len(before))-wantCut)
			}
		})
	}
}

// TestFailedChangesCutNothing: refused requests and requests VPP answers
// 0 without doing anything cut no session.
func TestFailedChangesCutNothing(t *testing.T) {
	v, conn := sessionVPP(t, Options{})
	openMany(t, v, "10.96.0.30", 10000, 20)
	openMany(t, v, "10.96.0.40", 20000, 5)
	n := len(v.Sessions())
	for _, req := range []api.Message{
		delLocal("10.96.0.30", "10.1.1.2:9090"),             // two locals left: refused
		delLocal("10.96.0.10", "10.1.1.7:8080"),             // no such local
		lb("10.96.0.40", 80, false, 0),                      // load-balanced delete of a static key
		static("10.96.0.30", 80, "10.1.1.2", false, 0),      // static delete of a load-balanced key
		static("10.96.0.41", 80, "10.1.1.2", false, 0),      // no such mapping
		localOp("10.96.0.30", lbLocal("10.1.1.2", 1), true), // add: never cuts
	} {
		call(t, conn, req, answerOf(t, v, req))
	}
	if v.SessionsCut() != 0 || len(v.Sessions()) != n {
		t.Errorf("cut %d, %d of %d sessions alive", v.SessionsCut(), len(v.Sessions()), n)
	}
}

func TestSessionsLost(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		v, _ := sessionVPP(t, Options{})
		openMany(t, v, "10.96.0.10", 10000, 7)
		v.Restart()
		if v.SessionsLost() != 7 || v.SessionsCut() != 0 || len(v.Sessions()) != 0 {
			t.Errorf("lost %d cut %d live %v", v.SessionsLost(), v.SessionsCut(), v.Sessions())
		}
	})
	t.Run("plugin disable", func(t *testing.T) {
		v, conn := sessionVPP(t, Options{})
		openMany(t, v, "10.96.0.40", 10000, 4)
		send(t, v, conn, &nat44_ed.Nat44EdPluginEnableDisable{Enable: false})
		if v.SessionsLost() != 4 || v.SessionsCut() != 0 || len(v.Sessions()) != 0 {
			t.Errorf("lost %d cut %d live %v", v.SessionsLost(), v.SessionsCut(), v.Sessions())
		}
		if _, err := v.OpenSession(fromPod("10.96.0.40"), 1); err == nil {
			t.Errorf("session opened with the plugin disabled")
		}
	})
}

func TestOpenSession(t *testing.T) {
	v, _ := sessionVPP(t, Options{})
	s, err := v.OpenSession(fromPod("10.96.0.40"), 4000)
	if err != nil {
		t.Fatal(err)
	}
	want := Session{
		ID: s.ID, Client: ap("10.1.2.7:4000"), Frontend: MappingKey{IP: ip("10.96.0.40"), Port: 80, Proto: TCP},
		Backend: ap("10.1.1.2:8080"), BackendVRF: 1,
	}
	if s != want || !v.SessionAlive(s.ID) {
		t.Errorf("session %+v, want %+v", s, want)
	}
	again, err := v.OpenSession(fromPod("10.96.0.40"), 4000)
	if err != nil || again != s {
		t.Errorf("same flow again: %+v %v, want %+v", again, err, s)
	}
	other, _ := v.OpenSession(fromPod("10.96.0.40"), 4001)
	if other.ID == s.ID {
		t.Errorf("another source port shares session %d", s.ID)
	}
	for _, p := range []Packet{
		fromPod("10.96.0.99"), // no mapping
		{Src: ip("10.1.2.7"), Dst: ip("10.96.0.40"), Proto: 17, DstPort: 80, Ingress: "tap1"}, // wrong protocol
		{Src: ip("10.1.2.7"), Dst: ip("10.96.0.40"), Proto: 6, DstPort: 80, Ingress: "nope"},  // unknown interface
	} {
		if s, err := v.OpenSession(p, 5000); err == nil {
			t.Errorf("%+v: session %+v", p, s)
		}
	}
	if got := v.Sessions(); len(got) != 2 || got[0].ID >= got[1].ID {
		t.Errorf("sessions %+v", got)
	}
}

// addLBAllowingZero adds a load-balanced mapping whose locals may have
// probability 0, which VPP 25.02 accepts (FACTS.md §2).
// TEMPORARY: while the simulator refuses probability 0, the mapping is
// added with 1 and the probabilities are set in its state afterwards.
func addLBAllowingZero(t *testing.T, v *VPP, conn *core.Connection, req *nat44_ed.Nat44AddDelLbStaticMapping) {
	t.Helper()
	rv := call(t, conn, req, answerOf(t, v, req))
	if rv == 0 {
		return
	}
	if rv != api.INVALID_VALUE {
		t.Fatalf("load-balanced mapping: %v", rv)
	}
	probs := make([]uint8, len(req.Locals))
	one := *req
	one.Locals = slices.Clone(req.Locals)
	for i := range one.Locals {
		probs[i] = one.Locals[i].Probability
		one.Locals[i].Probability = max(probs[i], 1)
	}
	send(t, v, conn, &one)
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.nat.statics[o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}]
	for i := range m.locals {
		m.locals[i].prob = probs[i]
	}
}

func weighted(ext string, affinity uint32, locals ...nat44_ed.Nat44LbAddrPort) *nat44_ed.Nat44AddDelLbStaticMapping {
	r := lb(ext, 80, true, nat_types.NAT_IS_OUT2IN_ONLY, locals...)
	r.Affinity = affinity
	return r
}

// TestSessionProbabilities: backends are chosen by probability, a local
// with probability 0 never, and the choice is deterministic per seed.
func TestSessionProbabilities(t *testing.T) {
	const n = 2000
	run := func(seed uint64) []netip.AddrPort {
		v, conn := sessionVPP(t, Options{SessionSeed: seed})
		addLBAllowingZero(t, v, conn, weighted("10.96.0.50", 0,
			lbLocal("10.1.1.2", 3), lbLocal("10.1.1.3", 1), lbLocal("10.1.1.4", 0)))
		var got []netip.AddrPort
		for i := range n {
			s, err := v.OpenSession(fromPod("10.96.0.50"), uint16(1000+i))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s.Backend)
		}
		return got
	}
	a := run(1)
	count := map[netip.AddrPort]int{}
	for _, b := range a {
		count[b]++
	}
	if count[ap("10.1.1.4:8080")] != 0 {
		t.Errorf("probability-0 local picked %d times", count[ap("10.1.1.4:8080")])
	}
	share := float64(count[ap("10.1.1.2:8080")]) / n
	if share < 0.7 || share > 0.8 || count[ap("10.1.1.2:8080")]+count[ap("10.1.1.3:8080")] != n {
		t.Errorf("probabilities 3:1 gave %v", count)
	}
	if b := run(1); !slices.Equal(a, b) {
		t.Errorf("same seed, different backends")
	}
	if c := run(2); slices.Equal(a, c) {
		t.Errorf("different seeds, same backends")
	}
}

func TestSessionAffinity(t *testing.T) {
	v, conn := sessionVPP(t, Options{SessionSeed: 5})
	send(t, v, conn, weighted("10.96.0.60", 10800, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1), lbLocal("10.1.1.4", 1)))
	send(t, v, conn, weighted("10.96.0.61", 0, lbLocal("10.1.1.2", 1), lbLocal("10.1.1.3", 1), lbLocal("10.1.1.4", 1)))
	backends := func(ext, client string, ports int) map[netip.AddrPort]int {
		got := map[netip.AddrPort]int{}
		for i := range ports {
			p := Packet{Src: ip(client), Dst: ip(ext), Proto: 6, DstPort: 80, Ingress: "tap1"}
			s, err := v.OpenSession(p, uint16(20000+i))
			if err != nil {
				t.Fatal(err)
			}
			got[s.Backend]++
		}
		return got
	}
	sticky := backends("10.96.0.60", "10.1.2.7", 30)
	if len(sticky) != 1 {
		t.Fatalf("with affinity one client got %v", sticky)
	}
	if got := backends("10.96.0.61", "10.1.2.7", 30); len(got) < 2 {
		t.Errorf("without affinity one client got only %v", got)
	}
	// Other clients are spread.
	spread := map[netip.AddrPort]bool{}
	for c := range 20 {
		for b := range backends("10.96.0.60", fmt.Sprintf("10.1.3.%d", c+1), 3) {
			spread[b] = true
		}
	}
	if len(spread) < 2 {
		t.Errorf("20 clients all on %v", spread)
	}
	// Deleting the sticky backend moves the client elsewhere, for good.
	var gone netip.AddrPort
	for b := range sticky {
		gone = b
	}
	send(t, v, conn, delLocal("10.96.0.60", gone.String()))
	moved := backends("10.96.0.60", "10.1.2.7", 30)
	if len(moved) != 1 || moved[gone] != 0 {
		t.Errorf("after deleting %v the client got %v", gone, moved)
	}
}

// TestAllZeroProbabilitiesCrash: the first packet to a load-balanced
// mapping whose locals all have probability 0 crashes VPP 25.02.
func TestAllZeroProbabilitiesCrash(t *testing.T) {
	v, conn := sessionVPP(t, Options{})
	openMany(t, v, "10.96.0.40", 10000, 2)
	addLBAllowingZero(t, v, conn, weighted("10.96.0.70", 0, lbLocal("10.1.1.2", 0), lbLocal("10.1.1.3", 0)))
	p := fromPod("10.96.0.70")
	if r := v.Translate(p); r.Verdict != Dropped || r.Reason != lbSumCrashReason {
		t.Errorf("Translate: %+v", r)
	}
	if len(v.Sessions()) != 2 {
		t.Fatalf("the oracle changed the sessions: %v", v.Sessions())
	}
	if _, err := v.OpenSession(p, 1); !errors.Is(err, ErrZeroProbabilities) {
		t.Errorf("OpenSession: %v", err)
	}
	if v.SessionsLost() != 2 || len(v.Sessions()) != 0 || v.SessionsCut() != 0 {
		t.Errorf("after the crash: lost %d, live %v, cut %d", v.SessionsLost(), v.Sessions(), v.SessionsCut())
	}
}

// TestSessionReplyDropped: a translated packet whose reply the output
// feature drops opens no session.
func TestSessionReplyDropped(t *testing.T) {
	v, conn := connect(t, Options{})
	eth, _ := v.AddInterface("eth0", "")
	enable(t, conn)
	send(t, v, conn,
		&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(eth)},
		pool("192.168.16.1", true, false),
		lbTo("20.20.20.20", "10.1.1.2:8080", "10.1.1.3:8080"),
	)
	p := Packet{Src: ip("8.8.8.8"), Dst: ip("20.20.20.20"), Proto: 6, DstPort: 80, Ingress: "eth0"}
	if s, err := v.OpenSession(p, 1000); err == nil {
		t.Errorf("session %+v opened though the reply is dropped", s)
	}
	send(t, v, conn, identity("20.20.20.20", 1, true))
	if _, err := v.OpenSession(p, 1000); err != nil {
		t.Errorf("with the identity mapping: %v", err)
	}
}

// addLocalAllowingZero adds a local that may have probability 0, which
// VPP 25.02 accepts (FACTS.md §3: the placeholder 0.0.0.0:0).
// TEMPORARY: while the simulator refuses probability 0, the local is
// added with 1 and its probability set in the state afterwards.
func addLocalAllowingZero(t *testing.T, v *VPP, conn *core.Connection, req *nat44_ed.Nat44LbStaticMappingAddDelLocal) {
	t.Helper()
	rv := call(t, conn, req, answerOf(t, v, req))
	if rv == 0 {
		return
	}
	if rv != api.INVALID_VALUE || req.Local.Probability != 0 {
		t.Fatalf("add local: %v", rv)
	}
	one := *req
	one.Local.Probability = 1
	send(t, v, conn, &one)
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.nat.statics[o2iKey{addr: ip4(req.ExternalAddr), port: req.ExternalPort, proto: req.Protocol}]
	m.locals[len(m.locals)-1].prob = 0
}

// TestTwoToOneThroughPlaceholder: going from two backends to one through
// a probability-0 placeholder local keeps the remaining backend's
// sessions, cuts only the leaving backend's, and sends every new
// connection to the remaining backend (FACTS.md §3).
func TestTwoToOneThroughPlaceholder(t *testing.T) {
	v, conn := sessionVPP(t, Options{SessionSeed: 9})
	send(t, v, conn, lbTo("10.96.0.80", "10.1.1.2:8080", "10.1.1.3:8080"))
	openMany(t, v, "10.96.0.80", 10000, 20)
	before := v.Sessions()
	placeholder := nat44_ed.Nat44LbAddrPort{VrfID: 1} // 0.0.0.0:0, probability 0
	addLocalAllowingZero(t, v, conn, localOp("10.96.0.80", placeholder, true))
	if v.SessionsCut() != 0 {
		t.Fatalf("adding the placeholder cut %d", v.SessionsCut())
	}
	send(t, v, conn, delLocal("10.96.0.80", "10.1.1.3:8080"))
	leaving := 0
	for _, s := range before {
		gone := s.Backend == ap("10.1.1.3:8080")
		if gone {
			leaving++
		}
		if v.SessionAlive(s.ID) == gone {
			t.Errorf("session %+v: alive %v", s, !gone)
		}
	}
	if leaving == 0 || v.SessionsCut() != uint64(leaving) {
		t.Errorf("cut %d, %d sessions to the leaving backend", v.SessionsCut(), leaving)
	}
	for i := range 50 {
		s, err := v.OpenSession(fromPod("10.96.0.80"), uint16(30000+i))
		if err != nil {
			t.Fatal(err)
		}
		if s.Backend != ap("10.1.1.2:8080") {
			t.Fatalf("new session to %v", s.Backend)
		}
	}
}
