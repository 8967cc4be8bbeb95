package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// nplParams configure the network programming latency figure.
type nplParams struct {
	n        int
	duration time.Duration
	rate     float64
	fastEtcd bool
	// logOut receives the agent's logs (warnings and errors).
	logOut io.Writer
}

// nplRun is the network programming latency of the writes of one run.
type nplRun struct {
	// lat is, per write, the time from just before the etcd put to the
	// simulated VPP's acknowledgement of the last call it caused.
	lat []time.Duration
	// put is, per write, how long the etcd put took to return (the
	// write committed): the part of lat spent before the agent can know.
	put []time.Duration
	// late counts writes sent after their slot because the change before
	// was still being programmed.
	late int
	// acks counts the simulated VPP's acknowledged writes during the
	// measured changes.
	acks int64
	// startup is the time from agent.New to ready: W(n) listed, resynced
	// and programmed; startupWrites the simulated VPP's writes of the
	// startup.
	startup       time.Duration
	startupWrites int
}

// ackCounter counts the simulated VPP's acknowledgements (sim.Options.OnAck).
type ackCounter struct{ n atomic.Int64 }

func (a *ackCounter) onAck(string, time.Time) { a.n.Add(1) }

// measureNPL loads W(n) into a fresh embedded etcd, starts the real agent
// for node 1 against it and a simulated VPP, waits until W(n) is
// programmed, then writes churn changes of EndpointSlices to etcd at the
// given rate and, for each, waits until the agent has applied it.
//
// The latency of a write is LastAck − t0: t0 is read just before the put;
// LastAck is the time the simulated VPP answered its last state-changing
// call (the time it also passes to OnAck). It is read once the controller
// has applied a batch at or after the put's revision and the simulated
// VPP translates every frontend of the changed service to exactly the new
// endpoints. Between two writes the agent has nothing else to do, so that
// last call is the last call of the change.
func measureNPL(ctx context.Context, env *core.Env, p nplParams) (*nplRun, error) {
	m, cli, w, closeEtcd, err := core.EtcdHolding(ctx, p.fastEtcd, p.n)
	if err != nil {
		return nil, fmt.Errorf("npl: %w", err)
	}
	defer closeEtcd()

	cfg, _, removeDir, err := env.AgentConfig(m.Endpoint(), "npl")
	if err != nil {
		return nil, err
	}
	defer removeDir()
	acks := &ackCounter{}
	v := sim.New(sim.Options{OnAck: acks.onAck})
	out := &nplRun{}
	t0 := time.Now()
	a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: agent.Simulated(v), LogOutput: p.logOut})
	if err != nil {
		return nil, fmt.Errorf("npl: agent: %w", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	if a.NodeID() != workload.ThisNode {
		return nil, fmt.Errorf("npl: the agent claimed node ID %d, W(N) is seen from node %d", a.NodeID(), workload.ThisNode)
	}
	if err := core.WaitUntil(ctx, 5*time.Minute, func() bool { return a.Ready() }); err != nil {
		return nil, fmt.Errorf("npl: agent not ready: %w", err)
	}
	out.startup = time.Since(t0)
	if err := core.Quiesce(ctx, a, v); err != nil {
		return nil, err
	}
	out.startupWrites = v.Writes()
	fronts, err := frontends(v, env, w)
	if err != nil {
		return nil, err
	}

	evs, err := core.AllEvents(w)
	if err != nil {
		return nil, err
	}
	seq := append(evs.Churn[:len(evs.Churn):len(evs.Churn)], evs.Undo...)
	svcOf := func(i int) int {
		i %= len(seq)
		if i < len(evs.Churn) {
			return evs.ChurnSvc[i]
		}
		return evs.ChurnSvc[len(seq)-1-i]
	}
	interval := time.Duration(float64(time.Second) / p.rate)
	writes := max(int(p.duration.Seconds()*p.rate), 1)
	out.lat = make([]time.Duration, 0, writes)
	ack0 := acks.n.Load()
	start := time.Now()
	for k := range writes {
		if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
			if err := core.Sleep(ctx, d); err != nil {
				return nil, err
			}
		} else if k > 0 && -d > time.Millisecond {
			out.late++
		}
		ev := seq[k%len(seq)]
		lat, put, err := programOne(ctx, cli, a, v, ev.New.(*kubestate.EndpointSlice), fronts[svcOf(k)])
		if err != nil {
			return nil, fmt.Errorf("npl: write %d (%s): %w", k, ev.Key, err)
		}
		out.lat, out.put = append(out.lat, lat), append(out.put, put)
	}
	out.acks = acks.n.Load() - ack0
	return out, nil
}

// frontends finds, in the simulated VPP, the mapping keys (VPP's) of every
// service of W(N): the frontends a change of its endpoints must reach.
func frontends(v *sim.VPP, env *core.Env, w *workload.Workload) ([][]sim.MappingKey, error) {
	byTag := map[string][]sim.MappingKey{}
	for k, m := range v.Snapshot().Mappings {
		byTag[m.Tag] = append(byTag[m.Tag], k)
	}
	prefix := env.RendererConfig().TagPrefix
	out := make([][]sim.MappingKey, w.N)
	for i, s := range w.Services {
		out[i] = byTag[nat44.ServiceTag(prefix, sr.ServiceID{Namespace: s.Namespace, Name: s.Name})]
		if len(out[i]) == 0 {
			return nil, fmt.Errorf("npl: service %s/%s was not programmed at startup", s.Namespace, s.Name)
		}
	}
	return out, nil
}

// client is the source of the packets the oracle is asked about: outside
// the cluster, so no twice-NAT applies.
func client() netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, 7}) }

// programOne writes one slice and returns its network programming latency
// and how long the put took.
func programOne(ctx context.Context, cli *clientv3.Client, a *agent.Agent, v *sim.VPP, s *kubestate.EndpointSlice, fronts []sim.MappingKey) (lat, put time.Duration, err error) {
	val, err := kubestate.Encode(s)
	if err != nil {
		return 0, 0, err
	}
	want := make([]netip.Addr, 0, len(s.Endpoints))
	for _, e := range s.Endpoints {
		ip, err := netip.ParseAddr(e.Address(0))
		if err != nil {
			return 0, 0, err
		}
		want = append(want, ip)
	}
	slices.SortFunc(want, netip.Addr.Compare)
	ctl := a.Controller()
	batches := ctl.Status().Batches
	t0 := time.Now()
	resp, err := cli.Put(ctx, s.Key().String(), string(val))
	put = time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("etcd put: %w", err)
	}
	rev := resp.Header.Revision
	err = core.WaitUntil(ctx, 10*time.Second, func() bool {
		st := ctl.Status()
		return st.Batches > batches && st.Revision >= rev && translatesTo(v, fronts, want)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("not programmed: %w", err)
	}
	last := v.LastAck()
	if !last.After(t0) {
		return 0, 0, errors.New("programmed without a call to VPP")
	}
	return last.Sub(t0), put, nil
}

// translatesTo tells whether every frontend translates to exactly want.
func translatesTo(v *sim.VPP, fronts []sim.MappingKey, want []netip.Addr) bool {
	for _, f := range fronts {
		res := v.Translate(sim.Packet{Src: client(), Dst: f.IP, Proto: f.Proto, DstPort: f.Port, Ingress: core.MainNIC})
		if res.Verdict != sim.Translated || len(res.Backends) != len(want) {
			return false
		}
		for i, b := range res.Backends {
			if b.IP != want[i] {
				return false
			}
		}
	}
	return true
}

// RunNPL measures the network programming latency.
func RunNPL(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, res *Results) error {
	o.Log.Info("network programming latency", "n", o.NPLSize, "duration", o.NPLDuration, "rate", o.NPLRate)
	r, err := measureNPL(ctx, env, nplParams{n: o.NPLSize, duration: o.NPLDuration, rate: o.NPLRate, fastEtcd: o.FastEtcd, logOut: o.AgentLog})
	if err != nil {
		return err
	}
	res.NPL = &NPLResult{
		P50MS: core.MS(core.Percentile(r.lat, 0.50)), P99MS: core.MS(core.Percentile(r.lat, 0.99)), MaxMS: core.MS(core.Percentile(r.lat, 1)),
		PutP50MS: core.MS(core.Percentile(r.put, 0.50)), PutP99MS: core.MS(core.Percentile(r.put, 0.99)),
		N: o.NPLSize, Writes: len(r.lat), Late: r.late, Rate: o.NPLRate,
		CallsPerWrite: float64(r.acks) / float64(max(len(r.lat), 1)),
		StartupS:      r.startup.Seconds(), StartupWrites: r.startupWrites,
	}
	return nil
}

// NPLRows are the npl figure's rows.
func NPLRows(_ *core.Results, r *Results, t *core.Rows) {
	l := r.NPL
	if l == nil {
		return
	}
	t.AddSingle(fmt.Sprintf("network programming latency p50 / p99 / max (ms; N=%d, %g/s, %d writes)", l.N, l.Rate, l.Writes),
		fmt.Sprintf("%.2f / %.2f / %.2f", l.P50MS, l.P99MS, l.MaxMS), "p99 ≤ 50",
		core.Verdict(l.N == core.TargetSize, func() bool { return l.P99MS <= targetNPLP99MS }))
	t.AddSingle("… of which the etcd put, p50 / p99 (ms)", fmt.Sprintf("%.2f / %.2f", l.PutP50MS, l.PutP99MS), "", "")
	t.AddSingle("… writes sent late (the change before still in flight)", strconv.Itoa(l.Late), "", "")
	t.AddSingle("… simulated VPP writes per change, in the agent", fmt.Sprintf("%.3f", l.CallsPerWrite), "", "")
	t.AddSingle(fmt.Sprintf("agent start to ready with W(%d) programmed (s; VPP writes)", l.N), fmt.Sprintf("%.1f (%d)", l.StartupS, l.StartupWrites), "", "")
}

// targetNPLP99MS is BENCH.md's target for the latency's p99 at N = 10000.
const targetNPLP99MS = 50
