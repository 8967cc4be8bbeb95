package harness

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"

	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// The cnat variant of the pipeline figures: the same processor and W(N)
// feeding the cnat renderer instead of NAT44, over the counting VPP (whose
// SNAT addresses read unset and whose dump is empty, as a VPP just started).

var _ cnat.VPP = (*CountingVPP)(nil)

func (c *CountingVPP) UpdateTranslation(context.Context, *cnat.Translation) (uint32, error) {
	c.Calls++
	return 0, nil
}

func (c *CountingVPP) DeleteTranslation(context.Context, uint32) error { c.Calls++; return nil }

func (c *CountingVPP) DumpTranslations(context.Context) ([]cnat.Dumped, error) {
	c.Dumps++
	return nil, nil
}

func (c *CountingVPP) SNATAddresses(context.Context) (netip.Addr, netip.Addr, error) {
	c.Dumps++
	return netip.IPv4Unspecified(), netip.IPv6Unspecified(), nil
}

func (c *CountingVPP) SetSNATAddresses(context.Context, netip.Addr, netip.Addr) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) SetSNATPolicy(context.Context, cnat.SNATPolicy) error { c.Calls++; return nil }

func (c *CountingVPP) AddDelExcludePrefix(context.Context, netip.Prefix, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) AddDelSNATInterface(context.Context, string, cnat.SNATTable, bool) (uint32, error) {
	c.Calls++
	return 1, nil
}

func (c *CountingVPP) EnableDisableFeature(context.Context, string, cnat.Feature, bool) (uint32, error) {
	c.Calls++
	return 1, nil
}

func (c *CountingVPP) AddDelFIBRoute(context.Context, cnat.Route, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) DumpFIBRoutes(context.Context, []uint32, bool) ([]cnat.Route, error) {
	c.Dumps++
	return nil, nil
}

// cnatRenderer adapts the cnat renderer.
type cnatRenderer struct{ *cnat.Renderer }

func (r cnatRenderer) refused() (int, string) { return firstOf(r.Failures()) }

// newCNATPipeline is node 1's pipeline with the cnat renderer.
func (e *Env) NewCNATPipeline(vpp cnat.VPP, ifaces service.InterfaceLookup) (*Pipeline, error) {
	return e.build(contivconf.RendererCNAT, nodepipeline.Ports{CNAT: vpp}, ifaces)
}

// cnatFigures runs the pipeline figures with the cnat renderer o.Runs
// times at every size and keeps the medians in res.CNAT. Its
// vpp_calls_per_change are the counted operations per change of the
// in-process pipeline (no binary API is involved).
func cnatFigures(ctx context.Context, env *Env, sizes []int, o Options, res *Results) error {
	runs := make(map[int][]*sizeRun, len(sizes))
	mk := func(v *CountingVPP, t TagTable) (*Pipeline, error) { return env.NewCNATPipeline(v, t) }
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
	res.CNAT = map[string]*SizeResult{}
	for _, n := range sizes {
		out := &SizeResult{}
		summarize(runs[n], out)
		out.VPPCallsPerChange = out.ChangeOps
		res.CNAT[strconv.Itoa(n)] = out
	}
	o.Log.Info("cnat: W(N) programmed over the socket, synchronous and pipelined", "n", o.ProgramSize, "serviceTime", ServiceTime)
	r, err := MeasureProgram(ctx, env, o.ProgramSize, min(o.Runs, 3), true, o.Log)
	if err != nil {
		return fmt.Errorf("cnat: %w", err)
	}
	res.CNATProgram = &VPPProgramResult{
		Calls: r.Calls, ServiceUS: US(ServiceTime), SyncMS: r.SyncMS, PipelinedMS: r.PipelinedMS, N: o.ProgramSize, Runs: min(o.Runs, 3),
	}
	return nil
}

// runCNAT measures the cnat figures (cnatFigures).
func runCNAT(ctx context.Context, env *Env, o Options, res *Results) error {
	return cnatFigures(ctx, env, res.sizes, o, res)
}

// cnatRows are the cnat figure's rows: its programming over the socket
// (its per-N figures are in the JSON only).
func cnatRows(r *Results, t *Rows) { ProgramRows(t, "cnat: ", r.CNATProgram) }
