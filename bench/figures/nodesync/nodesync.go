package nodesync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
)

// nodeSyncRun is K agents claiming node IDs at once, over several rounds.
type nodeSyncRun struct {
	joiners, rounds int
	// distinct is set when, in every round, every joiner got an ID, all
	// IDs differed and each was in 1..K.
	distinct bool
	// took is every joiner's time to its ID, over all rounds.
	took []time.Duration
}

// measureNodeSync starts one embedded etcd and, in each round, lets k
// agents (each with its own etcd client) claim an ID at once, from an
// empty NodeSync state. maxID is the address plan's capacity, as agents
// pass it.
func measureNodeSync(ctx context.Context, k, rounds int, maxID uint32, fastEtcd bool) (*nodeSyncRun, error) {
	m, cli, closeEtcd, err := core.EmbeddedEtcd(ctx, fastEtcd)
	if err != nil {
		return nil, fmt.Errorf("nodesync: %w", err)
	}
	defer closeEtcd()
	clis := make([]*clientv3.Client, k)
	defer func() {
		for _, c := range clis {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i := range clis {
		if clis[i], err = core.EtcdClient(ctx, m); err != nil {
			return nil, fmt.Errorf("nodesync: %w", err)
		}
	}
	out := &nodeSyncRun{joiners: k, rounds: rounds, distinct: true}
	for range rounds {
		if _, err := cli.Delete(ctx, kubestate.Prefix+"nodesync/", clientv3.WithPrefix()); err != nil {
			return nil, fmt.Errorf("nodesync: clearing: %w", err)
		}
		ids, took, err := claimRace(ctx, clis, maxID)
		if err != nil {
			return nil, err
		}
		out.took = append(out.took, took...)
		seen := map[uint32]bool{}
		for _, id := range ids {
			if id < 1 || id > uint32(k) || seen[id] {
				out.distinct = false
			}
			seen[id] = true
		}
		if len(seen) != k {
			out.distinct = false
		}
	}
	return out, nil
}

// claimRace starts one Claim per client at the same moment.
func claimRace(ctx context.Context, clis []*clientv3.Client, maxID uint32) ([]uint32, []time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var (
		wg    sync.WaitGroup
		ids   = make([]uint32, len(clis))
		took  = make([]time.Duration, len(clis))
		errs  = make([]error, len(clis))
		start = make(chan struct{})
	)
	for i, c := range clis {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			ids[i], errs[i] = noderegistry.Claim(ctx, noderegistry.Params{Client: c, Name: fmt.Sprintf("node-%03d", i+1), MaxID: maxID})
			took[i] = time.Since(t0)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("nodesync: %w", err)
	}
	return ids, took, nil
}

// Run measures Options.Joiners agents claiming IDs within the
// address plan's bound.
func Run(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, into *Results) error {
	return nodeSyncFigure(ctx, o, o.Joiners, nodepipeline.IPAMConfig(env.Config).MaxNodeID(), &into.NodeSync)
}

// RunMany measures Options.ManyJoiners agents claiming IDs without
// the address plan's bound: W(N)'s plan fits 254 nodes.
func RunMany(ctx context.Context, _ *core.Env, o core.Options, _ *core.Results, into *Results) error {
	return nodeSyncFigure(ctx, o, o.ManyJoiners, 0, &into.Many)
}

// nodeSyncFigure measures k joiners Options.Runs rounds into out.
func nodeSyncFigure(ctx context.Context, o core.Options, k int, maxID uint32, out **Result) error {
	o.Log.Info("nodesync", "joiners", k, "rounds", o.Runs)
	ns, err := measureNodeSync(ctx, k, o.Runs, maxID, o.FastEtcd)
	if err != nil {
		return err
	}
	*out = &Result{
		Joiners: ns.joiners, Distinct: ns.distinct, Rounds: ns.rounds,
		P50MS: core.MS(core.Percentile(ns.took, 0.50)), P99MS: core.MS(core.Percentile(ns.took, 0.99)), MaxMS: core.MS(core.Percentile(ns.took, 1)),
	}
	return nil
}

// Rows are the nodesync figure's rows.
func Rows(_ *core.Results, r *Results, t *core.Rows) {
	if ns := r.NodeSync; ns != nil {
		t.AddSingle(fmt.Sprintf("NodeSync, %d joiners at once: distinct IDs in 1…K", ns.Joiners), strconv.FormatBool(ns.Distinct), "all distinct", core.Verdict(true, func() bool { return ns.Distinct }))
		t.AddSingle(fmt.Sprintf("NodeSync time to an ID p50 / p99 / max (ms, %d rounds)", ns.Rounds),
			fmt.Sprintf("%.0f / %.0f / %.0f", ns.P50MS, ns.P99MS, ns.MaxMS), "p99 ≤ 1000", core.Verdict(true, func() bool { return ns.P99MS <= targetNodeSyncP99 }))
	}
}

// ManyRows are the nodesync-many figure's rows.
func ManyRows(_ *core.Results, r *Results, t *core.Rows) {
	if ns := r.Many; ns != nil {
		t.AddSingle(fmt.Sprintf("NodeSync, %d joiners at once: distinct IDs in 1…K", ns.Joiners), strconv.FormatBool(ns.Distinct), "all distinct", core.Verdict(true, func() bool { return ns.Distinct }))
		t.AddSingle(fmt.Sprintf("… %d joiners: time to an ID p50 / p99 / max (ms, %d rounds)", ns.Joiners, ns.Rounds),
			fmt.Sprintf("%.0f / %.0f / %.0f", ns.P50MS, ns.P99MS, ns.MaxMS), "", "")
	}
}
