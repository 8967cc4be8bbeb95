package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// socketEnv connects the agent's Conn, through govpp's socket client, to
// a simulated VPP served on a unix socket.
func socketEnv(t testing.TB, opts sim.Options, cfg Config) (*sim.VPP, *sim.Server, *NAT44) {
	t.Helper()
	v := sim.New(opts)
	srv, err := v.Serve(filepath.Join(t.TempDir(), "api.sock"))
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	cfg.Socket = srv.Path()
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	c.Start(ctx)
	t.Cleanup(func() { cancel(); c.Close(); _ = srv.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := c.WaitConnected(wctx); err != nil {
		t.Fatalf("WaitConnected over the socket: %v", err)
	}
	return v, srv, NewNAT44(c, NewInterfaces(c, nil), nil)
}

// pipelineOps is a batch mixing every pipelined kind, with calls VPP
// refuses (a duplicate, removing one of two locals, a local of a missing
// mapping, a route into a missing table) and one the client refuses before sending; more calls than
// PipelineWindow.
func pipelineOps() []nat44.Op {
	ext := netip.MustParseAddr("10.96.0.1")
	lb := func(port uint16, n int) *nat44.Mapping {
		m := &nat44.Mapping{MappingKey: nat44.MappingKey{IP: nat44.MustIPv4(ext), Port: port, Proto: servicerenderer.TCP}, Tag: "contiv-test"}
		for i := range n {
			m.Locals = append(m.Locals, nat44.Local{IP: nat44.IPv4{10, 1, byte(port >> 8), byte(i + 2)}, Port: 8080, VRF: 1, Probability: 1})
		}
		return m
	}
	ops := []nat44.Op{
		{Kind: nat44.OpAddPool, Pool: nat44.PoolAddress{IP: netip.MustParseAddr("192.168.16.1")}},
		{Kind: nat44.OpAddPool, Pool: nat44.PoolAddress{IP: netip.MustParseAddr("192.168.16.1")}}, // -81
		{Kind: nat44.OpAddIdentity, Identity: &nat44.Identity{IdentityKey: nat44.IdentityKey{IP: netip.MustParseAddr("192.168.16.1")}, Tag: "contiv-snat"}},
		{Kind: nat44.OpAddRoute, Route: nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustParseIPv4Prefix("10.96.0.0/12"), VRF: 0}}},
		{Kind: nat44.OpAddRoute, Route: nat44.Route{RouteKey: nat44.RouteKey{Prefix: nat44.MustParseIPv4Prefix("10.96.0.0/12"), VRF: 7}}}, // no table 7: -3
		{Kind: nat44.OpSetInterface, Interface: "tap1", NewFeatures: nat44.FeatureIn},
		{Kind: nat44.OpSetInterface, Interface: "tap2", NewFeatures: nat44.FeatureIn | nat44.FeatureOut},
		{Kind: nat44.OpSetInterface, Interface: "eth0", NewFeatures: nat44.FeatureOutput},
		{Kind: nat44.OpSetInterface, Interface: "tap9", NewFeatures: nat44.FeatureIn},                                   // no such interface
		{Kind: nat44.OpSetInterface, Interface: "tap2", OldFeatures: nat44.FeatureIn, NewFeatures: nat44.FeatureOutput}, // out stays: -81
		{Kind: nat44.OpSetInterface, Interface: "tap1", OldFeatures: nat44.FeatureIn, NewFeatures: nat44.FeatureIn},
	}
	for p := range 300 {
		port := uint16(1000 + p)
		ops = append(ops, nat44.Op{Kind: nat44.OpAddMapping, Mapping: lb(port, 1+p%3)})
	}
	two := lb(1001, 2)
	ops = append(ops,
		nat44.Op{Kind: nat44.OpAddMapping, Mapping: lb(1003, 2)},                                                                                            // duplicate: -81
		nat44.Op{Kind: nat44.OpDelLocal, Mapping: two, Local: two.Locals[0]},                                                                                // one of two: -1
		nat44.Op{Kind: nat44.OpAddLocal, Mapping: lb(5000, 2), Local: two.Locals[0]},                                                                        // no mapping: -6
		nat44.Op{Kind: nat44.OpAddMapping, Mapping: lb(0, 2)},                                                                                               // port 0: not sent
		nat44.Op{Kind: nat44.OpAddLocal, Mapping: lb(1002, 3), Local: nat44.Local{IP: nat44.MustParseIPv4("10.1.9.9"), Port: 8080, VRF: 1, Probability: 1}}, // new local
		nat44.Op{Kind: nat44.OpDelMapping, Mapping: lb(1004, 2)},                                                                                            // delete
		nat44.Op{Kind: nat44.OpDelIdentity, Identity: &nat44.Identity{IdentityKey: nat44.IdentityKey{IP: ext}}},                                             // -6
	)
	return ops
}

// TestPipelineAnswersAsSynchronous sends one batch through a Pipeline on
// the socket-served VPP, and call by call through the synchronous methods
// on another: every call gets the same result (same error text, same
// classification) and both VPPs end in the same state. The batch is sent
// whole before any answer is read (past the window), and interleaved with
// the answers.
func TestPipelineAnswersAsSynchronous(t *testing.T) {
	for _, keep := range []int{len(pipelineOps()), 2, 3, 5} {
		t.Run(fmt.Sprintf("in-flight-%d", keep), func(t *testing.T) { testPipelineAnswers(t, keep) })
	}
}

func testPipelineAnswers(t *testing.T, keep int) {
	ctx := context.Background()
	pv, _, pn := socketEnv(t, sim.Options{ServiceTime: 50 * time.Microsecond}, Config{})
	se := setup(t, sim.Options{})
	for _, v := range []*sim.VPP{pv, se.vpp} {
		for _, name := range []string{"eth0", "tap1", "tap2"} {
			if _, err := v.AddInterface(name, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	se.connected(t)
	for _, n := range []*NAT44{pn, se.nat} {
		if err := n.SetGlobal(ctx, nat44.Global{SessionLimit: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	ops := pipelineOps()
	p, err := pn.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := make([]error, len(ops))
	var inFlight []int
	for i := range ops {
		if err := p.Send(&ops[i]); err != nil {
			got[i] = err
		} else {
			inFlight = append(inFlight, i)
		}
		for len(inFlight) > i%keep {
			got[inFlight[0]] = p.Recv()
			inFlight = inFlight[1:]
		}
	}
	for _, i := range inFlight {
		got[i] = p.Recv()
	}
	if err := p.Recv(); err == nil {
		t.Errorf("Recv with nothing in flight answered")
	}
	invalid := 0
	for i := range ops {
		want := nat44.Call(ctx, se.nat, &ops[i])
		if fmt.Sprint(got[i]) != fmt.Sprint(want) || errors.Is(got[i], nat44.ErrInvalid) != errors.Is(want, nat44.ErrInvalid) ||
			errors.Is(got[i], nat44.ErrNoTable) != errors.Is(want, nat44.ErrNoTable) {
			t.Errorf("%s: pipelined %v, synchronous %v", ops[i].String(), got[i], want)
		}
		if errors.Is(got[i], nat44.ErrInvalid) {
			invalid++
		}
	}
	if invalid != 9 {
		t.Errorf("%d operations refused, want 9", invalid)
	}
	if noTable := slices.IndexFunc(got, func(err error) bool { return errors.Is(err, nat44.ErrNoTable) }); noTable != 4 {
		t.Errorf("the route into the missing table (op 4) is not the one ErrNoTable: op %d", noTable)
	}
	if a, b := simState(pv), simState(se.vpp); !reflect.DeepEqual(a, b) {
		t.Errorf("the VPPs differ\npipelined %s\nsynchronous %s", show(a), show(b))
	}
	if n := pv.Calls("nat44_add_del_lb_static_mapping") + pv.Calls("nat44_add_del_static_mapping_v2"); n != 302 {
		t.Errorf("%d mapping calls reached the VPP, want 302", n)
	}
}

// TestPipelineBroken closes the VPP's socket under a pipeline: every call
// fails, transiently (not as invalid), and the pipeline still closes.
func TestPipelineBroken(t *testing.T) {
	ctx := context.Background()
	_, srv, n := socketEnv(t, sim.Options{}, Config{CallTimeout: 300 * time.Millisecond, HealthInterval: time.Hour})
	if err := n.SetGlobal(ctx, nat44.Global{}); err != nil {
		t.Fatal(err)
	}
	p, err := n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_ = srv.Close()
	// Every operation of the first 40 but tap1's unchanged features (no
	// call to make) needs a call.
	ops := slices.DeleteFunc(pipelineOps()[:40], func(op nat44.Op) bool {
		return op.Kind == nat44.OpSetInterface && op.OldFeatures == op.NewFeatures
	})
	sent := 0
	for i := range ops {
		err := p.Send(&ops[i])
		if err == nil {
			sent++
			continue
		}
		if errors.Is(err, nat44.ErrInvalid) {
			t.Errorf("send on a closed socket: %v, classified invalid", err)
		}
	}
	for range sent {
		if err := p.Recv(); err == nil || errors.Is(err, nat44.ErrInvalid) {
			t.Errorf("answer on a closed socket: %v", err)
		}
	}
}

// TestPipelineQueueStaysSmall keeps a few calls in flight through a long
// run: the stream's queue holds about those, not one entry per call sent.
func TestPipelineQueueStaysSmall(t *testing.T) {
	ctx := context.Background()
	_, _, n := socketEnv(t, sim.Options{}, Config{})
	if err := n.SetGlobal(ctx, nat44.Global{SessionLimit: 1000}); err != nil {
		t.Fatal(err)
	}
	p, err := n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const calls, inFlight = 1000, 4
	ops := make([]nat44.Op, calls)
	for i := range ops {
		ops[i] = nat44.Op{Kind: nat44.OpAddMapping, Mapping: &nat44.Mapping{
			MappingKey: nat44.MappingKey{IP: nat44.IPv4{10, 96, byte(i >> 8), byte(i)}, Port: 80, Proto: servicerenderer.TCP},
			Locals:     []nat44.Local{nat44.Placeholder, {IP: nat44.MustParseIPv4("10.1.1.2"), Port: 8080, VRF: 1, Probability: 1}},
			Tag:        "contiv-test"}}
		if err := p.Send(&ops[i]); err != nil {
			t.Fatal(err)
		}
		if i >= inFlight-1 {
			if err := p.Recv(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c := cap(p.(*pipeline).st.q); c > 8*inFlight {
		t.Errorf("the queue has room for %d calls after %d with %d in flight", c, calls, inFlight)
	}
	for range inFlight - 1 {
		if err := p.Recv(); err != nil {
			t.Fatal(err)
		}
	}
}
