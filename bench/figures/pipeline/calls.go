package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// CallsRun counts the binary-API writes of the churn on node 1's pipeline
// over the agent's real VPP client and the simulated VPP.
type CallsRun struct {
	// PerChange is the mean over the 1000 changes.
	PerChange float64
	// ClusterIP is the mean over changes of ClusterIP services (one
	// frontend, so one mapping) that leave every local pod's role as it
	// was; NodePort the mean over changes of NodePort services (three
	// frontends on this node: the cluster IP and both node addresses).
	ClusterIP, NodePort float64
	// PodRole is the mean over changes that give a local pod its first
	// service or take its last (the pod's interface becomes or stops being
	// a NAT44 inside interface).
	PodRole float64
	Max     int
	// ResyncWrites are the writes of the first full apply.
	ResyncWrites int
}

// countCalls programs W(n) into a fresh simulated VPP through the real
// client, then applies the churn one change at a time and counts the
// simulated VPP's state-changing requests for each.
func countCalls(ctx context.Context, env *core.Env, n int) (*CallsRun, error) {
	w := workload.New(n)
	evs, err := core.AllEvents(w)
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
	out := &CallsRun{ResyncWrites: v.Writes()}
	var all, cip, np, role meanOf
	for i, ev := range evs.Churn {
		roles := p.Proc.Interfaces()
		before := v.Writes()
		if err := p.Batch(ctx, ev); err != nil {
			return nil, fmt.Errorf("n=%d: change %s through the VPP client: %w", n, ev.Key, err)
		}
		d := v.Writes() - before
		all.add(d)
		out.Max = max(out.Max, d)
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
	out.PerChange, out.ClusterIP, out.NodePort, out.PodRole = all.mean(), cip.mean(), np.mean(), role.mean()
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

// RunCalls counts the binary-API calls per change at every N.
func RunCalls(ctx context.Context, env *core.Env, o core.Options, res *core.Results, into *Results) error {
	for _, n := range res.Sizes {
		o.Log.Info("VPP calls per change", "n", n)
		c, err := countCalls(ctx, env, n)
		if err != nil {
			return err
		}
		r := into.at(n)
		r.VPPCallsPerChange = c.PerChange
		r.Calls = c
	}
	return nil
}

// CallsRows are the calls figure's rows, per N.
func CallsRows(r *core.Results, from *Results, t *core.Rows) {
	if !r.Has(FigCalls) {
		return
	}
	row := func(name string, get func(c *CallsRun) float64, target string, met func(c *CallsRun) bool) {
		perN(t, from, name, "%.3f", func(s *SizeResult) float64 {
			if s.Calls == nil {
				return 0
			}
			return get(s.Calls)
		}, target, func(s *SizeResult) bool { return s.Calls != nil && met(s.Calls) })
	}
	row("VPP calls per change, all 1000 (binary API, simulated VPP)", func(c *CallsRun) float64 { return c.PerChange }, "", nil)
	row("… of a ClusterIP service (1 frontend mapping)", func(c *CallsRun) float64 { return c.ClusterIP }, "1",
		func(c *CallsRun) bool { return c.ClusterIP == 1 })
	row("… of a NodePort service (3 frontend mappings)", func(c *CallsRun) float64 { return c.NodePort }, "1 per mapping",
		func(c *CallsRun) bool { return c.NodePort == 3 })
	row("… giving a local pod its first service or taking its last", func(c *CallsRun) float64 { return c.PodRole }, "", nil)
}
