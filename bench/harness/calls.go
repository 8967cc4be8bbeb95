package harness

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// callsRun counts the binary-API writes of the churn on node 1's pipeline
// over the agent's real VPP client and the simulated VPP.
type callsRun struct {
	// perChange is the mean over the 1000 changes.
	perChange float64
	// clusterIP is the mean over changes of ClusterIP services (one
	// frontend, so one mapping) that leave every local pod's role as it
	// was; nodePort the mean over changes of NodePort services (three
	// frontends on this node: the cluster IP and both node addresses).
	clusterIP, nodePort float64
	// podRole is the mean over changes that give a local pod its first
	// service or take its last (the pod's interface becomes or stops being
	// a NAT44 inside interface).
	podRole float64
	max     int
	// resyncWrites are the writes of the first full apply.
	resyncWrites int
}

// countCalls programs W(n) into a fresh simulated VPP through the real
// client, then applies the churn one change at a time and counts the
// simulated VPP's state-changing requests for each.
func countCalls(ctx context.Context, env *Env, n int) (*callsRun, error) {
	w := workload.New(n)
	evs, err := AllEvents(w)
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	v := sim.New(sim.Options{})
	if err := env.AddInterfaces(v, w); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn := vpp.New(vpp.Config{Adapter: v, Logger: quiet})
	conn.Start(ctx)
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := conn.WaitConnected(wctx); err != nil {
		return nil, fmt.Errorf("simulated VPP: %w", err)
	}
	ifaces := vpp.NewInterfaces(conn, nil)
	if err := ifaces.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("simulated VPP interfaces: %w", err)
	}
	p, err := env.NewPipeline(vpp.NewNAT44(conn, ifaces, quiet), ifaces)
	if err != nil {
		return nil, err
	}
	if err := p.Resync(ctx, evs.Snap); err != nil {
		return nil, fmt.Errorf("n=%d: resync through the VPP client: %w", n, err)
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("n=%d: resync through the VPP client: %w", n, err)
	}
	out := &callsRun{resyncWrites: v.Writes()}
	var all, cip, np, role meanOf
	for i, ev := range evs.Churn {
		roles := p.Proc.Interfaces()
		before := v.Writes()
		if err := p.Batch(ctx, ev); err != nil {
			return nil, fmt.Errorf("n=%d: change %s through the VPP client: %w", n, ev.Key, err)
		}
		d := v.Writes() - before
		all.add(d)
		out.max = max(out.max, d)
		switch {
		case !maps.Equal(roles, p.Proc.Interfaces()):
			role.add(d)
		case workload.IsNodePort(evs.ChurnSvc[i]):
			np.add(d)
		default:
			cip.add(d)
		}
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("n=%d: churn through the VPP client: %w", n, err)
	}
	out.perChange, out.clusterIP, out.nodePort, out.podRole = all.mean(), cip.mean(), np.mean(), role.mean()
	return out, nil
}

// meanOf accumulates a mean.
type meanOf struct{ sum, n int }

func (m *meanOf) add(x int) { m.sum += x; m.n++ }

// mean is 0 for no values.
func (m *meanOf) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return float64(m.sum) / float64(m.n)
}

// runCalls counts the binary-API calls per change at every N.
func runCalls(ctx context.Context, env *Env, o Options, res *Results) error {
	for _, n := range res.sizes {
		o.Log.Info("VPP calls per change", "n", n)
		c, err := countCalls(ctx, env, n)
		if err != nil {
			return err
		}
		r := res.N[strconv.Itoa(n)]
		r.VPPCallsPerChange = c.perChange
		r.Calls = c
	}
	return nil
}

// callsRows are the calls figure's rows, per N.
func callsRows(r *Results, t *Rows) {
	if !r.has(FigCalls) {
		return
	}
	row := func(name string, get func(c *callsRun) float64, target string, met func(c *callsRun) bool) {
		t.AddPerN(name, "%.3f", func(s *SizeResult) float64 {
			if s.Calls == nil {
				return 0
			}
			return get(s.Calls)
		}, target, func(s *SizeResult) bool { return s.Calls != nil && met(s.Calls) })
	}
	row("VPP calls per change, all 1000 (binary API, simulated VPP)", func(c *callsRun) float64 { return c.perChange }, "", nil)
	row("… of a ClusterIP service (1 frontend mapping)", func(c *callsRun) float64 { return c.clusterIP }, "1",
		func(c *callsRun) bool { return c.clusterIP == 1 })
	row("… of a NodePort service (3 frontend mappings)", func(c *callsRun) float64 { return c.nodePort }, "1 per mapping",
		func(c *callsRun) bool { return c.nodePort == 3 })
	row("… giving a local pod its first service or taking its last", func(c *callsRun) float64 { return c.podRole }, "", nil)
}
