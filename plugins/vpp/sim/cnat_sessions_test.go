package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
)

// Tests of cnat sessions (the cut rules of FACTS.md §6, affinity,
// weights) and of CnatTrace.

// podClient is a packet from the client pod to a service.
func podClient(dst string) Packet {
	d := ap(dst)
	return Packet{Src: netip.MustParseAddr("10.1.1.20"), Dst: d.Addr(), DstPort: d.Port(), Proto: TCP, Ingress: "host-vccl"}
}

func TestCnatSessionCutRules(t *testing.T) {
	backends := []string{"10.1.1.11:8080", "10.1.1.12:8080", "10.1.1.13:8080"}
	for _, c := range []struct {
		name string
		// op changes translation id of 10.96.1.1:80 (w1, w2, w3).
		op func(t *testing.T, conn *core.Connection, id uint32)
		// newTo are the backends new connections may reach afterwards
		// (none: new connections fail).
		newTo []string
		// scanned are the backends whose sessions VPP 26.06's scanner
		// frees afterwards ("all": every session).
		scanned []string
	}{
		{"add backend", func(t *testing.T, conn *core.Connection, _ uint32) {
			update(t, conn, ctr("10.96.1.1:80", append(slices.Clone(backends), "10.1.1.14:8080")...))
		}, append(slices.Clone(backends), "10.1.1.14:8080"), nil},
		{"remove backend w3", func(t *testing.T, conn *core.Connection, _ uint32) {
			update(t, conn, ctr("10.96.1.1:80", backends[:2]...))
		}, backends[:2], backends[2:]},
		{"replace all", func(t *testing.T, conn *core.Connection, _ uint32) {
			update(t, conn, ctr("10.96.1.1:80", "10.1.1.14:8080"))
		}, []string{"10.1.1.14:8080"}, []string{"all"}},
		{"delete and re-add", func(t *testing.T, conn *core.Connection, id uint32) {
			if rv := del(t, conn, id); rv != 0 {
				t.Fatal(rv)
			}
			update(t, conn, ctr("10.96.1.1:80", backends...))
		}, backends, []string{"all"}},
		{"lb type change by delete and re-add", func(t *testing.T, conn *core.Connection, id uint32) {
			if rv := del(t, conn, id); rv != 0 {
				t.Fatal(rv)
			}
			update(t, conn, with(ctr("10.96.1.1:80", backends...), func(t *cnat.CnatTranslation) { t.LbType = cnat.CNAT_LB_TYPE_MAGLEV }))
		}, backends, []string{"all"}},
		{"identical update", func(t *testing.T, conn *core.Connection, _ uint32) {
			update(t, conn, ctr("10.96.1.1:80", backends...))
		}, backends, nil},
		{"another translation sharing the backends changes", func(t *testing.T, conn *core.Connection, _ uint32) {
			update(t, conn, ctr("10.96.1.2:80", backends[1]))
		}, backends, nil},
		{"delete only", func(t *testing.T, conn *core.Connection, id uint32) {
			if rv := del(t, conn, id); rv != 0 {
				t.Fatal(rv)
			}
		}, nil, []string{"all"}},
	} {
		for _, version := range []string{"25.02-release", "26.06-release"} {
			t.Run(c.name+"/"+version, func(t *testing.T) {
				v, conn := cnatVPP(t, Options{SessionSeed: 7, Version: version})
				id := update(t, conn, ctr("10.96.1.1:80", backends...))
				update(t, conn, ctr("10.96.1.2:80", backends...))
				var open []CnatSession
				for port := uint16(40000); port < 40060; port++ {
					s, err := v.OpenCnatSession(podClient("10.96.1.1:80"), port)
					if err != nil {
						t.Fatal(err)
					}
					open = append(open, s)
				}
				c.op(t, conn, id)
				for _, s := range open {
					if !v.CnatSessionAlive(s.ID) {
						t.Errorf("session %d to %v cut", s.ID, s.Backend)
					}
					// The established connection goes on where it was.
					if again, err := v.OpenCnatSession(podClient("10.96.1.1:80"), s.Client.Port()); err != nil || again != s {
						t.Errorf("session %d continued as %+v, %v", s.ID, again, err)
					}
				}
				if v.CnatSessionsCut() != 0 {
					t.Errorf("%d sessions cut", v.CnatSessionsCut())
				}
				// The scanner's pass: on 26.06 it frees the removed paths'
				// sessions, each a cut; on 25.02 nothing.
				freed := v.ScanCnatSessions()
				want := 0
				for _, s := range open {
					gone := !v.CnatSessionAlive(s.ID)
					stale := version == "26.06-release" && (slices.Contains(c.scanned, "all") || slices.Contains(c.scanned, s.Backend.String()))
					if gone != stale {
						t.Errorf("after a scan, session %d to %v freed %v, want %v", s.ID, s.Backend, gone, stale)
					}
					if stale {
						want++
					}
				}
				if freed != want || v.CnatSessionsCut() != uint64(want) {
					t.Errorf("scan freed %d, cut %d; want %d", freed, v.CnatSessionsCut(), want)
				}
				reached := map[string]bool{}
				for port := uint16(50000); port < 50200; port++ {
					s, err := v.OpenCnatSession(podClient("10.96.1.1:80"), port)
					if c.newTo == nil {
						if !errors.Is(err, ErrNoCnatTranslation) {
							t.Fatalf("new connection after delete: %+v, %v; want ErrNoCnatTranslation", s, err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					reached[s.Backend.String()] = true
				}
				var got []string
				for b := range reached {
					got = append(got, b)
				}
				slices.Sort(got)
				if fmt.Sprint(got) != fmt.Sprint(c.newTo) && !(c.newTo == nil && got == nil) {
					t.Errorf("new connections reach %v, want %v", got, c.newTo)
				}
			})
		}
	}
}

func TestCnatSessionPurgeAndRestart(t *testing.T) {
	var cuts []int
	v, conn := cnatVPP(t, Options{OnCut: func(n int) { cuts = append(cuts, n) }})
	update(t, conn, ctr("10.96.1.1:80", "10.1.1.11:8080", "10.1.1.12:8080"))
	update(t, conn, ctr("10.96.1.2:80", "10.1.1.13:8080"))
	for port := uint16(1); port <= 4; port++ {
		if _, err := v.OpenCnatSession(podClient("10.96.1.1:80"), port); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(dump(t, conn, &cnat.CnatSessionDump{})); n != 8 {
		t.Errorf("session dump: %d entries, want 8 (forward and return of 4 sessions)", n)
	}
	send(t, v, conn, &cnat.CnatSessionPurge{})
	if v.CnatSessionsCut() != 4 || len(v.CnatSessions()) != 0 || fmt.Sprint(cuts) != "[4]" {
		t.Errorf("after purge: cut %d, live %d, OnCut %v; want 4 cut, none live", v.CnatSessionsCut(), len(v.CnatSessions()), cuts)
	}
	if n := len(v.CnatTranslations()); n != 0 {
		t.Errorf("purge left %d translations", n)
	}
	if n := len(dump(t, conn, &cnat.CnatSessionDump{})); n != 0 {
		t.Errorf("session dump after purge: %d entries", n)
	}
	// Ids come back last-freed-first: purge freed 0 then 1.
	if id := update(t, conn, ctr("10.96.1.3:80", "10.1.1.11:8080")); id != 1 {
		t.Errorf("first id after purge %d, want 1", id)
	}
	if _, err := v.OpenCnatSession(podClient("10.96.1.3:80"), 9); err != nil {
		t.Fatal(err)
	}
	v.Restart()
	if v.CnatSessionsLost() != 1 || v.CnatSessionsCut() != 4 || len(v.CnatTranslations()) != 0 {
		t.Errorf("after restart: lost %d cut %d translations %d", v.CnatSessionsLost(), v.CnatSessionsCut(), len(v.CnatTranslations()))
	}
}

// clients opens one session per client address 10.2.0.x (x = 1..n)
// and returns the backend each got.
func clients(t *testing.T, v *VPP, vip string, n int, port uint16) map[int]netip.AddrPort {
	t.Helper()
	out := map[int]netip.AddrPort{}
	d := ap(vip)
	for i := 1; i <= n; i++ {
		p := Packet{Src: netip.AddrFrom4([4]byte{10, 2, byte(i / 250), byte(i%250 + 1)}), Dst: d.Addr(), DstPort: d.Port(),
			Proto: TCP, Ingress: "host-vccl"}
		s, err := v.OpenCnatSession(p, port)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s.Backend
	}
	return out
}

func TestCnatAffinity(t *testing.T) {
	ws := []string{"10.1.1.11:8080", "10.1.1.12:8080", "10.1.1.13:8080", "10.1.2.11:8080"}
	srcIP := func(lb cnat.CnatLbType) func(t *cnat.CnatTranslation) {
		return func(t *cnat.CnatTranslation) { t.FlowHashConfig, t.LbType = 1, lb }
	}
	const n = 400
	for _, c := range []struct {
		name string
		lb   cnat.CnatLbType
		// minStay and maxStay bound the share of clients of the
		// remaining backends that keep theirs after one is removed.
		minStay, maxStay float64
	}{
		{"default", cnat.CNAT_LB_TYPE_DEFAULT, 0, 0.6},
		{"maglev", cnat.CNAT_LB_TYPE_MAGLEV, 0.9, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, conn := cnatVPP(t, Options{})
			update(t, conn, with(ctr("10.96.2.1:80", ws...), srcIP(c.lb)))
			first := clients(t, v, "10.96.2.1:80", n, 1000)
			// SRC_IP: the same client address, another port, same backend.
			if again := clients(t, v, "10.96.2.1:80", n, 2000); fmt.Sprint(again) != fmt.Sprint(first) {
				t.Error("SRC_IP flow hash: a client's new connection went to another backend")
			}
			update(t, conn, ctr("10.96.2.1:80", ws[:3]...)) // remove 10.1.2.11
			after := clients(t, v, "10.96.2.1:80", n, 3000)
			kept, others := 0, 0
			for i, b := range first {
				if after[i] == ap(ws[3]) {
					t.Fatalf("client %d went to the removed backend", i)
				}
				if b == ap(ws[3]) {
					continue
				}
				others++
				if after[i] == b {
					kept++
				}
			}
			if share := float64(kept) / float64(others); share < c.minStay || share > c.maxStay {
				t.Errorf("%d of %d clients of the remaining backends kept theirs (%.2f), want %.2f..%.2f",
					kept, others, share, c.minStay, c.maxStay)
			}
		})
	}
	// Without SRC_IP (fhc 0, the 5-tuple) a client's connections spread.
	v, conn := cnatVPP(t, Options{})
	update(t, conn, ctr("10.96.2.2:80", ws...))
	seen := map[netip.AddrPort]bool{}
	for port := uint16(1); port <= 50; port++ {
		s, err := v.OpenCnatSession(podClient("10.96.2.2:80"), port)
		if err != nil {
			t.Fatal(err)
		}
		seen[s.Backend] = true
	}
	if len(seen) < 3 {
		t.Errorf("50 connections of one client reached %d backends with the 5-tuple hash", len(seen))
	}
}

func TestCnatWeightsByRepetition(t *testing.T) {
	for _, lb := range []cnat.CnatLbType{cnat.CNAT_LB_TYPE_DEFAULT, cnat.CNAT_LB_TYPE_MAGLEV} {
		v, conn := cnatVPP(t, Options{})
		paths := []string{"10.1.1.12:8080", "10.1.1.13:8080"}
		for range 8 {
			paths = append(paths, "10.1.1.11:8080")
		}
		update(t, conn, with(ctr("10.96.3.7:80", paths...), func(t *cnat.CnatTranslation) { t.LbType = lb }))
		res := v.CnatTrace(podClient("10.96.3.7:80"))
		if len(res.Backends) != 3 || res.Backends[0].Weight != 0.8 {
			t.Errorf("lb %d: trace backends %+v, want 10.1.1.11 with weight 0.8", lb, res.Backends)
		}
		count := map[netip.AddrPort]int{}
		for port := uint16(1); port <= 2000; port++ {
			s, err := v.OpenCnatSession(podClient("10.96.3.7:80"), port)
			if err != nil {
				t.Fatal(err)
			}
			count[s.Backend]++
		}
		if w1 := count[ap("10.1.1.11:8080")]; w1 < 1400 || w1 > 1800 {
			t.Errorf("lb %d: 10.1.1.11 (8 of 10 paths) got %d of 2000 connections", lb, w1)
		}
	}
}

func TestCnatTrace(t *testing.T) {
	v, conn := cnatVPP(t, Options{})
	// Pods with addresses: web-1 is local; 10.1.2.11 is on another node.
	v.mu.Lock()
	v.ifaceByName("host-vcw1").addr = netip.MustParsePrefix("10.1.1.11/32")
	v.ifaceByName("host-vccl").addr = netip.MustParsePrefix("10.1.1.20/32")
	v.mu.Unlock()
	node := netip.MustParseAddr("192.168.16.1")
	client := netip.MustParseAddr("10.1.1.20")
	ext := netip.MustParseAddr("192.168.16.2")
	update(t, conn, ctr("10.96.0.10:80", "10.1.1.11:8080", "10.1.2.11:8080"))
	update(t, conn, ctr("10.96.0.14:80", "10.1.1.20:8080")) // the client's own service (hairpin)
	src := update(t, conn, with(ctr("192.168.16.100:81", "10.1.2.11:8080"), func(t *cnat.CnatTranslation) {
		t.Paths[0].SrcEp = cep("192.168.16.1")
	}))
	fromOutside := func(dst string) Packet {
		d := ap(dst)
		return Packet{Src: ext, Dst: d.Addr(), DstPort: d.Port(), Proto: TCP, Ingress: "host-vcup"}
	}
	type reach struct {
		backend string
		src     netip.Addr
		verdict Verdict
	}
	check := func(name string, p Packet, want ...reach) {
		t.Helper()
		res := v.CnatTrace(p)
		var got []reach
		for _, b := range res.Backends {
			got = append(got, reach{b.Backend.String(), b.Src, b.Verdict})
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v (%s)\n got %v\nwant %v", name, res.Verdict, res.Reason, got, want)
		}
	}
	// Before the K8S policy: hairpin and remote-from-outside fail.
	for _, i := range []interface_types.InterfaceIndex{3, 4, 5, 6, 7, 8} {
		send(t, v, conn, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: i, IsAdd: 1, Table: cnat.CNAT_POLICY_POD},
			&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: i, IsAdd: 1, Table: cnat.CNAT_POLICY_INCLUDE_V4})
	}
	check("hairpin, no policy", podClient("10.96.0.14:80"), reach{"10.1.1.20:8080", client, Dropped})
	check("outside, no policy", fromOutside("10.96.0.10:80"),
		reach{"10.1.1.11:8080", ext, Translated}, reach{"10.1.2.11:8080", ext, Dropped})
	send(t, v, conn, &cnat.CnatSetSnatAddresses{SnatIP4: node.As4(), SwIfIndex: anyIf},
		&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S},
		&cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 1, Prefix: pfxOf("10.1.0.0/16")})
	check("pod client", podClient("10.96.0.10:80"),
		reach{"10.1.1.11:8080", client, Translated}, reach{"10.1.2.11:8080", client, Translated})
	check("hairpin", podClient("10.96.0.14:80"), reach{"10.1.1.20:8080", node, Translated})
	check("from outside: local keeps the client, remote sees the node", fromOutside("10.96.0.10:80"),
		reach{"10.1.1.11:8080", ext, Translated}, reach{"10.1.2.11:8080", node, Translated})
	check("path source endpoint", fromOutside("192.168.16.100:81"), reach{"10.1.2.11:8080", node, Translated})
	if res := v.CnatTrace(fromOutside("192.168.16.100:81")); res.TranslationID != src {
		t.Errorf("translation id %d, want %d", res.TranslationID, src)
	}
	// No translation: port 0 is no wildcard; pod -> outside is SNATed
	// unless the destination is excluded.
	if res := v.CnatTrace(podClient("10.96.0.10:81")); res.Verdict != NotTranslated {
		t.Errorf("other port: %v", res.Verdict)
	}
	if res := v.CnatTrace(podClient("203.0.113.10:80")); res.Verdict != NotTranslated || res.Src != node {
		t.Errorf("pod -> outside: %v from %v, want untranslated from %v", res.Verdict, res.Src, node)
	}
	if res := v.CnatTrace(podClient("10.1.2.11:8080")); res.Src != client {
		t.Errorf("pod -> excluded pod CIDR: from %v, want %v", res.Src, client)
	}
	// Sessions carry the source the backend sees.
	s, err := v.OpenCnatSession(podClient("10.96.0.14:80"), 5555)
	if err != nil || s.Src != node {
		t.Errorf("hairpin session %+v, %v: want source %v", s, err, node)
	}
}

// udpFlow sends a datagram of one UDP flow to 10.96.1.1:53 every gap
// from start, count times, and returns the backends they reached.
func udpFlow(t *testing.T, v *VPP, start time.Time, gap time.Duration, count int) (reached map[netip.AddrPort]int, end time.Time) {
	t.Helper()
	p := Packet{Src: netip.MustParseAddr("10.1.1.20"), Dst: netip.MustParseAddr("10.96.1.1"), DstPort: 53, Proto: UDP, Ingress: "host-vccl"}
	reached = map[netip.AddrPort]int{}
	at := start
	for range count {
		s, err := v.CnatPacket(p, 40000, at)
		if err != nil {
			t.Fatal(err)
		}
		reached[s.Backend]++
		at = at.Add(gap)
	}
	return reached, at.Add(-gap)
}

// TestCnatUDPIdleAge is FACTS §6 (cnat, measured with the agent): a UDP
// session is refreshed by every datagram and expires after
// session-max-age (30 s) idle; a sender that never pauses that long stays
// on a backend removed from the translation (641 of 641 datagrams in
// 64 s), and after 35 s of silence it is balanced again over the
// remaining backends. A shorter age (cnat { session-max-age 5 }) moves it
// after a shorter silence, and that is its cost: a flow pausing 6 s is
// balanced again even when its backend stays (here: with the two
// backends still there).
func TestCnatUDPIdleAge(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	udp := func(backends ...string) *cnat.CnatTranslationUpdate {
		return with(ctr("10.96.1.1:53", backends...), func(t *cnat.CnatTranslation) { t.IPProto = ip_types.IP_API_PROTO_UDP })
	}
	for _, c := range []struct {
		maxAge  time.Duration
		silence time.Duration
		moves   bool
	}{
		{0, 29 * time.Second, false},
		{0, 35 * time.Second, true},
		{5 * time.Second, 6 * time.Second, true},
	} {
		t.Run(fmt.Sprintf("age %v silence %v", c.maxAge, c.silence), func(t *testing.T) {
			v, conn := cnatVPP(t, Options{SessionSeed: 3, CnatSessionMaxAge: c.maxAge})
			update(t, conn, udp("10.1.1.11:53", "10.1.1.12:53"))
			first, end := udpFlow(t, v, t0, 100*time.Millisecond, 1)
			var was netip.AddrPort
			for b := range first {
				was = b
			}
			// The flow's backend leaves the translation; the sender goes on
			// every 100 ms for 64 s.
			var other string
			for _, b := range []string{"10.1.1.11:53", "10.1.1.12:53"} {
				if b != was.String() {
					other = b
				}
			}
			update(t, conn, udp(other))
			reached, end := udpFlow(t, v, end.Add(100*time.Millisecond), 100*time.Millisecond, 641)
			if reached[was] != 641 {
				t.Errorf("busy sender after its backend left: %v, want all 641 on %v", reached, was)
			}
			after, _ := udpFlow(t, v, end.Add(c.silence), 100*time.Millisecond, 1)
			if moved := after[was] == 0; moved != c.moves {
				t.Errorf("after %v of silence: %v (moved %v, want %v)", c.silence, after, moved, c.moves)
			}
			if c.moves && (after[ap(other)] != 1 || v.CnatSessionsExpired() != 1) {
				t.Errorf("moved to %v, %d expired; want %s, 1", after, v.CnatSessionsExpired(), other)
			}
		})
	}
}
