package prefetch

import (
	"context"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadAheadDump: the NAT44 port reads VPP's state ahead when VPP is
// this agent's, and its first Dump (and the DumpRoutes of the same VRFs
// after it) returns what it read, once; a write through the port, the
// ownership check marking VPP, another owner, or other VRFs make the dump
// VPP's own. VPP is changed behind the port's back to tell which it was.
func TestReadAheadDump(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, raw := simVPP(ctx, t)
	vrfs := []uint32{0}
	route := func(i byte) nat44.Route {
		return nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustIPv4Prefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 96, 0, i}), 32))}, Kind: nat44.RouteDrop}
	}
	next := byte(1)
	// behind adds a route to VPP behind the port's back.
	behind := func() {
		t.Helper()
		if err := raw.AddDelRoute(ctx, route(next), true); err != nil {
			t.Fatal(err)
		}
		next++
	}
	// dumped is how many of the routes added VPP's dump through p holds,
	// and what the Dump before it returned.
	dumped := func(p *NAT44, routeVRFs []uint32) (int, *nat44.State) {
		t.Helper()
		st, err := p.Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := p.DumpRoutes(ctx, routeVRFs)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := byte(1); i < next; i++ {
			if slices.Contains(rs, route(i)) {
				n++
			}
		}
		return n, st
	}
	started := func(owner string) *NAT44 {
		t.Helper()
		p := New(raw, conn, owner, vrfs, 0, slog.New(slog.DiscardHandler))
		var wg sync.WaitGroup
		p.Start(ctx, &wg)
		wg.Wait()
		return p
	}
	if err := conn.MarkOwner(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	behind()

	p := started("mine")
	behind()
	if n, st := dumped(p, vrfs); n != 1 || st == nil {
		t.Errorf("first dump after the read-ahead: %d routes, want the 1 read ahead", n)
	}
	if n, _ := dumped(p, vrfs); n != 2 {
		t.Errorf("second dump: %d routes, want VPP's 2", n)
	}

	for _, c := range []struct {
		name   string
		before func(p *NAT44)
		vrfs   []uint32
	}{
		{"a write through the port", func(p *NAT44) {
			if err := p.AddDelRoute(ctx, route(next), true); err != nil {
				t.Fatal(err)
			}
			next++
		}, vrfs},
		{"VPP marked by the ownership check", func(p *NAT44) { p.MarkedOwner() }, vrfs},
		{"other VRFs", func(*NAT44) {}, []uint32{0, 0}},
	} {
		p := started("mine")
		behind()
		c.before(p)
		if n, _ := dumped(p, c.vrfs); n != int(next-1) {
			t.Errorf("%s: the dump holds %d routes, want VPP's %d", c.name, n, next-1)
		}
	}

	if err := conn.MarkOwner(ctx, "another"); err != nil {
		t.Fatal(err)
	}
	p = started("mine")
	behind()
	if n, _ := dumped(p, vrfs); n != int(next-1) {
		t.Errorf("another agent's VPP: the dump holds %d routes, want VPP's %d", n, next-1)
	}
}

// TestEnablesTheNATPluginAhead: on a VPP no agent marked, Start enables
// NAT44-ED with the session limit (VPP clears its session tables meanwhile,
// ~0.9 s on the real 25.02 at 262 144 sessions), so that the first apply's
// SetGlobal finds it enabled; on a VPP another agent marked, or without a
// limit, it writes nothing.
func TestEnablesTheNATPluginAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name     string
		owner    string // VPP's marker before Start
		sessions uint32
		want     uint32 // the session limit after Start; 0: disabled
	}{
		{"unmarked", "", 4096, 4096},
		{"another's", "another", 4096, 0},
		{"no limit given", "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, raw := simVPP(ctx, t)
			if c.owner != "" {
				if err := conn.MarkOwner(ctx, c.owner); err != nil {
					t.Fatal(err)
				}
			}
			p := New(raw, conn, "mine", nil, c.sessions, slog.New(slog.DiscardHandler))
			var wg sync.WaitGroup
			p.Start(ctx, &wg)
			wg.Wait()
			st, err := raw.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Global.SessionLimit != c.want {
				t.Errorf("session limit after Start %d, want %d", st.Global.SessionLimit, c.want)
			}
			// The apply's SetGlobal after it: forwarding and timeouts set, no
			// error for a plugin enabled ahead.
			if c.want != 0 {
				if err := p.SetGlobal(ctx, nat44.Global{SessionLimit: c.sessions, Forwarding: true}); err != nil {
					t.Errorf("SetGlobal after the enable ahead: %v", err)
				}
			}
		})
	}
}

// simVPP is a connection to a simulated VPP of the test's own, served on
// its socket, and the NAT44 port on it; both end with the test.
func simVPP(ctx context.Context, t *testing.T) (*vpp.Conn, *vpp.NAT44) {
	t.Helper()
	v := sim.New(sim.Options{})
	t.Cleanup(v.Close)
	srv, err := v.Serve(filepath.Join(t.TempDir(), "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	conn := vpp.New(vpp.Config{Socket: srv.Path(), Logger: slog.New(slog.DiscardHandler), HealthInterval: time.Minute})
	conn.Start(ctx)
	t.Cleanup(conn.Close)
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return conn, vpp.NewNAT44(conn, vpp.NewInterfaces(conn, nil), slog.New(slog.DiscardHandler))
}
