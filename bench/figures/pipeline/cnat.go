package pipeline

import (
	"context"
	"fmt"
	"strconv"

	"contiv.dev/vpp/bench/core"
)

// The cnat variant of the pipeline figures: the same processor and W(N)
// feeding the cnat renderer instead of NAT44, over the counting VPP (whose
// SNAT addresses read unset and whose dump is empty, as a VPP just started).

// cnatFigures runs the pipeline figures with the cnat renderer o.Runs
// times at every size and keeps the medians in into.CNAT. Its
// vpp_calls_per_change are the counted operations per change of the
// in-process pipeline (no binary API is involved).
func cnatFigures(ctx context.Context, env *core.Env, sizes []int, o core.Options, into *Results) error {
	runs := make(map[int][]*sizeRun, len(sizes))
	mk := func(v *core.CountingVPP, t core.TagTable) (*core.Pipeline, error) { return env.NewCNATPipeline(v, t) }
	for run := range o.Runs {
		for _, n := range sizes {
			r, err := runSizeOf(ctx, env, n, mk)
			if err != nil {
				return fmt.Errorf("cnat: %w", err)
			}
			o.Log.Info("cnat pipeline run", "n", n, "run", run+1, "resyncCPU", r.resync.CPU, "changeCPU", r.changeCPU, "joinCPU", r.joinCPU)
			runs[n] = append(runs[n], r)
		}
	}
	into.CNAT = map[string]*SizeResult{}
	for _, n := range sizes {
		out := &SizeResult{}
		summarize(runs[n], out)
		out.VPPCallsPerChange = out.ChangeOps
		into.CNAT[strconv.Itoa(n)] = out
	}
	o.Log.Info("cnat: W(N) programmed over the socket, synchronous and pipelined", "n", o.ProgramSize, "serviceTime", core.ServiceTime)
	r, err := core.MeasureProgram(ctx, env, o.ProgramSize, min(o.Runs, 3), true, o.Log)
	if err != nil {
		return fmt.Errorf("cnat: %w", err)
	}
	into.CNATProgram = &core.VPPProgramResult{
		Calls: r.Calls, ServiceUS: core.US(core.ServiceTime), SyncMS: r.SyncMS, PipelinedMS: r.PipelinedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
	}
	return nil
}

// RunCNAT measures the cnat figures (cnatFigures).
func RunCNAT(ctx context.Context, env *core.Env, o core.Options, res *core.Results, into *Results) error {
	return cnatFigures(ctx, env, res.Sizes, o, into)
}

// CNATRows are the cnat figure's rows: its programming over the socket
// (its per-N figures are in the JSON only).
func CNATRows(_ *core.Results, from *Results, t *core.Rows) {
	core.ProgramRows(t, "cnat: ", from.CNATProgram)
}
